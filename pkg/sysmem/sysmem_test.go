package sysmem

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestAvailable(t *testing.T) {
	n, ok := Available()
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		if ok {
			t.Errorf("no /proc/meminfo but Available says %d", n)
		}
		t.Skip("no /proc/meminfo")
	}
	total, _ := meminfo("MemTotal")
	if !ok || n == 0 || n > total {
		t.Errorf("Available = %d, %v; MemTotal %d", n, ok, total)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 3 << 30: "3.0 GiB", 4 << 40: "4.0 TiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestReleaseCode: the test binary's resident file pages (its code,
// RssFile) shrink when ReleaseCode gives them back.
func TestReleaseCode(t *testing.T) {
	before, ok := statusKB("RssFile")
	if !ok {
		t.Skip("no RssFile in /proc/self/status")
	}
	n, err := ReleaseCode()
	if err != nil {
		t.Skipf("the kernel refuses MADV_PAGEOUT: %v", err)
	}
	after, _ := statusKB("RssFile")
	if n <= 0 || after >= before {
		t.Errorf("ReleaseCode advised %d bytes; RssFile %d KB before, %d KB after", n, before, after)
	}
	t.Logf("RssFile %d -> %d KB (%d bytes advised)", before, after, n)
}

// TestReleaseCodeForGood: the executable's read-only mappings are advised
// for random reads by ReleaseCodeForGood (smaps' "rr"), so that the code
// the process still runs comes back a page at a time; ReleaseCode, which
// runs between compiles, leaves them as they were.
func TestReleaseCodeForGood(t *testing.T) {
	if _, err := ReleaseCode(); err != nil {
		t.Skipf("the kernel refuses MADV_PAGEOUT: %v", err)
	}
	if n, ok := randomReadMappings(t); !ok || n != 0 {
		t.Fatalf("after ReleaseCode, %d of the executable's read-only mappings are advised for random reads (smaps read: %v)", n, ok)
	}
	if _, err := ReleaseCodeForGood(); err != nil {
		t.Fatal(err)
	}
	if n, _ := randomReadMappings(t); n == 0 {
		t.Fatal("after ReleaseCodeForGood, none of the executable's read-only mappings is advised for random reads")
	}
}

// randomReadMappings counts the executable's read-only mappings whose
// smaps VmFlags hold "rr" (MADV_RANDOM).
func randomReadMappings(t *testing.T) (int, bool) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	n, inExe := 0, false
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			inExe = len(f) >= 6 && f[5] == exe && !strings.Contains(f[1], "w")
		case inExe && len(f) > 0 && f[0] == "VmFlags:":
			for _, fl := range f[1:] {
				if fl == "rr" {
					n++
				}
			}
		}
	}
	return n, true
}

// statusKB reads a "Name: N kB" line of /proc/self/status.
func statusKB(name string) (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}
