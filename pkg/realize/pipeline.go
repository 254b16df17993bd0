package realize

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// pipeline drives the compiler's stages the same way for a device (Engine)
// and for `tgc emit` (Tracer): schedule the graph into kernels (fuse), run
// the pass table on each kernel for the target (ir.OptimizeFor, which
// verifies the kernel after every pass; DEBUG=5 dumps it), and name it.
// Rendering is the last stage: the engine's device renders and compiles,
// the tracer renders in the dialect it emits for; both print the source
// through show (DEBUG=3).
type pipeline struct {
	opts   Options
	target ir.Target
}

// lower schedules outs and optimizes every kernel of the schedule. first[i]
// is the index of the first kernel with kernel i's structure (i itself
// when it is the first): the two differ only in their names.
func (p pipeline) lower(outs []*tensor.Node) (sched *fuse.Schedule, kernels []*ir.Kernel, first []int, err error) {
	start := time.Now()
	sched, err = fuse.Create(outs, fuseOptions(p.opts, p.target))
	if err != nil {
		return nil, nil, nil, err
	}
	kernels = make([]*ir.Kernel, len(sched.Items))
	first = make([]int, len(sched.Items))
	// A step's layers repeat the same kernels on other buffers: each
	// structure is optimized once (its IR once in memory, BEAM's search
	// once), as beam keys its results (the dump without the name).
	optimized := map[[sha256.Size]byte]int{}
	var distinct []int
	for i, it := range sched.Items {
		key := structure(it.Kernel)
		if j, ok := optimized[key]; ok && p.opts.Debug < 5 {
			first[i] = j
			it.Kernel.B = nil // never optimized: its intern table is garbage
			continue
		}
		first[i] = i
		optimized[key] = i
		distinct = append(distinct, i)
	}
	// The kernels are independent (each its own builder), so they are
	// optimized on every core: a training step's ~120 kernels took ~0.4 s
	// of one core before its compile could start. DEBUG=5 dumps in order,
	// and a chooser (BEAM) runs alone: it times candidates on every core,
	// and the tracer's counts its misses.
	workers := runtime.GOMAXPROCS(0)
	if p.opts.Debug >= 5 || p.target.Choose != nil {
		workers = 1
	}
	errs := make([]error, len(sched.Items))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(distinct)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				kernels[i], errs[i] = p.optimize(sched.Items[i].Kernel)
				// The lowered kernel stays in the schedule for its name
				// and DEBUG's dump; the intern table of its builder (every
				// expression lowering made, most of them dead) would stay
				// in memory with it until the schedule is compiled.
				sched.Items[i].Kernel.B = nil
			}
		}()
	}
	for _, i := range distinct {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, i := range distinct {
		if errs[i] != nil {
			return nil, nil, nil, errs[i]
		}
	}
	for i, it := range sched.Items {
		if j := first[i]; j != i {
			named := *kernels[j]
			named.Name = it.Kernel.Name
			kernels[i] = &named
		}
	}
	if p.opts.Debug >= 1 {
		fmt.Fprintf(p.opts.Out, "scheduled %s in %.2f ms\n", plural(len(kernels), "kernel"), float64(time.Since(start).Microseconds())/1000)
		if p.opts.Debug >= 2 {
			fmt.Fprint(p.opts.Out, sched.Dump())
		}
	}
	return sched, kernels, first, nil
}

// optimize runs the pass table on one kernel of the schedule.
func (p pipeline) optimize(lowered *ir.Kernel) (*ir.Kernel, error) {
	var dump func(string, *ir.Kernel)
	if p.opts.Debug >= 5 {
		dump = func(pass string, k *ir.Kernel) {
			fmt.Fprintf(p.opts.Out, "--- %s after %s ---\n%s", lowered.Name, pass, k.Dump())
		}
	}
	k, err := ir.OptimizeFor(lowered, p.target, dump)
	if err != nil {
		return nil, fmt.Errorf("internal error optimizing %s: %w", lowered.Name, err)
	}
	k.Name = lowered.Name
	// The builder's intern table holds every expression the passes made,
	// most of them dead now: the renderers read only the kernel's
	// expressions.
	k.B = nil
	return k, nil
}

// structure identifies a kernel by what it computes: a hash of its dump
// without its name.
func structure(k *ir.Kernel) [sha256.Size]byte {
	dump := k.Dump()
	if i := strings.IndexByte(dump, '\n'); i >= 0 {
		dump = dump[i+1:] // "kernel NAME"
	}
	return sha256.Sum256([]byte(dump))
}

// show prints a kernel's rendered source and its opts (DEBUG=3).
func (p pipeline) show(k *ir.Kernel, src string) {
	if p.opts.Debug < 3 {
		return
	}
	if len(k.Opts) > 0 {
		fmt.Fprintf(p.opts.Out, "// %s opts %s\n", k.Name, ir.FormatOpts(k.Opts))
	}
	fmt.Fprintf(p.opts.Out, "%s\n", src)
}

// fuseOptions is the fusion rule for a target: reduces broadcast back over
// their rows join their consumer on targets that run global axes as loops
// (the C targets, those that upcast), where they are computed once per row.
func fuseOptions(o Options, t ir.Target) fuse.Options {
	return fuse.Options{NoFusion: o.NoFusion, HoistReduces: t.Upcast}
}
