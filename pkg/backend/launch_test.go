package backend

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"tgc/pkg/ir"
)

// launchTestKernels count how often each item runs. steal's piece that
// starts at vars[0] first waits (up to 5 s) until every other item of
// [0, vars[1]) has run, and says in counts[1] when it gave up.
const launchTestKernels = `#include <stdint.h>
#include <time.h>
void hit(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  int32_t *h = (int32_t *)bufs[0];
  for (int64_t i = start; i < end; i++) __atomic_fetch_add(&h[i], 1, __ATOMIC_RELAXED);
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
void steal(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  int32_t *h = (int32_t *)bufs[0];
  int64_t *counts = (int64_t *)bufs[1];
  if (start == vars[0]) {
    double deadline = now() + 5;
    while (__atomic_load_n(&counts[0], __ATOMIC_ACQUIRE) < vars[1] - 1) {
      if (now() > deadline) { counts[1] = 1; break; }
    }
  }
  for (int64_t i = start; i < end; i++) {
    __atomic_fetch_add(&h[i], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&counts[0], 1, __ATOMIC_RELEASE);
  }
}
/* mix: out[i] from in[n-1-i], the element another core's range wrote in
 * the launch before, through vars[1] rounds of an LCG (slow enough that a
 * launch not waited for is still running when the next one reads) */
void mix(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  uint32_t *out = (uint32_t *)bufs[0];
  const uint32_t *in = (const uint32_t *)bufs[1];
  int64_t n = vars[0];
  for (int64_t i = start; i < end; i++) {
    uint32_t v = in[n - 1 - i];
    for (int64_t k = 0; k < vars[1]; k++) v = v * 1103515245u + 12345u;
    out[i] = v + (uint32_t)i;
  }
}
`

func launchTestDevice(t *testing.T) (*cpuDevice, *library) {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		t.Skip("one core: launches run on the caller")
	}
	d := cpuOrSkip(t)
	l, err := d.loadLauncher()
	if err != nil {
		t.Fatal(err)
	}
	d.launch = l
	lib, err := d.build(launchTestKernels)
	if err != nil {
		t.Fatal(err)
	}
	return d, lib
}

func symbol(t *testing.T, lib *library, name string) uintptr {
	t.Helper()
	fn, err := purego.Dlsym(lib.handle, name)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// launchPinned launches kernel on the buffers (the int32 slices, then
// counts when not nil) with vars, the memory pinned as cpuProgram.Run pins
// it (a slice on a goroutine's stack may move).
func launchPinned(d *cpuDevice, kernel uintptr, ints [][]int32, counts, vars []int64, n int64) {
	launchPinnedCost(d, kernel, ints, counts, vars, n, 0)
}

// launchPinnedCost is launchPinned for a kernel of flops (a long one runs
// in more pieces, piecesFor).
func launchPinnedCost(d *cpuDevice, kernel uintptr, ints [][]int32, counts, vars []int64, n, flops int64) {
	var pin runtime.Pinner
	defer pin.Unpin()
	bufs := make([]uintptr, 0, len(ints)+1)
	for _, b := range ints {
		pin.Pin(&b[0])
		bufs = append(bufs, uintptr(unsafe.Pointer(&b[0])))
	}
	if counts != nil {
		pin.Pin(&counts[0])
		bufs = append(bufs, uintptr(unsafe.Pointer(&counts[0])))
	}
	vars = append(vars, 0)
	pin.Pin(&bufs[0])
	pin.Pin(&vars[0])
	d.launch.run(kernel, uintptr(unsafe.Pointer(&bufs[0])), uintptr(unsafe.Pointer(&vars[0])), n, kernelSize{flops: flops})
}

// TestLaunchConcurrent: every launch covers [0, n) exactly once, whether
// the workers are polling, asleep (a pause longer than spinFor) or busy with
// another goroutine's launch (which then runs on plain goroutines).
func TestLaunchConcurrent(t *testing.T) {
	d, lib := launchTestDevice(t)
	hit := symbol(t, lib, "hit")
	check := func(n int64) {
		// a short kernel (8 pieces a range) and a long one (32)
		for _, flops := range []int64{0, 1 << 40} {
			hits := make([]int32, n)
			launchPinnedCost(d, hit, [][]int32{hits}, nil, nil, n, flops)
			for i, c := range hits {
				if c != 1 {
					t.Errorf("n=%d, %d flops: element %d ran %d times", n, flops, i, c)
					return
				}
			}
		}
	}
	for _, n := range []int64{1, 2, 3, 7, 96, 1000, 100000} {
		check(n) // polling workers
	}
	for range 3 {
		time.Sleep(2 * spinFor) // asleep: the launch must wake them
		check(97)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				check(int64(2 + (g*7+i)%50))
			}
		}()
	}
	wg.Wait()
}

// TestPiecesFor: short kernels (a decode step's matrix-vector products)
// keep TG_PIECES pieces a range, a long one (a ResNet-50 conv's 0.8 GFLOP
// on 2 cores) gets pieces of ~16 MFLOP, a memory-bound one (softmax over
// 4096 rows of 4096: 150 MFLOP, 128 MiB) pieces of ~2 MiB, up to
// maxPiecesPerRange.
func TestPiecesFor(t *testing.T) {
	for _, c := range []struct {
		size  kernelSize
		cores int
		want  int64
	}{
		{kernelSize{}, 2, piecesPerRange},
		{kernelSize{2 * 768 * 768, 4 * 768 * 769}, 2, piecesPerRange},
		{kernelSize{822 << 20, 4 << 20}, 2, 25},
		{kernelSize{822 << 20, 4 << 20}, 64, piecesPerRange},
		{kernelSize{150 << 20, 24 << 20}, 2, piecesPerRange},
		{kernelSize{150 << 20, 80 << 20}, 2, 20},
		{kernelSize{150 << 20, 128 << 20}, 2, maxPiecesPerRange},
		{kernelSize{1 << 40, 0}, 2, maxPiecesPerRange},
	} {
		if got := piecesFor(c.size, c.cores); got != c.want {
			t.Errorf("piecesFor(%+v, %d) = %d, want %d", c.size, c.cores, got, c.want)
		}
	}
}

// TestLaunchSteals: a participant held up inside one piece of its range
// does not hold back the rest of it: the others take the pieces it has not
// claimed. The second core's first piece blocks until every other item
// has run, which without stealing would never happen (it would wait for
// itself); the launch must still cover [0, n) exactly once.
func TestLaunchSteals(t *testing.T) {
	d, lib := launchTestDevice(t)
	steal := symbol(t, lib, "steal")
	cores := int64(min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
	n := cores * piecesPerRange
	second := n / cores // the first item of the second range (a piece of one item)
	hits := make([]int32, n)
	counts := make([]int64, 2)
	done := make(chan struct{})
	go func() {
		launchPinned(d, steal, [][]int32{hits}, counts, []int64{second, n}, n)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the launch did not finish")
	}
	if counts[1] != 0 {
		t.Error("the rest of the held-up range did not run while it was held up")
	}
	if counts[0] != n {
		t.Fatalf("%d of %d items ran", counts[0], n)
	}
	for i, c := range hits {
		if c != 1 {
			t.Fatalf("element %d ran %d times", i, c)
		}
	}
}

// TestParallelLaunchIsOneCall: a launch split across cores is one call from
// Go into C (the launcher's); the pieces run on threads the Go scheduler
// does not see. With goroutine workers each piece was a cgo call of its own
// on two scheduler threads, and a long one had its P handed to a fresh
// thread, whose wake-ups preempted the kernels on a 2-core machine.
func TestParallelLaunchIsOneCall(t *testing.T) {
	d, lib := launchTestDevice(t)
	hit := symbol(t, lib, "hit")
	const n = 4096
	hits := make([]int32, n)
	launchPinned(d, hit, [][]int32{hits}, nil, nil, n) // workers started
	for range 5 {
		before := runtime.NumCgoCall()
		launchPinned(d, hit, [][]int32{hits}, nil, nil, n)
		if calls := runtime.NumCgoCall() - before; calls != 1 {
			t.Errorf("a launch in %d pieces made %d calls into C, want 1", 2*piecesPerRange, calls)
		}
	}
	for i, c := range hits {
		if c != 6 {
			t.Fatalf("element %d ran %d times, want 6", i, c)
		}
	}
}

// TestRunBatchWaitsForEachLaunch: a batch runs its launches in order, each
// after the one before has finished on every core: a chain of launches
// each reading what the other core's range of the one before wrote (a
// missing or early barrier reads stale values), split and on the caller
// alone, with the threads polling and with them always asleep (the
// futex hand-offs both ways), against the same chain computed in Go.
func TestRunBatchWaitsForEachLaunch(t *testing.T) {
	d, lib := launchTestDevice(t)
	mix := symbol(t, lib, "mix")
	for _, sleep := range []bool{false, true} {
		l := *d.launch
		if sleep {
			l.spin, l.wait = 0, 0
		}
		for _, n := range []int64{1, 2, 7, 1000, 20000} {
			const rounds = 40
			bufs := [2]*hostBuffer{{data: make([]byte, 4*n)}, {data: make([]byte, 4*n)}}
			want := [2][]uint32{make([]uint32, n), make([]uint32, n)}
			for i := range n {
				v := uint32(i*2654435761 + 7)
				binary.LittleEndian.PutUint32(bufs[0].data[4*i:], v)
				want[0][i] = v
			}
			var ls []Launch
			for k := range 24 {
				src, dst := k%2, 1-k%2
				p := &cpuProgram{name: "mix", fn: mix, lib: lib, small: k%5 == 3, launch: &l, outer: &ir.Axis{Size: n}}
				ls = append(ls, Launch{Prog: p, Bufs: []Buffer{bufs[dst], bufs[src]}, Vars: []int64{n, rounds}})
				for i := range n {
					v := want[src][n-1-i]
					for range rounds {
						v = v*1103515245 + 12345
					}
					want[dst][i] = v + uint32(i)
				}
			}
			times := make([]time.Duration, len(ls))
			calls := runtime.NumCgoCall()
			if err := d.RunBatch(ls, times); err != nil {
				t.Fatal(err)
			}
			if c := runtime.NumCgoCall() - calls; c != 1 {
				t.Errorf("sleep=%v n=%d: a batch of %d launches made %d calls into C, want 1", sleep, n, len(ls), c)
			}
			for i := range n {
				if got := binary.LittleEndian.Uint32(bufs[0].data[4*i:]); got != want[0][i] {
					t.Fatalf("sleep=%v n=%d: element %d is %d, want %d", sleep, n, i, got, want[0][i])
				}
			}
			var total time.Duration
			for _, dt := range times {
				total += dt
			}
			if total <= 0 {
				t.Errorf("sleep=%v n=%d: the launches' times add up to %v", sleep, n, total)
			}
		}
	}
}

// TestLaunchStats: with TGC_LAUNCHSTATS set the launcher is built with its
// timeline and a batch appends one line per launch (index, items, pieces
// asked for, … , the launch's time) after a "batch N" line; the launches'
// results are unchanged.
func TestLaunchStats(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		t.Skip("one core: launches run on the caller")
	}
	path := filepath.Join(t.TempDir(), "stats")
	t.Setenv("TGC_LAUNCHSTATS", path)
	d, lib := launchTestDevice(t)
	hit := symbol(t, lib, "hit")
	const n = 1000
	buf := &hostBuffer{data: make([]byte, 4*n)}
	var ls []Launch
	for k := range 3 {
		p := &cpuProgram{name: "hit", fn: hit, lib: lib, small: k == 1, launch: d.launch, outer: &ir.Axis{Size: n}}
		ls = append(ls, Launch{Prog: p, Bufs: []Buffer{buf}})
	}
	times := make([]time.Duration, len(ls))
	if err := d.RunBatch(ls, times); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if c := binary.LittleEndian.Uint32(buf.data[4*i:]); c != 3 {
			t.Fatalf("element %d ran %d times, want 3", i, c)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 || lines[0] != "batch 3" {
		t.Fatalf("stats file:\n%s\nwant a batch line and 3 launch lines", data)
	}
	for k, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 15 || f[0] != strconv.Itoa(k) || f[1] != strconv.Itoa(n) {
			t.Errorf("launch %d: line %q", k, l)
			continue
		}
		split := k != 1
		if pieces, _ := strconv.Atoi(f[11]); split && pieces == 0 && f[12] == "0" {
			t.Errorf("launch %d, split: no pieces counted: %q", k, l)
		}
		if ns, _ := strconv.ParseInt(f[14], 10, 64); ns != times[k].Nanoseconds() {
			t.Errorf("launch %d: time %d ns in the file, %v in the batch's times", k, ns, times[k])
		}
	}
}
