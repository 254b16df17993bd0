package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"weak"
)

// Context is the state of one run: the engine that realizes its tensors,
// the random stream, tinygrad's training flag, the tensors marked for
// gradients, the losses backward was called on, the hook that tells which
// script position is creating nodes, and the intern table of its graph.
//
// Every node belongs to one context, and so does every tensor but one that
// carries an error: creation functions are Context methods (ctx.Rand,
// ctx.FromFloats, ctx.Const...), every other op works in its operands'
// context, and an op on tensors of two contexts is an error. Two runs in
// one process (a server's requests, tests in parallel, a model loaded by a
// script) share nothing unless they share a context; nodes of different
// contexts are never interned together, so a value one run realized (on
// its device) is never seen by another.
//
// A context is safe for concurrent use, but one run at a time should use
// it: the random stream and the training flag are the run's.
type Context struct {
	engine Engine // immutable: a run realizes on one engine
	pos    atomic.Pointer[func() Pos]

	training atomic.Bool

	rngMu         sync.Mutex
	seed, counter uint64

	internMu sync.Mutex
	intern   map[string]weak.Pointer[Node]
	writes   atomic.Uint64 // in-place writes of realized memory so far (MemoryWritten)

	gradMu sync.Mutex
	grads  map[weak.Pointer[Tensor]]bool // registered tensors; true once given their own node

	lossMu sync.Mutex
	losses []weak.Pointer[Tensor]
}

// NewContext makes a context whose tensors the engine realizes (nil: none
// can be realized, e.g. to check a script's shapes). Training is off and
// the random stream starts at seed 0.
func NewContext(e Engine) *Context {
	return &Context{engine: e, intern: map[string]weak.Pointer[Node]{}, grads: map[weak.Pointer[Tensor]]bool{}}
}

// MemoryWritten records that realized memory of the context was written in
// place (an assign, a TinyJit replay; engine use). A value realized before
// may have read the old memory, so interning does not hand it out for a
// graph built afterwards: the graph is computed anew.
func (c *Context) MemoryWritten() { c.writes.Add(1) }

// Engine returns the context's engine (nil if it has none).
func (c *Context) Engine() Engine { return c.engine }

// Context returns the context of t's node (nil when t carries an error).
func (t *Tensor) Context() *Context {
	if t.node == nil {
		return nil
	}
	return t.node.ctx
}

// SetPosFunc installs the function that tells which script position is
// creating nodes (the .tg frontend sets it for its run; nil removes it).
func (c *Context) SetPosFunc(f func() Pos) {
	if f == nil {
		c.pos.Store(nil)
		return
	}
	c.pos.Store(&f)
}

func (c *Context) currentPos() Pos {
	if f := c.pos.Load(); f != nil {
		return (*f)()
	}
	return Pos{}
}

// ---- training flag ----

// Training is tinygrad's Tensor.training: dropout and batch statistics are
// used only while it is true. Optimizers do not set it; training loops do.
func (c *Context) Training() bool { return c.training.Load() }

// SetTraining sets the training flag and returns its previous value.
func (c *Context) SetTraining(b bool) bool { return c.training.Swap(b) }

// ---- random stream ----

// ManualSeed resets the random stream: the same seed gives the same numbers
// on every device.
func (c *Context) ManualSeed(s uint64) {
	c.rngMu.Lock()
	c.seed, c.counter = s, 0
	c.rngMu.Unlock()
}

// RandState returns the seed and the counter of the last random tensor.
func (c *Context) RandState() (seed, counter uint64) {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.seed, c.counter
}

// AdvanceRand moves the random stream on by n tensors, as if Rand had been
// called n times (a TinyJit replay draws the numbers inside its kernels).
func (c *Context) AdvanceRand(n uint64) {
	c.rngMu.Lock()
	c.counter += n
	c.rngMu.Unlock()
}

// nextRand draws the identity of the next random tensor.
func (c *Context) nextRand() RandArg {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	c.counter++
	return RandArg{Seed: c.seed, Counter: c.counter}
}

// ---- gradient leaves ----

// register records t as a tensor SetRequiresGrad was called on and
// reports whether it had been given its own node before.
func (c *Context) register(t *Tensor, own bool) bool {
	wp := weak.Make(t)
	c.gradMu.Lock()
	had, registered := c.grads[wp]
	c.grads[wp] = had || own
	c.gradMu.Unlock()
	if !registered {
		runtime.AddCleanup(t, func(wp weak.Pointer[Tensor]) {
			c.gradMu.Lock()
			delete(c.grads, wp)
			c.gradMu.Unlock()
		}, wp)
	}
	return had
}

func (c *Context) registered(t *Tensor) bool {
	c.gradMu.Lock()
	defer c.gradMu.Unlock()
	_, ok := c.grads[weak.Make(t)]
	return ok
}

// GradTensors returns the live tensors of the context registered by
// SetRequiresGrad that still require a gradient.
func (c *Context) GradTensors() []*Tensor {
	c.gradMu.Lock()
	defer c.gradMu.Unlock()
	var out []*Tensor
	for wp := range c.grads {
		if t := wp.Value(); t != nil && t.RequiresGrad && t.err == nil {
			out = append(out, t)
		}
	}
	return out
}

// ---- losses waiting for the optimizer step ----

// NoteBackward remembers a loss that backward was called on, so that the
// next optimizer step realizes it with the update (reading it after the
// step, as tinygrad's training loops do, would otherwise read parameters
// the step overwrote in place).
func (c *Context) NoteBackward(loss *Tensor) {
	c.lossMu.Lock()
	defer c.lossMu.Unlock()
	c.losses = append(c.losses, weak.Make(loss))
	if len(c.losses) > 64 { // a loop that never steps: keep the newest
		c.losses = append([]weak.Pointer[Tensor]{}, c.losses[len(c.losses)-32:]...)
	}
}

// TakeBackwardLosses returns the live, unrealized losses noted since the
// last call and forgets them.
func (c *Context) TakeBackwardLosses() []*Tensor {
	c.lossMu.Lock()
	defer c.lossMu.Unlock()
	var out []*Tensor
	for _, wp := range c.losses {
		if t := wp.Value(); t != nil && t.err == nil && t.node.Realized() == nil {
			out = append(out, t)
		}
	}
	c.losses = nil
	return out
}
