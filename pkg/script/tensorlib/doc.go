// Package tensorlib binds tgc's tensors to .tg scripts: the Tensor value
// with its operators, properties and methods (tinygrad's names and keyword
// arguments), the Tensor class with its creation functions, dtypes,
// argument conversion, TinyJit, and the builtins that give comparisons,
// slices and conditions their tensor meaning.
package tensorlib

import (
	"sync/atomic"

	"go.starlark.net/starlark"

	"tgc/pkg/realize"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// tracer is implemented by the session: it warns, once per script line,
// that a value read in trace mode (tgc emit) reads as zeros.
type tracer interface{ WarnTraceRead() }

// WarnTraceRead warns about a value read in trace mode.
func WarnTraceRead(c *pyrt.Call) {
	if h, ok := pyrt.HostOf(c.Thread).(tracer); ok {
		h.WarnTraceRead()
	}
}

// contextHost is implemented by the session: the tensor context of its
// run (engine, random stream, training flag).
type contextHost interface{ Context() *tensor.Context }

// Context is the tensor context of the run making the call: the tensors
// the call creates live there.
func Context(c *pyrt.Call) *tensor.Context {
	if h, ok := pyrt.HostOf(c.Thread).(contextHost); ok {
		return h.Context()
	}
	panic("a builtin called outside a script run (no tensor context)")
}

// Tracing reports whether the context's engine only records a plan.
func Tracing(ctx *tensor.Context) bool {
	e, ok := ctx.Engine().(interface{ Tracing() bool })
	return ok && e.Tracing()
}

// DeviceName is the device of the context's engine.
func DeviceName(ctx *tensor.Context) string {
	switch e := ctx.Engine().(type) {
	case *realize.Engine:
		return e.Dev.Name()
	case *realize.Tracer:
		return e.Device
	}
	return "default"
}

var ids atomic.Uint32

// NextID is a new identity hash for a value that Python hashes by identity.
func NextID() uint32 { return ids.Add(1) }

var _ starlark.Value = (*Tensor)(nil)
