package pyrt

import (
	"fmt"

	"go.starlark.net/starlark"
)

// Context managers. The frontend turns "with A() as a, B():" into a for
// loop over With(A(), B()): the call enters the managers, the loop runs its
// body once, and the iterator's Done, which Starlark calls however the loop
// ends (normally, by return or by an error), exits them in reverse order.
// Starlark calls Done for the loops of a frame outermost first when an error
// unwinds it, so each thread keeps a stack of entered blocks and exiting
// one first exits those entered after it.

// ContextManager is a value usable in a with statement.
type ContextManager interface {
	starlark.Value
	Enter(th *starlark.Thread) (starlark.Value, error)
	Exit(th *starlark.Thread) error
}

// warner is implemented by the session to report an error that has no
// caller to return to (an __exit__ that fails).
type warner interface {
	Warnf(format string, args ...any)
}

const withKey = "tgc.with"

// block is an entered with statement.
type block struct {
	managers []ContextManager
	value    starlark.Value
	exited   bool
	th       *starlark.Thread
}

func (b *block) exit() {
	if b.exited {
		return
	}
	b.exited = true
	for i := len(b.managers) - 1; i >= 0; i-- {
		if err := b.managers[i].Exit(b.th); err != nil {
			if w, ok := HostOf(b.th).(warner); ok {
				w.Warnf("leaving a with block: %v", err)
			}
		}
	}
}

// blocks is the stack of entered with statements of a thread.
type blocks struct{ stack []*block }

func blocksOf(th *starlark.Thread) *blocks {
	if b, ok := th.Local(withKey).(*blocks); ok {
		return b
	}
	b := &blocks{}
	th.SetLocal(withKey, b)
	return b
}

// leave exits b and every block entered after it, newest first.
func (bs *blocks) leave(b *block) {
	for i := len(bs.stack) - 1; i >= 0; i-- {
		top := bs.stack[i]
		top.exit()
		if top == b {
			bs.stack = bs.stack[:i]
			return
		}
	}
	b.exit() // already removed by an outer block's exit
}

// With is the builtin behind a with statement: it enters the managers and
// returns the one-iteration loop whose end exits them.
func With(c *Call) (starlark.Value, error) {
	if len(c.Kwargs) > 0 || len(c.Args) == 0 {
		return nil, fmt.Errorf("with: want one or more context managers")
	}
	b := &block{th: c.Thread}
	var values starlark.Tuple
	for _, a := range c.Args {
		m, ok := a.(ContextManager)
		if !ok {
			b.exit()
			return nil, fmt.Errorf("with: a %s is not a context manager (with works with Context(...), Tensor.train(), Tensor.test() and objects with __enter__ and __exit__)", a.Type())
		}
		v, err := m.Enter(c.Thread)
		if err != nil {
			b.exit()
			return nil, err
		}
		b.managers = append(b.managers, m)
		values = append(values, v)
	}
	b.value = values[0]
	if len(values) > 1 {
		b.value = values
	}
	bs := blocksOf(c.Thread)
	bs.stack = append(bs.stack, b)
	return &withLoop{b: b, bs: bs}, nil
}

// withLoop is the iterable of a with block.
type withLoop struct {
	b  *block
	bs *blocks
}

func (w *withLoop) String() string             { return "<with block>" }
func (w *withLoop) Type() string               { return "with" }
func (w *withLoop) Freeze()                    {}
func (w *withLoop) Truth() starlark.Bool       { return starlark.True }
func (w *withLoop) Hash() (uint32, error)      { return 0, fmt.Errorf("unhashable type: with") }
func (w *withLoop) Iterate() starlark.Iterator { return &withIter{w: w} }

type withIter struct {
	w    *withLoop
	done bool
}

func (it *withIter) Next(p *starlark.Value) bool {
	if it.done {
		return false
	}
	it.done = true
	*p = it.w.b.value
	return true
}

func (it *withIter) Done() { it.w.bs.leave(it.w.b) }

// ManagedFunc is a function decorated with a context manager
// (@Context(TRAINING=1), @Tensor.train()): each call runs inside it.
type ManagedFunc struct {
	m  ContextManager
	fn starlark.Callable
}

var (
	_ starlark.Callable = (*ManagedFunc)(nil)
	_ Binder            = (*ManagedFunc)(nil)
)

// Decorate wraps fn in m.
func Decorate(m ContextManager, fn starlark.Value) (starlark.Value, error) {
	f, ok := fn.(starlark.Callable)
	if !ok {
		return nil, fmt.Errorf("%s: as a decorator it takes a function, got %s", m, fn.Type())
	}
	return &ManagedFunc{m: m, fn: f}, nil
}

func (f *ManagedFunc) String() string        { return "<function " + f.Name() + ">" }
func (f *ManagedFunc) Type() string          { return "function" }
func (f *ManagedFunc) Name() string          { return DisplayName(f.fn) }
func (f *ManagedFunc) Freeze()               {}
func (f *ManagedFunc) Truth() starlark.Bool  { return starlark.True }
func (f *ManagedFunc) Hash() (uint32, error) { return f.fn.Hash() }

// Bind makes a method: the wrapped function with self given.
func (f *ManagedFunc) Bind(self starlark.Value) starlark.Value {
	if o, ok := self.(*Instance); ok {
		return &ManagedFunc{m: f.m, fn: bindCallable(o, f.fn)}
	}
	return f
}

// bindCallable binds a function (or a binder) to an instance.
func bindCallable(o *Instance, fn starlark.Callable) starlark.Callable {
	if c, ok := bind(o, fn).(starlark.Callable); ok {
		return c
	}
	return fn
}

func (f *ManagedFunc) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
	if _, err := f.m.Enter(th); err != nil {
		return nil, err
	}
	defer func() {
		if xerr := f.m.Exit(th); xerr != nil && err == nil {
			err = xerr
		}
	}()
	return starlark.Call(th, f.fn, args, kwargs)
}

// Enter and Exit of an instance call its __enter__ and __exit__.
func (o *Instance) Enter(th *starlark.Thread) (starlark.Value, error) {
	v, ok := o.class.lookup("__enter__")
	if !ok {
		return nil, fmt.Errorf("with: a %s object is not a context manager (the class has no __enter__)", o.class.name)
	}
	if _, ok := o.class.lookup("__exit__"); !ok {
		return nil, fmt.Errorf("with: a %s object is not a context manager (the class has no __exit__)", o.class.name)
	}
	return starlark.Call(th, bind(o, v), nil, nil)
}

func (o *Instance) Exit(th *starlark.Thread) error {
	v, _ := o.class.lookup("__exit__")
	_, err := starlark.Call(th, bind(o, v), starlark.Tuple{starlark.None, starlark.None, starlark.None}, nil)
	return err
}
