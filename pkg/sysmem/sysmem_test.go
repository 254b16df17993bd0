package sysmem

import (
	"os"
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
