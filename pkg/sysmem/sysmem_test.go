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
