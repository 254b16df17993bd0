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

// Tracing reports whether the installed engine only records a plan.
func Tracing() bool {
	e, ok := tensor.CurrentEngine().(interface{ Tracing() bool })
	return ok && e.Tracing()
}

// DeviceName is the device of the installed engine.
func DeviceName() string {
	switch e := tensor.CurrentEngine().(type) {
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
