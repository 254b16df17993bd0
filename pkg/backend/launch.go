package backend

import (
	_ "embed"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// launchSource is the CPU device's launcher (see its comment): worker
// threads in C that run the pieces of a parallel launch, so that a launch
// is one call from Go and the Go scheduler never sees the kernels' threads.
// It is compiled like a kernel, through the cache (its own folder,
// $TGC_CACHE/runtime, not counted as a kernel), once per device.
//
//go:embed csrc/launch.c
var launchSource string

// spinFor is how long an idle worker polls for the next launch before it
// sleeps, and waitFor how long the caller polls for the last pieces of a
// launch before it sleeps. Kernels come back to back, and waking a
// sleeping thread is slow on a virtual machine (a 768×768 Q8_0 product
// whose two halves take 40 µs took 120 µs with always-sleeping workers and
// 58 µs with spinning ones), so both poll first; but only briefly: when
// other processes share the cores, a thread of tgc's that lost its core
// waits in the other core's run queue, and a poller there keeps it waiting
// (a decode step at load 11: median 33 ms with 300 µs and no sleeping
// caller, 24–26 ms with 20–50 µs each, steps alternated in one process).
const (
	spinFor = 50 * time.Microsecond
	waitFor = 50 * time.Microsecond
)

// piecesPerRange is TG_PIECES in launch.c: each participant's range is run
// in up to this many pieces, which the others take once done with theirs.
// A long kernel asks for more (piecesFor).
const piecesPerRange = 8

// pieceFLOPs, pieceBytes and maxPiecesPerRange size a long kernel's
// pieces: the participants of a launch end at most one piece apart (the
// last pieces run side by side), and a participant whose core is taken
// away holds the launch back by the piece it is in, so a launch of several
// milliseconds in 16 pieces (ResNet-50's convs at batch 8) lost ~1/32 of
// its time on average and a whole piece under load. Pieces of ~16 MFLOP
// (~80 µs of a core at its FMA peak) or, for a kernel that is more
// memory's than compute's (softmax over 64 MiB: 150 MFLOP in 2–3 ms), of
// ~2 MiB of its buffers (~80 µs of a core at ~25 GB/s) keep the claims (an
// atomic on a shared line each, ~0.1 µs) negligible; a decode step's
// matrix-vector products stay at 8 (an F32 classifier's 94 MiB: 23).
const (
	pieceFLOPs        = 16 << 20
	pieceBytes        = 2 << 20
	maxPiecesPerRange = 32
)

// kernelSize is what a kernel computes and moves in one launch
// (ir.Kernel.Cost): a long one runs in more pieces (piecesFor).
type kernelSize struct{ flops, bytes int64 }

// piecesFor is the pieces per range for a kernel of size s split over cores.
func piecesFor(s kernelSize, cores int) int64 {
	pieces := max(s.flops/pieceFLOPs, s.bytes/pieceBytes) / int64(max(cores, 1))
	return min(max(pieces, piecesPerRange), maxPiecesPerRange)
}

// launcher calls tg_launch of the loaded launch library.
type launcher struct {
	lib        *library
	fn         uintptr // tg_launch
	batch      uintptr // tg_run
	wake       uintptr // tg_wake
	spin, wait time.Duration
}

func (d *cpuDevice) loadLauncher() (*launcher, error) {
	src := launchSource
	if os.Getenv("TGC_LAUNCHSTATS") != "" { // a debugging aid: per-launch times appended to that file
		src = "#define TG_STATS 1\n" + src
	}
	lib, err := d.buildIn("runtime", src, false)
	if err != nil {
		return nil, fmt.Errorf("CPU: building the launcher: %w", err)
	}
	fn, err := purego.Dlsym(lib.handle, "tg_launch")
	if err != nil {
		return nil, fmt.Errorf("CPU: launcher: %v", err)
	}
	batch, err := purego.Dlsym(lib.handle, "tg_run")
	if err != nil {
		return nil, fmt.Errorf("CPU: launcher: %v", err)
	}
	wake, err := purego.Dlsym(lib.handle, "tg_wake")
	if err != nil {
		return nil, fmt.Errorf("CPU: launcher: %v", err)
	}
	return &launcher{lib: lib, fn: fn, batch: batch, wake: wake, spin: spinFor, wait: waitFor}, nil
}

// Wake wakes the launcher's sleeping workers (they poll for spinFor, then
// sleep again): a TinyJit replay calls it before it prepares its batch.
func (d *cpuDevice) Wake() {
	if !d.mu.TryLock() { // compiling: no batch is that close
		return
	}
	l := d.launch
	d.mu.Unlock()
	if l != nil {
		purego.SyscallN(l.wake)
	}
}

// run calls kernel over [0, n) on every core, the caller's thread taking the
// first range; bufs and vars are the kernel's arguments (pinned by the
// caller). While another launch holds the workers (another engine's, in
// this process) it runs on plain goroutines instead.
func (l *launcher) run(kernel, bufs, vars uintptr, n int64, size kernelSize) {
	cores := min(runtime.GOMAXPROCS(0), runtime.NumCPU())
	if l != nil && n >= 2 && cores >= 2 {
		rc, _, _ := purego.SyscallN(l.fn, kernel, bufs, vars, uintptr(n), uintptr(cores), uintptr(l.spin.Nanoseconds()), uintptr(l.wait.Nanoseconds()), uintptr(piecesFor(size, cores)))
		if int32(rc) == 0 {
			return
		}
	}
	parallel(n, func(lo, hi int64) { purego.SyscallN(kernel, bufs, vars, uintptr(lo), uintptr(hi)) })
}

// batchItem is launch.c's struct tg_item.
type batchItem struct {
	fn, bufs, vars uintptr
	n, split, ns   int64
}

// RunBatch runs the launches in one call into the launcher (tg_run): the
// workers stay with the batch from its first launch to its last, and the
// Go side does not come between them. Without the launcher, or while
// another batch or launch holds its workers, the launches run one by one.
func (d *cpuDevice) RunBatch(ls []Launch, times []time.Duration) error {
	progs := make([]*cpuProgram, len(ls))
	nbufs, nvars := 0, 0
	for i, l := range ls {
		p, ok := l.Prog.(*cpuProgram)
		if !ok {
			return fmt.Errorf("CPU: batch launch %d: %s is not a CPU program", i, l.Prog.Name())
		}
		progs[i] = p
		nbufs += len(l.Bufs)
		nvars += max(len(l.Vars), 1)
	}
	if len(ls) > 0 && progs[0].launch != nil {
		lc := progs[0].launch // the device's, every program's
		items := make([]batchItem, len(ls))
		ptrs := make([]uintptr, nbufs+1) // +1: &ptrs[bo] of a last launch without buffers
		vars := make([]int64, nvars)
		var pin runtime.Pinner
		defer pin.Unpin()
		pin.Pin(&items[0])
		pin.Pin(&ptrs[0])
		pin.Pin(&vars[0])
		cores := min(runtime.GOMAXPROCS(0), runtime.NumCPU())
		bo, vo := 0, 0
		for i, l := range ls {
			populateSpans(progs[i].spans, l.Bufs, l.Vars)
			for j, b := range l.Bufs {
				if hb := b.(*hostBuffer); len(hb.data) > 0 {
					ptrs[bo+j] = uintptr(unsafe.Pointer(unsafe.SliceData(hb.data)))
				}
			}
			copy(vars[vo:], l.Vars)
			v := vars[vo : vo+max(len(l.Vars), 1)]
			items[i] = batchItem{fn: progs[i].fn, bufs: uintptr(unsafe.Pointer(&ptrs[bo])), vars: uintptr(unsafe.Pointer(&vars[vo])),
				n: progs[i].outer.Trip(v)}
			if !progs[i].small {
				items[i].split = piecesFor(progs[i].size, cores)
			}
			bo += len(l.Bufs)
			vo += len(v)
		}
		rc, _, _ := purego.SyscallN(lc.batch, uintptr(unsafe.Pointer(&items[0])), uintptr(len(items)), uintptr(cores), uintptr(lc.spin.Nanoseconds()), uintptr(lc.wait.Nanoseconds()))
		runtime.KeepAlive(ls)
		if int32(rc) == 0 {
			for i := range items {
				times[i] = time.Duration(items[i].ns)
			}
			return nil
		}
	}
	for i, l := range ls {
		dt, err := l.Prog.Run(l.Bufs, l.Vars)
		if err != nil {
			return err
		}
		times[i] = dt
	}
	return nil
}
