package backend

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"tgc/pkg/ir"
	"unsafe"
)

// hugeAdvised reads /proc/self/smaps for the mapping that holds mem's
// first byte and says whether it is advised for huge pages (VmFlags
// "hg"); ok false where smaps cannot be read. (Its Rss would be no
// measure: the system merges neighbouring mappings of the same flags.)
func hugeAdvised(t *testing.T, mem []byte) (huge, ok bool) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return false, false
	}
	defer f.Close()
	addr := uint64(uintptr(unsafe.Pointer(&mem[0])))
	in, found := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, isRange := strings.Cut(fields[0], "-"); isRange && !strings.HasSuffix(fields[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && l <= addr && addr < h
			found = found || in
			continue
		}
		if in && fields[0] == "VmFlags:" {
			return slices.Contains(fields[1:], "hg"), true
		}
	}
	if !found {
		t.Fatalf("no mapping holds %#x in /proc/self/smaps", addr)
	}
	return false, true
}

// residentPages counts mem's pages in memory (mincore).
func residentPages(t *testing.T, mem []byte) int {
	t.Helper()
	page := os.Getpagesize()
	vec := make([]byte, (len(mem)+page-1)/page)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestZeroedBuffersTakeWrittenPages: a zeroed buffer (a KV cache) takes
// memory only for the pages written, so it is not advised for huge pages
// (where the system has them free, one byte written would take 2 MiB); a
// plain buffer of the same size is (its first touch costs a fault per
// 2 MiB instead of per 4 KiB).
func TestZeroedBuffersTakeWrittenPages(t *testing.T) {
	var p mmapPool
	const size = 8 << 20
	zeroed, err := p.getZeroed(size)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := p.get(size)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release()
	defer p.put(zeroed)
	defer p.put(plain)
	for _, at := range []int{0, 3 << 20, 6<<20 + 5} { // three pages in three 2 MiB spans
		zeroed[at] = 1
	}
	huge, ok := hugeAdvised(t, zeroed)
	if !ok {
		t.Skip("no /proc/self/smaps")
	}
	if huge {
		t.Errorf("the zeroed buffer is advised for huge pages")
	}
	if n := residentPages(t, zeroed); n > 3 {
		t.Errorf("the zeroed buffer with 3 bytes written holds %d pages, want 3", n)
	}
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		return // a kernel without transparent huge pages takes no advice
	}
	if huge, _ := hugeAdvised(t, plain); !huge {
		t.Errorf("the plain %d MiB buffer is not advised for huge pages", size>>20)
	}
}

// TestOneShotScratchInSmallPages: a schedule's one-shot scratch
// (AllocScratch) of 16 MiB or more is not advised for huge pages, whose
// first touch costs a lazily backed guest more than the buffer's one use
// saves; a smaller one is, and so is a buffer uploaded from the host
// (Alloc) of any size from 2 MiB.
func TestOneShotScratchInSmallPages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("a kernel without transparent huge pages takes no advice")
	}
	d := &cpuDevice{}
	for _, tc := range []struct {
		name  string
		alloc func(ir.DType, int) (Buffer, error)
		bytes int
		huge  bool
	}{
		{"scratch of 16 MiB", d.AllocScratch, oneShotSmallPages, false},
		{"scratch of 8 MiB", d.AllocScratch, 8 << 20, true},
		{"upload of 16 MiB", d.Alloc, oneShotSmallPages, true},
	} {
		b, err := tc.alloc(ir.Float32, tc.bytes/4)
		if err != nil {
			t.Fatal(err)
		}
		mem := b.(*hostBuffer).data
		mem[0] = 1
		huge, ok := hugeAdvised(t, mem)
		if !ok {
			t.Skip("no /proc/self/smaps")
		}
		if huge != tc.huge {
			t.Errorf("%s: advised for huge pages %v, want %v", tc.name, huge, tc.huge)
		}
		b.Free()
	}
	d.ReleasePooled()
}

// TestParallelCopy: a copy split across cores copies every byte, at sizes
// that do not divide evenly.
func TestParallelCopy(t *testing.T) {
	for _, n := range []int{0, 5, parallelCopyMin - 1, parallelCopyMin + 3, 3*parallelCopyMin + 1} {
		src, dst := make([]byte, n), make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + i>>9)
		}
		parallelCopy(dst, src)
		for i := range src {
			if dst[i] != src[i] {
				t.Fatalf("%d bytes: byte %d is %d, want %d", n, i, dst[i], src[i])
			}
		}
	}
}
