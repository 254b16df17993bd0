package backend

import (
	_ "embed"
	"fmt"
	"runtime"
	"time"

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

// spinFor is how long an idle worker polls before it sleeps. Kernels come
// back to back, and waking a sleeping thread is slow where tgc often runs,
// on a virtual machine: a 768×768 Q8_0 product whose two halves take 40 µs
// took 120 µs with sleeping workers and 58 µs with spinning ones (OpenMP's
// passive and active waits, same kernel).
const spinFor = 300 * time.Microsecond

// piecesPerRange is TG_PIECES in launch.c: each participant's range is run
// in up to this many pieces, which the others take once done with theirs.
const piecesPerRange = 8

// launcher calls tg_launch of the loaded launch library.
type launcher struct {
	lib *library
	fn  uintptr // tg_launch
}

func (d *cpuDevice) loadLauncher() (*launcher, error) {
	lib, err := d.buildIn("runtime", launchSource, false)
	if err != nil {
		return nil, fmt.Errorf("CPU: building the launcher: %w", err)
	}
	fn, err := purego.Dlsym(lib.handle, "tg_launch")
	if err != nil {
		return nil, fmt.Errorf("CPU: launcher: %v", err)
	}
	return &launcher{lib: lib, fn: fn}, nil
}

// run calls kernel over [0, n) on every core, the caller's thread taking the
// first range; bufs and vars are the kernel's arguments (pinned by the
// caller). While another launch holds the workers (another engine's, in
// this process) it runs on plain goroutines instead.
func (l *launcher) run(kernel, bufs, vars uintptr, n int64) {
	cores := min(runtime.GOMAXPROCS(0), runtime.NumCPU())
	if l != nil && n >= 2 && cores >= 2 {
		rc, _, _ := purego.SyscallN(l.fn, kernel, bufs, vars, uintptr(n), uintptr(cores), uintptr(spinFor.Nanoseconds()))
		if int32(rc) == 0 {
			return
		}
	}
	parallel(n, func(lo, hi int64) { purego.SyscallN(kernel, bufs, vars, uintptr(lo), uintptr(hi)) })
}
