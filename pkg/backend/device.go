// Package backend holds the devices: a device is a runtime (alloc, copy in
// and out, launch) plus a way to turn kernel IR into something it can run
// (a renderer and a compiler, or, for GO, an interpreter).
package backend

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"tgc/pkg/ir"
)

// Device is one backend.
type Device interface {
	Name() string
	// Alloc returns a buffer of n elements of dt; its contents are undefined
	// (every kernel writes all of its output).
	Alloc(dt ir.DType, n int) (Buffer, error)
	// Compile prepares kernels for launch; one Program per kernel, in order.
	Compile(ks []*ir.Kernel) ([]Program, error)
	// Source renders a kernel in the device's language ("" for GO).
	Source(k *ir.Kernel) string
	// Owns says whether b is memory this device can launch on (a buffer
	// another engine allocated is copied through the host first).
	Owns(b Buffer) bool
}

// Buffer is device memory.
type Buffer interface {
	CopyIn(data []byte) error
	CopyOut(data []byte) error
	Free()
}

// Program is a compiled kernel.
type Program interface {
	Name() string
	// Run launches the kernel and waits for it; it returns the device time.
	Run(bufs []Buffer, vars []int64) (time.Duration, error)
	// Disassembly returns the machine code where available (DEBUG=4).
	Disassembly() (string, error)
}

// Info describes a device for `tgc devices`.
type Info struct {
	Name      string
	Available bool
	Reason    string // why not available, or a detail when it is
}

type entry struct {
	name  string
	rank  int // lower is preferred as the default
	probe func() (string, error)
	open  func(Options) (Device, error)
}

// Options are the settings a device is opened with.
type Options struct {
	// CacheDir is where compiled kernels are stored ("" = CacheDir()).
	CacheDir string
}

var registry = map[string]entry{}

func register(e entry) { registry[e.name] = e }

// List probes every known device.
func List() []Info {
	var out []Info
	for _, e := range sortedEntries() {
		detail, err := e.probe()
		if err != nil {
			out = append(out, Info{Name: e.name, Reason: err.Error()})
		} else {
			out = append(out, Info{Name: e.name, Available: true, Reason: detail})
		}
	}
	return out
}

// Describe is what `tgc devices` says of an available device (its
// model, memory, compiler), or "" for a device that is not.
func Describe(name string) string {
	for _, e := range registry {
		if e.name == name {
			if detail, err := e.probe(); err == nil {
				return detail
			}
		}
	}
	return ""
}

func sortedEntries() []entry {
	var es []entry
	for _, e := range registry {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].rank < es[j].rank })
	return es
}

// Default is the best available device.
func Default() string {
	for _, e := range sortedEntries() {
		if _, err := e.probe(); err == nil {
			return e.name
		}
	}
	return "GO"
}

// Names lists the known device names.
func Names() []string {
	var n []string
	for _, e := range sortedEntries() {
		n = append(n, e.name)
	}
	return n
}

// A device is opened once per process and settings (a GPU context, the
// compiled programs in memory) and shared by every engine that uses it.
var (
	openMu sync.Mutex
	opened = map[Options]map[string]Device{}
)

// Open returns the named device (case-insensitive) with default settings,
// opening it once.
func Open(name string) (Device, error) { return OpenWith(name, Options{}) }

// OpenWith returns the named device (case-insensitive) with the given
// settings, opening it once for them.
func OpenWith(name string, opts Options) (Device, error) {
	name = strings.ToUpper(name)
	openMu.Lock()
	defer openMu.Unlock()
	if d, ok := opened[opts][name]; ok {
		return d, nil
	}
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown device %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if _, err := e.probe(); err != nil {
		return nil, fmt.Errorf("device %s is not available: %v", name, err)
	}
	d, err := e.open(opts)
	if err != nil {
		return nil, err
	}
	if opened[opts] == nil {
		opened[opts] = map[string]Device{}
	}
	opened[opts][name] = d
	return d, nil
}

// parallel runs f over [0, n) split into one contiguous chunk per core.
// Coarse chunks with no barriers degrade gracefully when a core is busy.
func parallel(n int64, f func(start, end int64)) {
	workers := int64(runtime.GOMAXPROCS(0))
	if n < 2 || workers < 2 {
		f(0, n)
		return
	}
	workers = min(workers, n)
	done := make(chan struct{}, workers)
	for w := int64(1); w < workers; w++ {
		start, end := n*w/workers, n*(w+1)/workers
		go func() {
			f(start, end)
			done <- struct{}{}
		}()
	}
	f(0, n/workers) // the caller's share: it need not wait for a thread to wake
	for w := int64(1); w < workers; w++ {
		<-done
	}
}

// batchRunner launches ls in order, as RunBatch does, and on an error
// returns the index of the launch that failed.
type batchRunner func(ls []Launch, times []time.Duration) (int, error)

// runOne is Program.Run over a batch runner: the caller names the kernel
// on an error.
func runOne(run batchRunner, p Program, bufs []Buffer, vars []int64) (time.Duration, error) {
	var t [1]time.Duration
	_, err := run([]Launch{{Prog: p, Bufs: bufs, Vars: vars}}, t[:])
	return t[0], err
}

// runNamed is RunBatch over a batch runner: an error names the kernel.
func runNamed(run batchRunner, ls []Launch, times []time.Duration) error {
	if i, err := run(ls, times); err != nil {
		return fmt.Errorf("kernel %s: %w", ls[i].Prog.Name(), err)
	}
	return nil
}

// ZeroAllocator is a device that can hand out a buffer reading as zeros
// without writing it (the CPU: a fresh mapping, zeroed by the system page
// by page on first touch), so that realizing a zero fill (Tensor.empty, a
// KV cache) costs neither a launch nor the memory of pages never written.
type ZeroAllocator interface {
	AllocZeroed(dt ir.DType, n int) (Buffer, error)
}

// Carver is a device whose buffers can be carved out of one of its own:
// a schedule's one-shot scratch placed at planned offsets in one
// allocation (realize's arena), so that buffers whose lives do not
// overlap share memory whatever their sizes. A carved buffer's Free
// frees nothing; its memory is from's.
type Carver interface {
	Carve(from Buffer, offset int, dt ir.DType, n int) (Buffer, error)
}

// ScratchAllocator is a device whose buffers for kernels' outputs may be
// allocated unlike the buffers uploaded from the host (the CPU: in small
// pages, see cpuDevice.AllocScratch).
type ScratchAllocator interface {
	AllocScratch(dt ir.DType, n int) (Buffer, error)
}

// Launch is one kernel launch of a batch.
type Launch struct {
	Prog Program
	Bufs []Buffer
	Vars []int64
}

// Batcher is a device that runs a sequence of launches in one call, each
// after the one before has finished (a TinyJit replay's kernels, as
// tinygrad's graph runners do): the per-launch costs of the host side, and
// on the CPU the worker threads' hand-offs, are paid once.
type Batcher interface {
	// RunBatch runs ls in order and sets times[i] to launch i's time.
	RunBatch(ls []Launch, times []time.Duration) error
	// Wake tells the device that a batch is coming: the host side calls it
	// before it prepares one, so that the first launch's hand-off does not
	// wait for a sleeping thread to wake (the CPU's workers sleep after a
	// short poll, and a decode step's host side takes longer than that).
	Wake()
}
