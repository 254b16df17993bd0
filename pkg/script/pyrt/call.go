// Package pyrt is the Python runtime that .tg scripts run on top of
// Starlark: the calling convention of builtins, modules, names with
// suggestions, slices and Ellipsis, and Python's string formatting. It knows
// nothing about tensors; the packages that bind tensors and nn build on it.
package pyrt

import (
	"fmt"

	"go.starlark.net/starlark"
)

// Call is one invocation of a builtin or a method.
type Call struct {
	Thread *starlark.Thread
	Name   string
	Args   starlark.Tuple
	Kwargs []starlark.Tuple
	Self   starlark.Value // the receiver of a method call, or nil
}

// Unpack is starlark.UnpackArgs for this call.
func (c *Call) Unpack(pairs ...any) error {
	return starlark.UnpackArgs(c.Name, c.Args, c.Kwargs, pairs...)
}

// NoArgs checks that the call has no arguments.
func (c *Call) NoArgs() error { return c.Unpack() }

// Func is the Go side of a builtin.
type Func func(c *Call) (starlark.Value, error)

// Builtin makes a Starlark builtin whose Go panics become errors at the
// calling line.
func Builtin(name string, fn Func) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
		c := &Call{Thread: th, Name: name, Args: args, Kwargs: kwargs}
		defer Recover(c, &err)
		return fn(c)
	})
}

// Host is what the runtime needs from the session that runs a script.
type Host interface {
	// InternalError is the message for a Go panic in a builtin (a bug in
	// tgc, never the script's fault).
	InternalError(r any) string
}

const hostKey = "tgc.host"

// SetHost attaches the session to a thread.
func SetHost(th *starlark.Thread, h Host) { th.SetLocal(hostKey, h) }

// HostOf is the session of a thread, or nil.
func HostOf(th *starlark.Thread) Host {
	if th == nil {
		return nil
	}
	h, _ := th.Local(hostKey).(Host)
	return h
}

// Recover turns a panic in a builtin into an internal error; use it as
// defer Recover(c, &err).
func Recover(c *Call, err *error) {
	r := recover()
	if r == nil {
		return
	}
	if h := HostOf(c.Thread); h != nil {
		*err = fmt.Errorf("%s: %s", c.Name, h.InternalError(r))
		return
	}
	*err = fmt.Errorf("%s: internal error: %v", c.Name, r)
}
