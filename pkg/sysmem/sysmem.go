// Package sysmem tells how much memory the process may still use, so that
// tgc refuses an allocation that cannot fit with an error naming what asked
// for it, instead of being killed by the operating system or the Go
// runtime; and gives back the pages of the executable's start-up code
// (ReleaseCode).
package sysmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Available is the memory the process may still use, in bytes: the
// system's available memory (MemAvailable in /proc/meminfo), or less when a
// cgroup (a container) limits the process. ok is false where it cannot be
// known (no /proc): then nothing is refused.
func Available() (bytes uint64, ok bool) {
	avail, ok := meminfo("MemAvailable")
	if !ok {
		return 0, false
	}
	if max, cur, ok := cgroup(); ok && max > cur && max-cur < avail {
		avail = max - cur
	} else if ok && max <= cur {
		avail = 0
	}
	return avail, true
}

// meminfo reads one field of /proc/meminfo (in kB there).
func meminfo(field string) (uint64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		return kb * 1024, err == nil
	}
	return 0, false
}

// cgroup is the cgroup v2 limit and usage of the process, if limited.
func cgroup() (max, cur uint64, ok bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		path, found := strings.CutPrefix(line, "0::")
		if !found {
			continue
		}
		dir := "/sys/fs/cgroup" + strings.TrimSpace(path)
		mb, err1 := os.ReadFile(dir + "/memory.max")
		cb, err2 := os.ReadFile(dir + "/memory.current")
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		m, c := strings.TrimSpace(string(mb)), strings.TrimSpace(string(cb))
		if m == "max" {
			return 0, 0, false
		}
		max, err1 = strconv.ParseUint(m, 10, 64)
		cur, err2 = strconv.ParseUint(c, 10, 64)
		return max, cur, err1 == nil && err2 == nil
	}
	return 0, 0, false
}

// Size formats a number of bytes: 512 B, 3.0 KiB, 1.5 GiB.
func Size(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		f /= unit
		if f < unit || u == "PiB" {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return ""
}
