package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvPageout is Linux's MADV_PAGEOUT (5.4 and later): reclaim the range's
// pages now; clean file pages are dropped and read back on next use.
const madvPageout = 21

// ReleaseCode gives the system back the pages of the executable's
// read-only mappings (its code and constant data) that the process has
// touched so far, and returns their size. A long run calls it once its
// start-up is done: a Go binary maps ~14 MB of itself while it parses
// flags, loads a model and compiles kernels (the kernel maps a fault's
// neighbours too), code a generation's steps do not run again; what they
// do run comes back on first use. Best effort: an older kernel refuses
// the advice and nothing changes.
func ReleaseCode() (int64, error) { return releaseCode(false) }

// ReleaseCodeForGood is ReleaseCode for a process whose start-up is over
// for good (a generation's replayed steps): what comes back is read a
// page at a time (MADV_RANDOM: no read-around of the pages beside a
// fault, which the kernel would map with it): a Q4_K 110M decode's
// executable pages 7.5 → 4.0 MB at its end, its speed the same. Not
// between a prompt's compiles: its chunks then read their code back from
// the disk a page at a time (prefill 4–7 % slower).
func ReleaseCodeForGood() (int64, error) { return releaseCode(true) }

func releaseCode(random bool) (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[5] != exe || strings.Contains(fs[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		a, errA := strconv.ParseUint(lo, 16, 64)
		b, errB := strconv.ParseUint(hi, 16, 64)
		if !ok || errA != nil || errB != nil || b <= a {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(a), uintptr(b-a), madvPageout); e != 0 {
			return n, e
		}
		if random {
			_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, uintptr(a), uintptr(b-a), syscall.MADV_RANDOM)
		}
		n += int64(b - a)
	}
	return n, sc.Err()
}
