package realize

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TinyJit. A Jit wraps a function of tensors. Call 0 runs it normally;
// call 1 runs it again while the engine records every launch (program,
// argument buffers, random-tensor vars) and every assign copy; later calls
// replay that sequence on the new inputs' buffers without running the
// function: no graph building, scheduling, lowering or compiling.
//
// Each argument buffer of the capture is classified as jit input i, a
// buffer produced earlier in the capture (a slot), or a persistent buffer
// from outside (parameters and optimizer state, which in-place assign
// keeps at the same memory across steps). A slot the function returns is
// allocated afresh on each replay; the others live only inside a call, so
// the plan keeps them for the next replay (as tinygrad's TinyJit does).
// The function's graph is built anew in calls 0 and 1: interning does not
// hand it values realized before the call, whose kernels would be missing
// from the capture. Random
// tensors created inside the function draw new numbers on each replay (the
// random stream advances as if the function had run); random tensors from
// outside keep their values. Outputs are fresh buffers on each call.
//
// What replays cannot see is refused or documented: a call whose inputs
// differ in shape or dtype (or aliasing) from the first call is an error,
// and so is reading a value (item, tolist, numpy) inside the function
// during calls 0 and 1. Go/Starlark values the function reads (constants,
// Tensor.training, branches) are frozen at capture, as in tinygrad.

// JitFunc is a function of tensors that TinyJit captures.
type JitFunc func(inputs []*tensor.Tensor) ([]*tensor.Tensor, error)

// Jit is a captured function (tinygrad's TinyJit).
type Jit struct {
	Name  string // for errors ("train_step")
	fn    JitFunc
	ctx   *tensor.Context // the run whose tensors the function makes
	calls int
	eng   *Engine
	sig   []inputSig
	alias []int // per input: the first input on the same buffer
	plan  *jitPlan
}

type inputSig struct {
	dtype ir.DType
	shape []int
	v     tensor.Variable // a bound variable passed as an input (VarTensor)
}

// NewJit wraps fn, a function of tensors of ctx (its random stream is the
// one replays advance).
func NewJit(ctx *tensor.Context, name string, fn JitFunc) *Jit {
	return &Jit{Name: name, fn: fn, ctx: ctx}
}

// Captured reports whether the calls now replay.
func (j *Jit) Captured() bool { return j.plan != nil }

// Reset drops the capture: the next call runs the function again (as call 0).
func (j *Jit) Reset() {
	if j.plan != nil {
		j.plan.release()
	}
	j.calls, j.plan, j.sig, j.alias, j.eng = 0, nil, nil, nil, nil
}

// release frees the buffers the plan holds between calls.
func (p *jitPlan) release() {
	for i, b := range p.held {
		if b != nil {
			b.Free()
			p.held[i] = nil
		}
	}
}

// capture is what the engine records while a Jit captures.
type capture struct {
	steps []capStep
}

type capStep struct {
	item  compiledItem // nil prog: a copy of args[0] into args[1]
	args  []backend.Buffer
	vars  []int64 // the variables' values (item.vars)
	rands []tensor.RandArg
	alloc bool // args[0] was allocated for this launch
	dtype ir.DType
	size  int
}

func (c *capture) launch(it *compiledItem, args []backend.Buffer, vars []int64, rands []tensor.RandArg, alloc bool) {
	c.steps = append(c.steps, capStep{item: *it, args: args, vars: slices.Clone(vars), rands: rands, alloc: alloc, dtype: it.dtype, size: it.size})
}

func (c *capture) copy(src, dst backend.Buffer, dt ir.DType, size int) {
	c.steps = append(c.steps, capStep{args: []backend.Buffer{src, dst}, dtype: dt, size: size})
}

// A replay plan.
type jitPlan struct {
	steps   []jitStep
	nslots  int
	outs    []jitOut
	seed    uint64 // the random stream's seed and counter when captured
	advance uint64 // random tensors the function creates per call
	// out marks the slots the function returns: they are allocated afresh
	// on each call (the caller keeps them). The other slots live only
	// inside a call, so held keeps them from one replay to the next, as
	// tinygrad's TinyJit does: a decode step made ~100 allocations per
	// token for them.
	out  []bool
	held []backend.Buffer
	// owned marks the outputs that are such a slot returned once: the
	// replay's tensor for it alone holds the memory (FromDeviceOwned).
	owned []bool
	// One call's launch arguments, reused by the next (the engine's lock
	// keeps calls apart): per launch two slices were most of a decode
	// step's garbage.
	args    []backend.Buffer
	vars    []int64
	pending []backend.Launch
	batched []int // pending's steps
	times   []time.Duration
}

const (
	refInput = iota
	refSlot
	refExternal
)

type bufRef struct {
	kind, idx int
	buf       backend.Buffer // refExternal
}

type randRef struct {
	inside bool   // created by the function: new numbers per call
	offset uint64 // its counter minus the counter at the call's start
	fixed  tensor.RandArg
}

type jitStep struct {
	item  compiledItem
	copy  bool
	args  []bufRef
	alloc int     // slot allocated for args[0] (-1: none)
	vars  []int64 // the variables' values when captured (item.vars): kept unless an input binds them anew
	rands []randRef
	dtype ir.DType
	size  int
}

type jitOut struct {
	ref   bufRef
	dtype ir.DType
	shape []int
}

// Call runs, captures or replays the function on inputs.
func (j *Jit) Call(inputs ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	for i, x := range inputs {
		if x == nil {
			return nil, fmt.Errorf("TinyJit %s: input %d is nil", j.Name, i)
		}
		if err := x.Err(); err != nil {
			return nil, err
		}
		if x.Context() != j.ctx {
			return nil, fmt.Errorf("TinyJit %s: input %d belongs to another context (run) than the TinyJit", j.Name, i)
		}
	}
	e, ok := j.ctx.Engine().(*Engine)
	if !ok { // tracing (tgc emit) or no engine: nothing to capture
		return j.runPlain(inputs)
	}
	if j.eng != nil && j.eng != e {
		return nil, fmt.Errorf("TinyJit %s: captured on device %s, called with another engine installed (make a new TinyJit)", j.Name, j.eng.Dev.Name())
	}
	if err := j.checkInputs(inputs); err != nil {
		return nil, err
	}
	// Inputs are realized and on the device before the function runs;
	// bound variables (VarTensor) are passed to the kernels as vars.
	var tensors []*tensor.Tensor
	bind := map[tensor.Variable]int{}
	for _, x := range inputs {
		if v, ok := x.BoundVar(); ok {
			bind[v.Var] = v.Val
			continue
		}
		tensors = append(tensors, x)
	}
	if err := tensor.RealizeAll(tensors...); err != nil {
		return nil, err
	}
	bufs := make([]backend.Buffer, len(inputs))
	for i, x := range inputs {
		if _, ok := x.BoundVar(); ok {
			continue
		}
		b, err := e.DeviceBuffer(x.Node())
		if err != nil {
			return nil, fmt.Errorf("TinyJit %s: input %d: %w", j.Name, i, err)
		}
		bufs[i] = b
	}
	alias := aliasPattern(bufs)
	switch {
	case j.calls == 0:
		j.eng, j.alias = e, alias
		outs, err := j.guarded(e, inputs, nil)
		if err != nil {
			return nil, err
		}
		j.calls++
		return outs, nil
	case j.plan == nil:
		if !slices.Equal(alias, j.alias) {
			return nil, j.aliasError()
		}
		seed, ctr := j.ctx.RandState()
		cap := &capture{}
		outs, err := j.guarded(e, inputs, cap)
		if err != nil {
			return nil, err
		}
		_, end := j.ctx.RandState()
		plan, err := buildPlan(e, cap, bufs, outs, seed, ctr, end)
		if err != nil {
			return nil, fmt.Errorf("TinyJit %s: %w", j.Name, err)
		}
		j.plan = plan
		j.calls++
		if e.Opts.Debug >= 1 {
			fmt.Fprintf(e.Opts.Out, "TinyJit %s: captured %s\n", j.Name, plural(len(plan.steps), "launch"))
		}
		return outs, nil
	}
	if !slices.Equal(alias, j.alias) {
		return nil, j.aliasError()
	}
	j.calls++
	return e.replay(j.ctx, j.plan, bufs, bind)
}

// Call0 is Call with the inputs as a slice: a JitFunc itself.
func (j *Jit) Call0(inputs []*tensor.Tensor) ([]*tensor.Tensor, error) { return j.Call(inputs...) }

func (j *Jit) runPlain(inputs []*tensor.Tensor) ([]*tensor.Tensor, error) {
	outs, err := j.fn(inputs)
	if err != nil {
		return nil, err
	}
	return outs, tensor.RealizeAll(outs...)
}

// guarded runs the function with value reads refused, capturing launches
// into cap when it is not nil, and realizes its outputs.
func (j *Jit) guarded(e *Engine, inputs []*tensor.Tensor, cap *capture) ([]*tensor.Tensor, error) {
	e.mu.Lock()
	if e.capture != nil || e.noReadIn != "" {
		e.mu.Unlock()
		return nil, fmt.Errorf("TinyJit %s: called inside another TinyJit function (%s), which is not supported", j.Name, e.noReadIn)
	}
	e.capture, e.noReadIn = cap, j.Name
	e.mu.Unlock()
	// A value realized before the call is not handed out by interning to
	// the function's graph: its kernels must run (and be captured) now. A
	// caller that computed f(x) before jit(f)(x) got a capture without
	// them, and replays that returned stale values.
	j.ctx.MemoryWritten()
	defer func() {
		e.mu.Lock()
		e.capture, e.noReadIn = nil, ""
		e.mu.Unlock()
	}()
	outs, err := j.fn(inputs)
	if err != nil {
		return nil, err
	}
	for i, o := range outs {
		if o == nil {
			return nil, fmt.Errorf("TinyJit %s: output %d is nil", j.Name, i)
		}
	}
	if err := tensor.RealizeAll(outs...); err != nil {
		return nil, err
	}
	return outs, nil
}

func (j *Jit) checkInputs(inputs []*tensor.Tensor) error {
	if j.calls == 0 {
		j.sig = nil
		for _, x := range inputs {
			v, _ := x.BoundVar()
			j.sig = append(j.sig, inputSig{x.DType(), x.Shape(), v.Var})
		}
		return nil
	}
	if len(inputs) != len(j.sig) {
		return fmt.Errorf("TinyJit %s: called with %d tensor inputs, but it was captured with %d", j.Name, len(inputs), len(j.sig))
	}
	for i, x := range inputs {
		s := j.sig[i]
		if v, _ := x.BoundVar(); v.Var != s.v {
			if s.v.Name != "" {
				return fmt.Errorf("TinyJit %s: input %d must be the variable %s, as when captured", j.Name, i, s.v)
			}
			return fmt.Errorf("TinyJit %s: input %d is the variable %s, but the function was captured with a tensor there", j.Name, i, v.Var)
		}
		if x.DType() != s.dtype || !slices.Equal(x.Shape(), s.shape) {
			return fmt.Errorf("TinyJit %s: input %d is %s %s, but the function was captured with %s %s: a captured function replays fixed kernels, so every call needs the same input shapes and dtypes (use another TinyJit for the new shape)",
				j.Name, i, x.DType(), tensor.FormatShape(x.Shape()), s.dtype, tensor.FormatShape(s.shape))
		}
	}
	return nil
}

func (j *Jit) aliasError() error {
	return fmt.Errorf("TinyJit %s: the inputs share buffers differently from the captured call (the same tensor passed twice, or not): pass distinct tensors, as when captured", j.Name)
}

func aliasPattern(bufs []backend.Buffer) []int {
	out := make([]int, len(bufs))
	for i, b := range bufs {
		out[i] = i
		if b == nil { // a variable
			continue
		}
		for k := range i {
			if bufs[k] == b {
				out[i] = k
				break
			}
		}
	}
	return out
}

// buildPlan classifies the captured buffers.
func buildPlan(e *Engine, cap *capture, inputs []backend.Buffer, outs []*tensor.Tensor, seed, ctr0, ctrEnd uint64) (*jitPlan, error) {
	p := &jitPlan{seed: seed, advance: ctrEnd - ctr0}
	slots := map[backend.Buffer]int{}
	classify := func(b backend.Buffer) bufRef {
		for i, in := range inputs {
			if in != nil && in == b {
				return bufRef{kind: refInput, idx: i}
			}
		}
		if s, ok := slots[b]; ok {
			return bufRef{kind: refSlot, idx: s}
		}
		return bufRef{kind: refExternal, buf: b}
	}
	for _, cs := range cap.steps {
		st := jitStep{item: cs.item, copy: cs.item.prog == nil, alloc: -1, vars: cs.vars, dtype: cs.dtype, size: cs.size}
		if cs.alloc {
			slots[cs.args[0]] = p.nslots
			st.alloc = p.nslots
			p.nslots++
		}
		for _, a := range cs.args {
			st.args = append(st.args, classify(a))
		}
		for _, r := range cs.rands {
			if r.Seed == seed && r.Counter > ctr0 && r.Counter <= ctrEnd {
				st.rands = append(st.rands, randRef{inside: true, offset: r.Counter - ctr0})
			} else {
				st.rands = append(st.rands, randRef{fixed: r})
			}
		}
		p.steps = append(p.steps, st)
	}
	for i, o := range outs {
		b, err := e.DeviceBuffer(o.Node())
		if err != nil {
			return nil, fmt.Errorf("output %d: %w", i, err)
		}
		p.outs = append(p.outs, jitOut{ref: classify(b), dtype: o.DType(), shape: o.Shape()})
	}
	p.out, p.held = make([]bool, p.nslots), make([]backend.Buffer, p.nslots)
	nargs, nvars := 0, 0
	for _, st := range p.steps {
		nargs += len(st.args)
		nvars += len(st.vars) + 2*len(st.rands)
	}
	p.args, p.vars = make([]backend.Buffer, nargs), make([]int64, nvars)
	p.pending, p.batched, p.times = make([]backend.Launch, 0, len(p.steps)), make([]int, 0, len(p.steps)), make([]time.Duration, len(p.steps))
	returned := map[int]int{} // outputs per slot
	for _, o := range p.outs {
		if o.ref.kind == refSlot {
			p.out[o.ref.idx] = true
			returned[o.ref.idx]++
		}
	}
	p.owned = make([]bool, len(p.outs))
	for i, o := range p.outs {
		p.owned[i] = o.ref.kind == refSlot && returned[o.ref.idx] == 1
	}
	p.shareSlots()
	return p, nil
}

// shareSlots gives slots whose lives do not overlap one buffer (tinygrad's
// TinyJit memory planner): a slot lives from the step that allocates it to
// the last step that reads it, and a later slot of the same dtype and size
// takes a buffer whose slot's last step came before its own first (never
// one its own kernel reads: that kernel's restrict pointers). The slots the
// function returns keep buffers of their own. A decode step of a 110M
// model held 26 buffers for its attention scores (one a layer) and 89 for
// its vectors of 768; one at a time is live.
func (p *jitPlan) shareSlots() {
	type class struct {
		dt   ir.DType
		size int
	}
	first, last := make([]int, p.nslots), make([]int, p.nslots)
	sizes := make([]class, p.nslots)
	for s := range first {
		first[s], last[s] = -1, -1
	}
	for i, st := range p.steps {
		if st.alloc >= 0 {
			first[st.alloc], sizes[st.alloc] = i, class{st.dtype, st.size}
		}
		for _, r := range st.args {
			if r.kind == refSlot {
				last[r.idx] = max(last[r.idx], i)
			}
		}
	}
	phys := make([]int, p.nslots) // slot → its buffer's index
	var free []int                // buffers whose slot has ended, by class
	var owner []int               // per buffer: the slot now using it
	order := make([]int, 0, p.nslots)
	for s := range p.nslots {
		order = append(order, s)
	}
	slices.SortStableFunc(order, func(a, b int) int { return first[a] - first[b] })
	for _, s := range order {
		at := -1
		if !p.out[s] && first[s] >= 0 {
			for k, b := range free {
				if sizes[owner[b]] == sizes[s] && last[owner[b]] < first[s] {
					at = b
					free = slices.Delete(free, k, k+1)
					break
				}
			}
		}
		if at < 0 {
			at = len(owner)
			owner = append(owner, s)
		}
		owner[at] = s
		phys[s] = at
		if !p.out[s] && first[s] >= 0 {
			free = append(free, at)
		}
	}
	if len(owner) == p.nslots {
		return
	}
	for i := range p.steps {
		st := &p.steps[i]
		if st.alloc >= 0 {
			st.alloc = phys[st.alloc]
		}
		for k, r := range st.args {
			if r.kind == refSlot {
				st.args[k].idx = phys[r.idx]
			}
		}
	}
	out := make([]bool, len(owner))
	for s, o := range p.out {
		out[phys[s]] = out[phys[s]] || o
	}
	for i, o := range p.outs {
		if o.ref.kind == refSlot {
			p.outs[i].ref.idx = phys[o.ref.idx]
		}
	}
	p.nslots, p.out, p.held = len(owner), out, make([]backend.Buffer, len(owner))
}

// DeviceBuffer returns the device buffer of a realized node, uploading its
// host data on first use.
func (e *Engine) DeviceBuffer(n *tensor.Node) (backend.Buffer, error) {
	if n.Realized() == nil {
		return nil, errors.New("the tensor is not realized")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.deviceBuffer(n)
}

// Upload puts a realized node's host data on the device (tensor.Upload).
func (e *Engine) Upload(n *tensor.Node) error {
	_, err := e.DeviceBuffer(n)
	return err
}

// replay launches a captured plan on new input buffers.
func (e *Engine) replay(ctx *tensor.Context, p *jitPlan, inputs []backend.Buffer, bind map[tensor.Variable]int) ([]*tensor.Tensor, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	slots := make([]backend.Buffer, p.nslots)
	copy(slots, p.held)
	resolve := func(r bufRef) backend.Buffer {
		switch r.kind {
		case refInput:
			return inputs[r.idx]
		case refSlot:
			return slots[r.idx]
		}
		return r.buf
	}
	// The replay writes parameters and optimizer state in place, as the
	// function's assigns did when it ran: values realized before it are
	// not handed out again by interning (see tensor.Context.MemoryWritten).
	defer ctx.MemoryWritten()
	seed, base := ctx.RandState()
	var total time.Duration
	// The kernels between copies go to the device as one batch where it
	// takes batches (backend.Batcher: the CPU's launcher runs a step's
	// launches in one call), else one launch at a time.
	batcher, _ := e.Dev.(backend.Batcher)
	if batcher != nil {
		batcher.Wake()
	}
	// pending's steps in p.steps (a compiledItem is too big to copy per launch)
	pending, steps, times := p.pending[:0], p.batched[:0], p.times
	ao, vo := 0, 0      // the next launch's arguments in p.args, p.vars
	defer clear(p.args) // no buffer kept alive by the scratch
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		times := times[:len(pending)]
		if err := batcher.RunBatch(pending, times); err != nil {
			return fmt.Errorf("kernels %s…%s: %w", p.steps[steps[0]].item.name, p.steps[steps[len(steps)-1]].item.name, err)
		}
		for i, dt := range times {
			total += dt
			if e.Opts.Debug >= 2 {
				e.launchLine(e.Stats.Kernels, p.steps[steps[i]].item, dt)
			}
			e.Stats.Kernels++
			e.Stats.FLOPs += p.steps[steps[i]].item.flops
		}
		pending, steps = pending[:0], steps[:0]
		return nil
	}
	for si, st := range p.steps {
		if st.copy {
			if err := flush(); err != nil {
				return nil, err
			}
			if err := copyBuffer(resolve(st.args[1]), resolve(st.args[0]), st.dtype, st.size); err != nil {
				return nil, err
			}
			continue
		}
		if st.alloc >= 0 && (slots[st.alloc] == nil || p.out[st.alloc]) {
			b, err := e.Dev.Alloc(st.dtype, st.size)
			if err != nil {
				return nil, fmt.Errorf("kernel %s: %w", st.item.name, err)
			}
			slots[st.alloc] = b
			if !p.out[st.alloc] {
				p.held[st.alloc] = b
			}
		}
		args := p.args[ao : ao+len(st.args) : ao+len(st.args)]
		ao += len(st.args)
		for i, r := range st.args {
			args[i] = resolve(r)
		}
		nv := len(st.vars) + 2*len(st.rands)
		vars := p.vars[vo : vo+nv : vo+nv]
		vo += nv
		for k, v := range st.item.vars {
			if val, ok := bind[v]; ok {
				vars[k] = int64(val)
			} else {
				vars[k] = st.vars[k]
			}
		}
		for k, r := range st.rands {
			at := len(st.vars) + 2*k
			if r.inside {
				vars[at], vars[at+1] = int64(seed), int64(base+r.offset)
			} else {
				vars[at], vars[at+1] = int64(r.fixed.Seed), int64(r.fixed.Counter)
			}
		}
		if batcher != nil {
			pending = append(pending, backend.Launch{Prog: st.item.prog, Bufs: args, Vars: vars})
			steps = append(steps, si)
			continue
		}
		dt, err := st.item.prog.Run(args, vars)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", st.item.name, err)
		}
		total += dt
		if e.Opts.Debug >= 2 {
			e.launchLine(e.Stats.Kernels, st.item, dt)
		}
		e.Stats.Kernels++
		e.Stats.FLOPs += st.item.flops
	}
	if err := flush(); err != nil {
		return nil, err
	}
	ctx.AdvanceRand(p.advance)
	e.Stats.DeviceTime += total
	e.Stats.JitReplays++
	outs := make([]*tensor.Tensor, len(p.outs))
	for i, o := range p.outs {
		if p.owned[i] {
			// allocated in this replay for this output alone: the caller
			// may give it back (Tensor.Release) for the next replay
			outs[i] = ctx.FromDeviceOwned(o.dtype, o.shape, resolve(o.ref))
			continue
		}
		outs[i] = ctx.FromDevice(o.dtype, o.shape, resolve(o.ref))
	}
	if e.Opts.Debug >= 1 {
		fmt.Fprintf(e.Opts.Out, "replayed %s on %s in %.3f ms\n", plural(len(p.steps), "launch"), e.Dev.Name(), float64(total.Microseconds())/1000)
	}
	return outs, nil
}
