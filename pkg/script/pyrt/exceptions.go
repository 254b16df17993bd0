package pyrt

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"
)

// Exceptions. A script has no try/except, so raising one stops the script:
// raise ValueError("bad shape") is the error "ValueError: bad shape" at the
// raise statement, and a failed assert is "AssertionError: message".

// ExceptionClass is a builtin exception class (ValueError, ...).
type ExceptionClass struct {
	name string
	base *ExceptionClass
}

var _ starlark.Callable = (*ExceptionClass)(nil)

func (e *ExceptionClass) String() string        { return "<class " + e.name + ">" }
func (e *ExceptionClass) Type() string          { return "type" }
func (e *ExceptionClass) Name() string          { return e.name }
func (e *ExceptionClass) Freeze()               {}
func (e *ExceptionClass) Truth() starlark.Bool  { return starlark.True }
func (e *ExceptionClass) Hash() (uint32, error) { return starlark.String(e.name).Hash() }

func (e *ExceptionClass) subclassOf(b *ExceptionClass) bool {
	for c := e; c != nil; c = c.base {
		if c == b {
			return true
		}
	}
	return false
}

func (e *ExceptionClass) CallInternal(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(kwargs) > 0 {
		return nil, fmt.Errorf("%s takes no keyword arguments", e.name)
	}
	return &Exception{class: e, args: args}, nil
}

// Exception is a raised (or raisable) exception value.
type Exception struct {
	class *ExceptionClass
	args  starlark.Tuple
}

func (e *Exception) String() string {
	return e.class.name + "(" + strings.TrimSuffix(strings.TrimPrefix(e.args.String(), "("), ")") + ")"
}
func (e *Exception) Type() string          { return e.class.name }
func (e *Exception) Freeze()               {}
func (e *Exception) Truth() starlark.Bool  { return starlark.True }
func (e *Exception) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: %s", e.class.name) }
func (e *Exception) AttrNames() []string   { return []string{"args"} }
func (e *Exception) Attr(name string) (starlark.Value, error) {
	if name == "args" {
		return e.args, nil
	}
	return nil, nil
}

// message is str(e): the one argument, or the tuple of them.
func (e *Exception) message() string {
	switch len(e.args) {
	case 0:
		return ""
	case 1:
		if s, ok := e.args[0].(starlark.String); ok {
			return string(s)
		}
		return e.args[0].String()
	}
	return e.args.String()
}

// Exceptions are the predeclared exception classes.
var Exceptions = func() starlark.StringDict {
	base := &ExceptionClass{name: "Exception"}
	d := starlark.StringDict{"Exception": base}
	lookup := &ExceptionClass{name: "LookupError", base: base}
	d["LookupError"] = lookup
	for _, n := range []string{"ValueError", "TypeError", "RuntimeError", "AssertionError", "AttributeError",
		"ZeroDivisionError", "NotImplementedError", "StopIteration", "ArithmeticError", "OverflowError"} {
		d[n] = &ExceptionClass{name: n, base: base}
	}
	d["KeyError"] = &ExceptionClass{name: "KeyError", base: lookup}
	d["IndexError"] = &ExceptionClass{name: "IndexError", base: lookup}
	return d
}()

// raised is the error of a raise statement.
func raised(e *Exception) error {
	if m := e.message(); m != "" {
		return fmt.Errorf("%s: %s", e.class.name, m)
	}
	return fmt.Errorf("%s", e.class.name)
}

// Raise is the builtin behind raise: raise ValueError("msg") or raise
// ValueError.
func Raise(c *Call) (starlark.Value, error) {
	if len(c.Args) != 1 || len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("raise: want one exception")
	}
	switch e := c.Args[0].(type) {
	case *Exception:
		return nil, raised(e)
	case *ExceptionClass:
		return nil, raised(&Exception{class: e})
	}
	return nil, fmt.Errorf("raise: exceptions must be ValueError(...) and the like, got a %s", c.Args[0].Type())
}

// truthChecker rejects values whose truth is ambiguous (a Tensor).
type truthChecker interface{ TruthError() error }

// Assert is the builtin behind assert cond[, msg]: the message is a
// function, evaluated only when the condition is false.
func Assert(c *Call) (starlark.Value, error) {
	if len(c.Args) < 1 || len(c.Args) > 2 || len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("assert: want a condition and an optional message")
	}
	if tc, ok := c.Args[0].(truthChecker); ok {
		if err := tc.TruthError(); err != nil {
			return nil, err
		}
	}
	if c.Args[0].Truth() {
		return starlark.None, nil
	}
	e := &Exception{class: Exceptions["AssertionError"].(*ExceptionClass)}
	if len(c.Args) == 2 {
		msg, err := starlark.Call(c.Thread, c.Args[1], nil, nil)
		if err != nil {
			return nil, err
		}
		e.args = starlark.Tuple{msg}
	}
	return nil, raised(e)
}
