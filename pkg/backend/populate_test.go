package backend

import (
	"encoding/binary"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"tgc/pkg/ir"
)

// resident says which pages of b are in memory (mincore).
func resident(t *testing.T, b []byte) []bool {
	t.Helper()
	page := syscall.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skipf("mincore: %v", e)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 != 0
	}
	return out
}

// TestPopulateAhead: a kernel that writes a row of a zeroed buffer at
// vars[0] (a KV cache's position) finds the row's pages populated before
// it runs (whole chunks of populateChunk), and no others: the buffer's
// memory still grows with the rows written. The rows hold what the kernel wrote and the rest reads as
// zeros. Row 0 by a launch, row 100 by a batch (a TinyJit replay's).
func TestPopulateAhead(t *testing.T) {
	d, err := OpenCPUWidth(hostVecWidth())
	if err != nil {
		t.Skip(err)
	}
	if thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil && strings.Contains(string(thp), "[always]") {
		t.Skip("transparent huge pages always: a first write maps 2 MiB, residency is not per page")
	}
	const rowLen, rows = 768, 1024 // 3 KiB rows, 3 MiB
	b := ir.NewBuilder()
	g := &ir.Axis{ID: 0, Size: rowLen, Kind: ir.AxisGlobal}
	pos := b.ParamIn(ir.ParamArg{Index: 0, Name: "start_pos", Min: 0, Max: rows - 1})
	k := &ir.Kernel{Name: "E_768", B: b, Global: []*ir.Axis{g}, NumParams: 1,
		Bufs:   []ir.BufParam{{DType: ir.Float32, Size: rowLen * rows, Output: true}, {DType: ir.Float32, Size: rowLen}},
		Stores: []*ir.Expr{b.Store(0, b.Add(b.Mul(pos, b.Int(rowLen)), b.Var(g)), b.Load(1, ir.Float32, b.Var(g), nil))}}
	progs, err := d.Compile([]*ir.Kernel{k})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := d.(ZeroAllocator).AllocZeroed(ir.Float32, rowLen*rows)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Free()
	x, _ := d.Alloc(ir.Float32, rowLen)
	defer x.Free()
	xs := make([]byte, 4*rowLen)
	for i := range rowLen {
		binary.LittleEndian.PutUint32(xs[4*i:], math.Float32bits(float32(i+1)))
	}
	if err := x.CopyIn(xs); err != nil {
		t.Fatal(err)
	}
	mem := cache.(*hostBuffer).data
	if r := resident(t, mem); countTrue(r) != 0 {
		t.Fatalf("%d pages resident before any write", countTrue(r))
	}
	page := syscall.Getpagesize()
	for _, p := range []int{0, 100} {
		var err error
		if p == 0 {
			_, err = progs[0].Run([]Buffer{cache, x}, []int64{int64(p)})
		} else { // a TinyJit replay's batch
			err = d.(Batcher).RunBatch([]Launch{{Prog: progs[0], Bufs: []Buffer{cache, x}, Vars: []int64{int64(p)}}}, make([]time.Duration, 1))
		}
		if err != nil {
			t.Fatal(err)
		}
		from := p * rowLen * 4 / populateChunk * populateChunk
		to := (p*rowLen*4 + rowLen*4 + populateChunk - 1) / populateChunk * populateChunk
		for i, in := range resident(t, mem) {
			want := i*page >= from && i*page < to || p == 100 && i*page < populateChunk
			if in != want {
				t.Errorf("after row %d: page %d (byte %d) resident %v, want %v", p, i, i*page, in, want)
				break
			}
		}
	}
	got := make([]byte, len(mem))
	if err := cache.CopyOut(got); err != nil {
		t.Fatal(err)
	}
	for i := range rowLen * rows {
		want := float32(0)
		if r := i / rowLen; r == 0 || r == 100 {
			want = float32(i%rowLen + 1)
		}
		if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); v != want {
			t.Fatalf("element %d = %v, want %v", i, v, want)
		}
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
