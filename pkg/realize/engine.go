// Package realize is the engine that turns lazy tensors into values: it
// schedules the graph (fuse), optimizes and compiles the kernels (ir passes,
// backend), allocates buffers, launches the kernels in order and frees the
// scratch buffers. Schedules are cached by the graph's structure with its
// input buffers abstracted, so a repeated step is not re-lowered.
package realize

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/beam"
	"tgc/pkg/ir"
	"tgc/pkg/sysmem"
	"tgc/pkg/tensor"
)

// Options configures an engine.
type Options struct {
	Debug    int       // tinygrad's DEBUG levels 0..5
	Out      io.Writer // where DEBUG output goes (default stderr)
	NoFusion bool      // one kernel per op (for measuring fusion)
	Color    bool      // colour kernel names in DEBUG output
	// Beam > 0 searches each kernel's optimizations on the device (BEAM)
	// within BeamBudget per kernel (0: beam.DefaultBudget).
	Beam       int
	BeamBudget time.Duration
	// CacheDir holds compiled kernels and BEAM's results ("" = the
	// backend's default, backend.CacheDir()).
	CacheDir string
	// ReleaseAfterCompile > 0: a compile that allocated more than this
	// many bytes on the heap gives what scheduling and the pass table
	// freed back to the system (debug.FreeOSMemory), and the pages of
	// code it ran (sysmem.ReleaseCode), before its schedule runs: a run whose memory is mostly its buffers (tgc generate) then
	// does not hold the compiler's garbage and the schedule's scratch at
	// once. It costs a collection per such compile; a schedule of a few
	// kernels (a KV cache's fill) is not worth one.
	ReleaseAfterCompile uint64
}

// beamDir is where BEAM's results live ("" = beam's default).
func (o Options) beamDir() string {
	if o.CacheDir == "" {
		return ""
	}
	return filepath.Join(o.CacheDir, "beam")
}

// Stats are the engine's counters for the run summary.
type Stats struct {
	Realizes    int
	Kernels     int   // launches
	FLOPs       int64 // the launched kernels' float operations (ir.Kernel.Cost)
	Scheduled   int   // schedules created (cache misses)
	CacheHits   int   // schedule cache hits
	JitReplays  int   // TinyJit calls replayed without running the function
	Compiled    int   // kernels handed to the device's compiler (it caches by source)
	Builds      int   // compiler runs (a run compiles many kernels in one)
	KernelLoads int   // compiled kernels loaded from the kernel cache instead
	ZeroFills   int   // zero fills given as zeroed buffers, not launched (backend.ZeroAllocator)
	Overwrites  int   // kernels that wrote their output into an input's memory (overwrite.go)
	DeviceTime  time.Duration
	LowerTime   time.Duration
	CompileTime time.Duration
}

// Engine realizes tensors on one device.
type Engine struct {
	Dev   backend.Device
	Opts  Options
	Stats Stats
	mu    sync.Mutex
	cache map[string]*compiled
	// TinyJit (jit.go): the launches of a call being captured, and the
	// name of the function whose calls may not read values.
	capture  *capture
	noReadIn string
	beam     *beam.Searcher // BEAM's searcher, made on first use
	oneShot  bool           // SetOneShotScratch
	codeGone bool           // the executable's pages given back for good (at a prompt's first chunk that compiles nothing)
	// the one-shot schedules' scratch, carved at planned offsets (arena.go)
	arena     backend.Buffer
	arenaSize int
}

// compiled is a cached schedule: kernels with their arguments expressed as
// references into the graph's leaves and the schedule's own outputs.
type compiled struct {
	items []compiledItem
	outs  []int // item index producing each requested output (-1: a leaf)
	order []int // launch order (items are in schedule order)
	// copies are the assign items that write a temporary buffer, copied
	// into their destination after every launch (see planAssigns).
	copies []int
}

type compiledItem struct {
	name string
	prog backend.Program
	// For DEBUG=2's launch lines: the kernel's cost and global sizes (not
	// the kernel, whose IR would stay in memory with the schedule).
	flops, bytes int64
	global       []int64
	args         []ref             // args[0] is this item's output
	rands        []int             // indices into the graph's random nodes
	vars         []tensor.Variable // the launch's first vars
	dtype        ir.DType
	size         int
	node         int  // the item's node: index into the graph's walk order
	dst          int  // an assign: the leaf whose memory receives the value (-1: none)
	temp         bool // an assign computed into a temporary and copied at the end
	// zeroFill: the kernel reads nothing and stores zeros, so (every
	// kernel writing all of its output) its output is all zeros; a device
	// that has them hands out such a buffer without the launch.
	zeroFill bool
	// overwrite: the argument positions whose buffer the kernel may write
	// its output into when nothing reads it afterwards (overwrite.go)
	overwrite []int
}

// ref points at a buffer: a leaf of the graph (realized input) or the
// output of an earlier item.
type ref struct {
	leaf bool
	idx  int
}

// New makes an engine for a device.
func New(dev backend.Device, opts Options) *Engine {
	if opts.Out == nil {
		opts.Out = os.Stderr
	}
	return &Engine{Dev: dev, Opts: opts, cache: map[string]*compiled{}}
}

// printWarnings prints what the device noticed while compiling (a corrupt
// kernel cache entry it rebuilt, a cache it could not write).
func (e *Engine) printWarnings() {
	if d, ok := e.Dev.(interface{ TakeWarnings() []string }); ok {
		for _, w := range d.TakeWarnings() {
			fmt.Fprintf(e.Opts.Out, "tgc: warning: %s\n", w)
		}
	}
}

// Open opens a device by name and makes an engine for it. A run makes its
// tensors in a context on the engine: tensor.NewContext(e), or NewContext.
func Open(name string, opts Options) (*Engine, error) {
	dev, err := backend.OpenWith(name, backend.Options{CacheDir: opts.CacheDir})
	if err != nil {
		return nil, err
	}
	return New(dev, opts), nil
}

// NewContext opens a device and returns a new tensor context realizing on
// a new engine for it.
func NewContext(name string, opts Options) (*tensor.Context, *Engine, error) {
	e, err := Open(name, opts)
	if err != nil {
		return nil, nil, err
	}
	return tensor.NewContext(e), e, nil
}

// graph is the canonical form of the graph being realized.
type graph struct {
	key    string
	order  []*tensor.Node
	leaves []*tensor.Node
	group  []int // per leaf: the first leaf on the same memory
	rands  []*tensor.Node
	vars   map[tensor.Variable]int // the variables' values (not in the key)
	err    error                   // a variable bound to two values
}

// canonical computes the structural key of the graph below outs, with the
// realized leaves and random nodes numbered in a deterministic walk order.
func canonical(outs []*tensor.Node) *graph {
	g := &graph{}
	order := tensor.Toposort(outs)
	g.order = order
	local := make(map[*tensor.Node]int, len(order))
	memory := map[any]int{} // leaves on the same memory (aliases) share a group
	// The key is appended by hand, not with fmt: it is built anew for
	// every call of a model (thousands of nodes), cache hit or not.
	sb := make([]byte, 0, 64*len(order))
	for i, n := range order {
		local[n] = i
		switch {
		case n.Realized() != nil:
			// Buffers on one storage (aliases, bitcast views) or one
			// device allocation are one memory.
			b := n.Realized()
			keys := []any{b.Memory()}
			if b.Device != nil {
				keys = append(keys, b.Device)
			}
			grp := len(g.leaves)
			for _, k := range keys {
				if j, ok := memory[k]; ok {
					grp = j
					break
				}
			}
			for _, k := range keys {
				memory[k] = grp
			}
			sb = append(sb, 'B')
			sb = strconv.AppendInt(sb, int64(len(g.leaves)), 10)
			sb = append(sb, '=')
			sb = strconv.AppendInt(sb, int64(grp), 10)
			sb = append(sb, ':')
			sb = append(sb, n.DType.String()...)
			sb = tensor.AppendInts(sb, n.Shape)
			sb = append(sb, ';')
			g.leaves = append(g.leaves, n)
			g.group = append(g.group, grp)
			continue
		case n.Op == ir.OpRand:
			sb = append(sb, 'R')
			sb = strconv.AppendInt(sb, int64(len(g.rands)), 10)
			sb = append(sb, ':')
			sb = tensor.AppendInts(sb, n.Shape)
			sb = append(sb, ';')
			g.rands = append(g.rands, n)
			continue
		}
		sb = strconv.AppendInt(sb, int64(n.Op), 10)
		sb = append(sb, ':')
		sb = append(sb, n.DType.String()...)
		sb = append(sb, ':')
		sb = tensor.AppendInts(sb, n.Shape)
		sb = append(sb, ':')
		sb = appendArg(sb, n.Arg)
		for _, d := range n.Sym {
			sb = append(sb, ':')
			sb = append(sb, d.Key()...)
		}
		for _, s := range n.Src {
			sb = append(sb, ',')
			sb = strconv.AppendInt(sb, int64(local[s]), 10)
		}
		sb = append(sb, ';')
	}
	sb = append(sb, '|')
	for _, o := range outs {
		sb = strconv.AppendInt(sb, int64(local[o]), 10)
		sb = append(sb, ',')
	}
	// The cache keeps the key of every schedule it holds: a digest, not
	// the description (~64 bytes a node: a 12-layer prompt chunk's was
	// ~400 KB, resident with each cached schedule).
	sum := sha256.Sum256(sb)
	g.key = string(sum[:])
	vals, err := tensor.Variables(order)
	g.err = err
	g.vars = map[tensor.Variable]int{}
	for _, v := range vals {
		g.vars[v.Var] = v.Val
	}
	return g
}

// appendArg appends a node's argument to the schedule key: a variable's
// value is not part of it (the kernels read it at launch).
func appendArg(b []byte, a any) []byte {
	switch a := a.(type) {
	case nil:
		return append(b, "<nil>"...)
	case []int:
		return tensor.AppendInts(b, a)
	case [][2]int:
		return tensor.AppendPairs(b, a)
	case float64:
		return fmt.Appendf(b, "%x", a)
	case tensor.SInt:
		return append(b, a.Key()...)
	case tensor.SymShrink:
		return append(b, a.Key()...)
	}
	return fmt.Append(b, a)
}

// Realize computes the nodes that are not realized yet.
func (e *Engine) Realize(nodes ...*tensor.Node) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var outs []*tensor.Node
	seen := map[*tensor.Node]bool{}
	for _, n := range nodes {
		if n.Realized() == nil && !seen[n] {
			seen[n] = true
			outs = append(outs, n)
		}
	}
	if len(outs) == 0 {
		return nil
	}
	e.Stats.Realizes++
	g := canonical(outs)
	if g.err != nil {
		return g.err
	}
	c, ok := e.cache[g.key]
	if ok {
		e.Stats.CacheHits++
	} else {
		var err error
		allocated := heapAllocated()
		if c, err = e.compile(outs, g); err != nil {
			return err
		}
		e.cache[g.key] = c
		if r := e.Opts.ReleaseAfterCompile; r > 0 && heapAllocated()-allocated > r {
			start := time.Now()
			debug.FreeOSMemory()
			_, _ = sysmem.ReleaseCode()              // the compiler's code too: the schedule runs without it
			e.Stats.CompileTime += time.Since(start) // the compile's to clean up
		}
	}
	if ok && e.oneShot {
		// A prompt's next chunk: the last chunk's graph is garbage now.
		// Collected (and its pages given back) before the chunk's scratch
		// is live (the prompt's peak), the heap holds one chunk's graph,
		// not GOGC's growth over it (a 900-token Q4_K prompt of a 110M
		// model peaked 2.5 MB lower with runtime.GC, 3.5 with this; 8
		// collections, no change in its prefill's speed).
		debug.FreeOSMemory()
		if !e.codeGone && e.Opts.ReleaseAfterCompile > 0 {
			// The first chunk that compiles nothing: the code that
			// compiled is not run again, and what the chunks run comes
			// back a page at a time (a 900-token Q4_K prompt's peak 4 MB
			// lower, its prefill ~5 % slower: one pass of page faults).
			_, _ = sysmem.ReleaseCodeForGood()
			e.codeGone = true
		}
	}
	return e.run(c, g, outs)
}

// lastUses is, for each item, the launch position of the last kernel
// that reads its output (len(c.order): read after the schedule, a result
// or an assign's temporary; -1: none).
func lastUses(c *compiled) []int {
	lastUse := make([]int, len(c.items))
	for i := range lastUse {
		lastUse[i] = -1
	}
	for pos, i := range c.order {
		for _, r := range c.items[i].args {
			if !r.leaf {
				lastUse[r.idx] = pos
			}
		}
	}
	for _, i := range c.copies {
		lastUse[i] = len(c.order)
	}
	for _, j := range c.outs {
		if j >= 0 {
			lastUse[j] = len(c.order)
		}
	}
	return lastUse
}

// SetOneShotScratch says whether the schedules run from now on use their
// scratch once (a prompt's prefill): its buffers then come from the
// device's scratch allocator (backend.ScratchAllocator: small pages on
// the CPU, whose first touch costs less than huge pages' where a
// virtual machine's host backs memory lazily), not from the huge pages
// that buffers used again and again (a loop's, a decode step's) run
// faster from. The Go heap's garbage is collected before each such
// schedule that compiles nothing (Realize).
func (e *Engine) SetOneShotScratch(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.oneShot = on
	if !on {
		e.dropArena()
	}
}

// allocScratch allocates a kernel's output that is freed after the
// schedule (not kept).
func (e *Engine) allocScratch(dt ir.DType, n int) (backend.Buffer, error) {
	if sa, ok := e.Dev.(backend.ScratchAllocator); ok && e.oneShot {
		return sa.AllocScratch(dt, n)
	}
	return e.Dev.Alloc(dt, n)
}

// heapAllocated is the bytes allocated on the heap since the start.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// compile schedules, optimizes and compiles a graph.
func (e *Engine) compile(outs []*tensor.Node, g *graph) (*compiled, error) {
	start := time.Now()
	sched, kernels, first, err := pipeline{opts: e.Opts, target: e.target()}.lower(outs)
	if err != nil {
		return nil, err
	}
	e.Stats.Scheduled++
	e.Stats.LowerTime += time.Since(start)
	cstart := time.Now()
	// Kernels of one structure share one program (the first's name).
	var distinct []*ir.Kernel
	at := make([]int, len(kernels)) // kernel i's program in distinct
	for i, j := range first {
		if j == i {
			at[i] = len(distinct)
			distinct = append(distinct, kernels[i])
		} else {
			at[i] = at[j]
		}
	}
	e.Stats.Compiled += len(distinct)
	dprogs, counts, err := backend.CompileCounted(e.Dev, distinct)
	e.Stats.Builds += counts.Builds
	e.Stats.KernelLoads += counts.CacheHits
	e.printWarnings()
	if err != nil {
		return nil, err
	}
	progs := make([]backend.Program, len(kernels))
	for i := range progs {
		progs[i] = dprogs[at[i]]
	}
	e.Stats.CompileTime += time.Since(cstart)
	leafIdx := map[*tensor.Node]int{}
	for i, l := range g.leaves {
		leafIdx[l] = i
	}
	randIdx := map[*tensor.Node]int{}
	for i, r := range g.rands {
		randIdx[r] = i
	}
	local := make(map[*tensor.Node]int, len(g.order))
	for i, n := range g.order {
		local[n] = i
	}
	itemIdx := map[*tensor.Node]int{}
	c := &compiled{}
	// a structure's cost, once (Cost walks the whole kernel): a 12-layer
	// decode step's 146 kernels have ~15 structures
	type cost struct {
		flops, bytes int64
		zeroFill     bool
	}
	costs := make([]*cost, len(distinct))
	for i, it := range sched.Items {
		ci := compiledItem{name: kernels[i].Name, prog: progs[i], dtype: it.Out.DType, size: it.Out.Numel(), node: local[it.Out], dst: -1}
		if costs[at[i]] == nil {
			kc := &cost{zeroFill: zeroFill(kernels[i])}
			kc.flops, kc.bytes = kernels[i].Cost()
			costs[at[i]] = kc
		}
		ci.flops, ci.bytes, ci.zeroFill = costs[at[i]].flops, costs[at[i]].bytes, costs[at[i]].zeroFill
		for _, a := range kernels[i].Global {
			ci.global = append(ci.global, a.Size)
		}
		if d := it.Out.AssignTarget(); d != nil {
			ci.dst = leafIdx[d]
		}
		for _, a := range it.Args {
			if j, ok := itemIdx[a]; ok {
				ci.args = append(ci.args, ref{idx: j})
			} else if a == it.Out {
				ci.args = append(ci.args, ref{idx: i})
			} else if j, ok := leafIdx[a]; ok {
				ci.args = append(ci.args, ref{leaf: true, idx: j})
			} else {
				return nil, fmt.Errorf("internal error: kernel %s reads a buffer no earlier kernel writes", ci.name)
			}
		}
		for _, r := range it.Rands {
			ci.rands = append(ci.rands, randIdx[r])
		}
		ci.vars = it.Vars
		itemIdx[it.Out] = i
		c.items = append(c.items, ci)
		if e.Opts.Debug >= 3 {
			pipeline{opts: e.Opts}.show(kernels[i], e.Dev.Source(kernels[i]))
		}
		if e.Opts.Debug >= 4 {
			if asm, err := progs[i].Disassembly(); err == nil {
				fmt.Fprintf(e.Opts.Out, "%s\n", asm)
			} else {
				fmt.Fprintf(e.Opts.Out, "(no disassembly: %v)\n", err)
			}
		}
	}
	for _, o := range outs {
		j, ok := itemIdx[o]
		if !ok {
			j = -1
		}
		c.outs = append(c.outs, j)
	}
	planAssigns(c, sched, g, itemIdx)
	sinkLeafReaders(c, g)
	planOverwrites(c, kernels, first, e.target())
	return c, nil
}

// deviceBuffer uploads a leaf's host data on first use.
func (e *Engine) deviceBuffer(n *tensor.Node) (backend.Buffer, error) {
	b := n.Realized()
	if b.Stale() {
		return nil, staleError(n)
	}
	host := b.Host
	if db, ok := b.Device.(backend.Buffer); ok {
		if e.Dev.Owns(db) {
			return db, nil
		}
		// Realized by another engine (an interned constant graph, say):
		// its value moves to this device through the host.
		host = make([]byte, b.Size*b.DType.Size())
		if err := db.CopyOut(host); err != nil {
			return nil, err
		}
	} else if b.Device != nil {
		return nil, fmt.Errorf("buffer of %s lives on another device", n)
	}
	if d, ok := b.SharedDevice().(backend.Buffer); ok { // a view of uploaded memory
		b.Device, b.Host = d, nil
		return d, nil
	}
	db, err := e.Dev.Alloc(b.DType, b.Size)
	if err != nil {
		return nil, err
	}
	if err := db.CopyIn(host); err != nil {
		return nil, err
	}
	b.Device = db
	b.Host = nil // the device holds it now
	b.SetSharedDevice(db)
	return db, nil
}

// Time runs the schedule of nodes iters times without keeping the results
// and returns the device time of each run (for benchmarks).
func (e *Engine) Time(iters int, nodes ...*tensor.Node) ([]time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := canonical(nodes)
	if g.err != nil {
		return nil, g.err
	}
	c, ok := e.cache[g.key]
	if !ok {
		var err error
		if c, err = e.compile(nodes, g); err != nil {
			return nil, err
		}
		e.cache[g.key] = c
	}
	var times []time.Duration
	for i := 0; i < iters; i++ {
		before := e.Stats.DeviceTime
		if err := e.exec(c, g, nodes, false); err != nil {
			return nil, err
		}
		times = append(times, e.Stats.DeviceTime-before)
	}
	return times, nil
}

// run launches a compiled schedule with this graph's buffers and records
// the outputs' buffers on their nodes.
func (e *Engine) run(c *compiled, g *graph, outs []*tensor.Node) error {
	return e.exec(c, g, outs, true)
}

func (e *Engine) exec(c *compiled, g *graph, outs []*tensor.Node, keep bool) error {
	// Every leaf is checked (and uploaded) before any kernel writes.
	leafBufs := make([]backend.Buffer, len(g.leaves))
	for i, l := range g.leaves {
		var err error
		if leafBufs[i], err = e.deviceBuffer(l); err != nil {
			return err
		}
	}
	if err := e.checkMemory(c, g); err != nil {
		return err
	}
	bufs := make([]backend.Buffer, len(c.items))
	owned := make([]bool, len(c.items)) // freed at the end unless kept
	isOut := map[int]bool{}
	for _, j := range c.outs {
		isOut[j] = keep
	}
	defer func() {
		for i, b := range bufs {
			if b != nil && owned[i] && !isOut[i] {
				b.Free()
			}
		}
	}()
	// A kernel's output that is neither kept nor copied is freed after the
	// last kernel that reads it (its memory goes back to the device's pool
	// for the next one): a prefill's per-layer scratch, a quantized
	// weight's dequantized copy above all, is then held one layer at a
	// time instead of all at once. Not while TinyJit captures: the replay
	// plan tells buffers apart by identity.
	var lastUse []int
	if e.capture == nil {
		lastUse = lastUses(c)
	}
	za, zeroes := e.Dev.(backend.ZeroAllocator)
	zeroes = zeroes && e.capture == nil // a capture keeps the launch: its replays must zero again
	places := placeItems(c, lastUse, isOut, zeroes)
	var plan *arenaPlan
	var arena backend.Buffer
	carver, carves := e.Dev.(backend.Carver)
	if carves && e.oneShot && e.capture == nil {
		p := planArena(c, places, lastUse, isOut)
		var err error
		if arena, err = e.oneShotArena(p.size); err != nil {
			return err
		}
		plan = &p
	}
	var total time.Duration
	zeroed := 0
	for pos, i := range c.order {
		it, pl := &c.items[i], places[i]
		if pl.zeroed {
			out, err := za.AllocZeroed(it.dtype, it.size)
			if err != nil {
				return fmt.Errorf("kernel %s: %w", it.name, err)
			}
			bufs[i], owned[i] = out, true
			e.Stats.ZeroFills++
			zeroed++
			continue
		}
		if pl.dest {
			bufs[i] = leafBufs[it.dst] // written in place
		} else if j := pl.over; j >= 0 {
			bufs[i], owned[i] = bufs[j], true // its input's memory, which dies here
			owned[j] = false
			e.Stats.Overwrites++
		} else {
			alloc := e.Dev.Alloc
			if plan != nil && plan.off[i] >= 0 {
				alloc = func(dt ir.DType, n int) (backend.Buffer, error) { return carver.Carve(arena, plan.off[i], dt, n) }
			} else if !isOut[i] {
				alloc = e.allocScratch
			}
			out, err := alloc(it.dtype, it.size)
			if err != nil {
				return fmt.Errorf("kernel %s: %w", it.name, err)
			}
			bufs[i], owned[i] = out, true
		}
		args := make([]backend.Buffer, len(it.args))
		for j, r := range it.args {
			if r.leaf {
				args[j] = leafBufs[r.idx]
			} else {
				args[j] = bufs[r.idx]
			}
		}
		var vars []int64
		var rands []tensor.RandArg
		for _, v := range it.vars {
			vars = append(vars, int64(g.vars[v]))
		}
		for _, ri := range it.rands {
			ra := g.rands[ri].Arg.(tensor.RandArg)
			vars = append(vars, int64(ra.Seed), int64(ra.Counter))
			rands = append(rands, ra)
		}
		dt, err := it.prog.Run(args, vars)
		if err != nil {
			return fmt.Errorf("kernel %s: %w", it.name, err)
		}
		if e.capture != nil {
			e.capture.launch(it, args, vars[:len(it.vars)], rands, owned[i])
		}
		total += dt
		if e.Opts.Debug >= 2 {
			e.launchLine(e.Stats.Kernels, *it, dt)
		}
		e.Stats.Kernels++
		e.Stats.FLOPs += it.flops
		if e.capture == nil {
			for _, r := range it.args {
				if !r.leaf && lastUse[r.idx] == pos && owned[r.idx] && bufs[r.idx] != nil {
					bufs[r.idx].Free()
					bufs[r.idx] = nil
				}
			}
		}
	}
	for _, i := range c.copies {
		it := &c.items[i]
		if err := copyBuffer(leafBufs[it.dst], bufs[i], it.dtype, it.size); err != nil {
			return fmt.Errorf("assign %s: %w", it.name, err)
		}
		if e.capture != nil {
			e.capture.copy(bufs[i], leafBufs[it.dst], it.dtype, it.size)
		}
	}
	e.Stats.DeviceTime += total
	for i := range c.items {
		if c.items[i].dst >= 0 && len(outs) > 0 {
			outs[0].Context().MemoryWritten() // before the new values are recorded: they are current
			break
		}
	}
	if keep {
		for i := range c.items {
			it := &c.items[i]
			if it.dst < 0 {
				continue
			}
			// The destination's memory holds the assign's value now: the
			// assign node is realized there, the old value is stale.
			g.order[it.node].SetRealized(tensor.Overwritten(g.leaves[it.dst].Realized(), leafBufs[it.dst]))
		}
		for k, o := range outs {
			j := c.outs[k]
			if j < 0 || c.items[j].dst >= 0 {
				continue
			}
			o.SetRealized(&tensor.Buffer{ID: tensor.NewID(), DType: o.DType, Size: o.Numel(), Device: bufs[j]})
		}
	}
	if e.Opts.Debug >= 1 {
		zeros := ""
		if zeroed > 0 {
			zeros = fmt.Sprintf(" (%d zeroed buffers, not launched)", zeroed)
		}
		fmt.Fprintf(e.Opts.Out, "ran %s on %s in %.3f ms%s\n", plural(len(c.items)-zeroed, "kernel"), e.Dev.Name(), float64(total.Microseconds())/1000, zeros)
	}
	return nil
}

func (e *Engine) launchLine(i int, it compiledItem, dt time.Duration) {
	flops, bytes := it.flops, it.bytes
	secs := dt.Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	var g []string
	for _, size := range it.global {
		g = append(g, fmt.Sprint(size))
	}
	name := it.name
	if e.Opts.Color {
		name = ColorName(name)
	}
	pad := max(0, 28-len(it.name))
	fmt.Fprintf(e.Opts.Out, "*** %s %4d %s%s global=[%s] %9.3f ms %8.2f GFLOP/s %8.2f GB/s\n",
		e.Dev.Name(), i, name, strings.Repeat(" ", pad), strings.Join(g, ","), secs*1e3, float64(flops)/secs/1e9, float64(bytes)/secs/1e9)
}

// ColorName colours a kernel name by kind, like tinygrad's DEBUG output.
func ColorName(name string) string {
	code := "34" // blue: elementwise
	if strings.HasPrefix(name, "r_") {
		code = "32" // green: reduce
	}
	return "\x1b[" + code + "m" + name + "\x1b[0m"
}

// Read returns the host bytes of a realized node.
func (e *Engine) Read(n *tensor.Node) ([]byte, error) {
	b, db, err := e.readable(n)
	if err != nil {
		return nil, err
	}
	if b.Host != nil {
		return b.Host, nil
	}
	data := make([]byte, b.Size*b.DType.Size())
	if err := db.CopyOut(data); err != nil {
		return nil, err
	}
	return data, nil
}

// ReadInto copies the bytes of a realized node into dst, which holds them
// exactly (tensor.ReaderInto): a read that allocates nothing.
func (e *Engine) ReadInto(n *tensor.Node, dst []byte) error {
	b, db, err := e.readable(n)
	if err != nil {
		return err
	}
	if size := b.Size * b.DType.Size(); len(dst) != size {
		return fmt.Errorf("read of %s: %d bytes into a buffer of %d", n, size, len(dst))
	}
	if b.Host != nil {
		copy(dst, b.Host)
		return nil
	}
	return db.CopyOut(dst)
}

// readable is the buffer of a realized node that may be read now: its host
// bytes, or else its device buffer.
func (e *Engine) readable(n *tensor.Node) (*tensor.Buffer, backend.Buffer, error) {
	if e.noReadIn != "" {
		return nil, nil, fmt.Errorf("the TinyJit function %s reads a tensor's value (item, tolist, numpy), which is not allowed: the replays skip the function, so the value would be frozen; return the tensor from the function and read it after the call", e.noReadIn)
	}
	b := n.Realized()
	if b == nil {
		return nil, nil, fmt.Errorf("read of an unrealized tensor %s", n)
	}
	if b.Stale() {
		return nil, nil, staleError(n)
	}
	if b.Host != nil {
		return b, nil, nil
	}
	db, ok := b.Device.(backend.Buffer)
	if !ok {
		return nil, nil, fmt.Errorf("buffer of %s is not on %s", n, e.Dev.Name())
	}
	return b, db, nil
}

// plural formats a count with its noun: "1 kernel", "3 kernels".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	if strings.HasSuffix(noun, "ch") || strings.HasSuffix(noun, "sh") || strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// target is the device's target, with BEAM's choice of opts when asked for.
func (e *Engine) target() ir.Target {
	t := targetOf(e.Dev)
	if e.Opts.Beam > 0 && (t.Upcast || t.GPU != nil) {
		if e.beam == nil {
			e.beam = beam.New(e.Dev, beam.Options{Width: e.Opts.Beam, Budget: e.Opts.BeamBudget, Debug: max(e.Opts.Debug, 1), Out: e.Opts.Out, Dir: e.Opts.beamDir()})
		}
		t.Choose = e.beam.Choose
	}
	return t
}

// MatmulPanel is tensor.PanelEngine: devices that register-block reduces
// (the CPU) get a matmul's right operand repacked into column panels of
// one register block's width (two vectors).
func (e *Engine) MatmulPanel() int {
	if t := targetOf(e.Dev); t.Upcast {
		return int(2 * t.Width()) // the heuristic's lanes along a matmul's columns
	}
	return 0
}

// MatmulRowPanel is tensor.RowPanelEngine: the CPU packs a matmul's left
// operand into row panels where the heuristic groups its rows
// (ir.Target.MatmulRowPanel).
func (e *Engine) MatmulRowPanel(m, k, n int) int {
	return int(targetOf(e.Dev).MatmulRowPanel(int64(m), int64(k), int64(n)))
}

// Beam returns the engine's searcher (nil unless BEAM is on and used).
func (e *Engine) Beam() *beam.Searcher { return e.beam }

// targetOf asks a device which optional passes suit it (ir.Target{} if it
// does not say).
func targetOf(dev backend.Device) ir.Target {
	if t, ok := dev.(interface{ Target() ir.Target }); ok {
		return t.Target()
	}
	return ir.Target{}
}

// SetBeam changes BEAM's width for the kernels compiled from now on (0:
// off); a searcher of another width is dropped. Schedules already compiled
// keep their kernels.
func (e *Engine) SetBeam(width int) {
	if width != e.Opts.Beam {
		e.Opts.Beam = width
		e.beam = nil
	}
}

// checkMemory refuses a schedule whose new buffers cannot fit in the memory
// left (host devices; a GPU reports its own), naming the largest tensor and
// where the script made it, before anything is allocated.
func (e *Engine) checkMemory(c *compiled, g *graph) error {
	if n := e.Dev.Name(); n != "CPU" && n != "GO" {
		return nil
	}
	var need, most uint64
	var largest *compiledItem
	for i := range c.items {
		it := &c.items[i]
		if it.dst >= 0 && !it.temp {
			continue // written in place
		}
		b := uint64(it.size) * uint64(it.dtype.Size())
		need += b
		if b > most {
			most, largest = b, it
		}
	}
	avail, ok := sysmem.Available()
	if !ok || need <= avail || largest == nil {
		return nil
	}
	what := "a tensor"
	if largest.node >= 0 && largest.node < len(g.order) {
		n := g.order[largest.node]
		what = fmt.Sprintf("the tensor of shape %s (%s)", tensor.FormatShape(n.Shape), n.DType)
		if p := n.Pos.String(); p != "" {
			what += " made at " + p
		}
	}
	msg := fmt.Sprintf("not enough memory: %s needs %s", what, sysmem.Size(most))
	if need > most {
		msg += fmt.Sprintf(", this computation %s in all", sysmem.Size(need))
	}
	return fmt.Errorf("%s, and %s is available", msg, sysmem.Size(avail))
}

// zeroFill says whether k reads no buffer and stores only zeros (bit
// patterns of zero: not -0.0), so that its whole output reads as zeros.
func zeroFill(k *ir.Kernel) bool {
	if len(k.Bufs) != 1 || len(k.Stores) == 0 {
		return false
	}
	for _, st := range k.Stores {
		v := st.Src[1]
		if v.Op != ir.OpConst {
			return false
		}
		switch x := v.Arg.(type) {
		case float64:
			if x != 0 || math.Signbit(x) {
				return false
			}
		case int64:
			if x != 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}
