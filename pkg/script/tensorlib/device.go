package tensorlib

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"tgc/pkg/backend"
	"tgc/pkg/realize"
	"tgc/pkg/script/pyrt"
)

// tinygrad's Device, Context (with Tensor.train() and Tensor.test()) and
// GlobalCounters.

// ---- Context ----

// contextVar is one setting Context can change, in the run of a thread.
type contextVar struct {
	get func(th *starlark.Thread) int
	set func(th *starlark.Thread, v int)
}

// contextVars are the ContextVars of tinygrad that mean something in tgc.
var contextVars = map[string]contextVar{
	"TRAINING": {
		get: func(th *starlark.Thread) int { return b2i(training(th)) },
		set: func(th *starlark.Thread, v int) { setTraining(th, v != 0) },
	},
	"DEBUG": {
		get: func(th *starlark.Thread) int {
			if e := engineOf(th); e != nil {
				return e.Opts.Debug
			}
			return 0
		},
		set: func(th *starlark.Thread, v int) {
			if e := engineOf(th); e != nil {
				e.Opts.Debug = v
			}
		},
	},
	"BEAM": {
		get: func(th *starlark.Thread) int {
			if e := engineOf(th); e != nil {
				return e.Opts.Beam
			}
			return 0
		},
		set: func(th *starlark.Thread, v int) {
			if e := engineOf(th); e != nil {
				e.SetBeam(v)
			}
		},
	},
}

// training, setTraining and engineOf are the run state Context changes.
func training(th *starlark.Thread) bool       { return Context(&pyrt.Call{Thread: th}).Training() }
func setTraining(th *starlark.Thread, b bool) { Context(&pyrt.Call{Thread: th}).SetTraining(b) }
func engineOf(th *starlark.Thread) *realize.Engine {
	e, _ := Context(&pyrt.Call{Thread: th}).Engine().(*realize.Engine)
	return e
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// context is Context(TRAINING=1, DEBUG=2, BEAM=4), Tensor.train() or
// Tensor.test(): a context manager that sets the variables inside a with
// block, and a decorator that sets them around each call.
type context struct {
	desc  string
	names []string
	vals  []int
	saved [][]int // a stack: the same object may be entered again inside itself
}

var (
	_ pyrt.ContextManager = (*context)(nil)
	_ starlark.Callable   = (*context)(nil)
)

func (x *context) String() string        { return x.desc }
func (x *context) Type() string          { return "Context" }
func (x *context) Name() string          { return x.desc }
func (x *context) Freeze()               {}
func (x *context) Truth() starlark.Bool  { return starlark.True }
func (x *context) Hash() (uint32, error) { return starlark.String(x.desc).Hash() }

func (x *context) Enter(th *starlark.Thread) (starlark.Value, error) {
	old := make([]int, len(x.names))
	for i, n := range x.names {
		old[i] = contextVars[n].get(th)
		contextVars[n].set(th, x.vals[i])
	}
	x.saved = append(x.saved, old)
	return starlark.None, nil
}

func (x *context) Exit(th *starlark.Thread) error {
	n := len(x.saved)
	if n == 0 {
		return nil
	}
	old := x.saved[n-1]
	x.saved = x.saved[:n-1]
	for i := len(x.names) - 1; i >= 0; i-- {
		contextVars[x.names[i]].set(th, old[i])
	}
	return nil
}

// CallInternal decorates a function: @Context(TRAINING=1).
func (x *context) CallInternal(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 1 || len(kwargs) > 0 {
		return nil, fmt.Errorf("%s: used as a decorator, it takes one function", x.desc)
	}
	return pyrt.Decorate(x, args[0])
}

// ContextVars is tinygrad's Context(**vars).
func ContextVars(c *pyrt.Call) (starlark.Value, error) {
	if len(c.Args) > 0 {
		return nil, fmt.Errorf("Context: takes keyword arguments only, e.g. Context(DEBUG=2)")
	}
	known := make([]string, 0, len(contextVars))
	for n := range contextVars {
		known = append(known, n)
	}
	sort.Strings(known)
	x := &context{}
	var parts []string
	for _, kv := range c.Kwargs {
		name := string(kv[0].(starlark.String))
		if _, ok := contextVars[name]; !ok {
			return nil, fmt.Errorf("Context: unknown variable %s (tgc has %s)", name, strings.Join(known, ", "))
		}
		v, err := ToInt(kv[1])
		if err != nil {
			return nil, fmt.Errorf("Context: %s: %v", name, err)
		}
		if v < 0 {
			return nil, fmt.Errorf("Context: %s must not be negative, got %d", name, v)
		}
		x.names, x.vals = append(x.names, name), append(x.vals, v)
		parts = append(parts, fmt.Sprintf("%s=%d", name, v))
	}
	x.desc = "Context(" + strings.Join(parts, ", ") + ")"
	return x, nil
}

// trainFn is Tensor.train(mode=True): Context(TRAINING=mode).
func trainFn(c *pyrt.Call) (starlark.Value, error) {
	mode := true
	if err := c.Unpack("mode?", &mode); err != nil {
		return nil, err
	}
	return &context{desc: fmt.Sprintf("Tensor.train(%v)", starlark.Bool(mode)), names: []string{"TRAINING"}, vals: []int{b2i(mode)}}, nil
}

// testFn is Tensor.test(): Context(TRAINING=0).
func testFn(c *pyrt.Call) (starlark.Value, error) {
	if err := c.NoArgs(); err != nil {
		return nil, err
	}
	return &context{desc: "Tensor.test()", names: []string{"TRAINING"}, vals: []int{0}}, nil
}

// ---- Device ----

// deviceModule is Device: Device.DEFAULT is the device the script runs on,
// Device["CPU"] a device.
type deviceModule struct {
	current func() string // the name of the run's device
}

// NewDevice makes the Device of a run whose device is named by current.
func NewDevice(current func() string) starlark.Value { return deviceModule{current} }

var (
	_ starlark.HasAttrs    = deviceModule{}
	_ starlark.HasSetField = deviceModule{}
	_ starlark.Mapping     = deviceModule{}
)

func (deviceModule) String() string        { return "<Device>" }
func (deviceModule) Type() string          { return "Device" }
func (deviceModule) Freeze()               {}
func (deviceModule) Truth() starlark.Bool  { return starlark.True }
func (deviceModule) Hash() (uint32, error) { return 0xde1ce, nil }
func (deviceModule) AttrNames() []string   { return []string{"DEFAULT", "canonicalize"} }

func (d deviceModule) Attr(name string) (starlark.Value, error) {
	switch name {
	case "DEFAULT":
		return starlark.String(d.current()), nil
	case "canonicalize":
		return pyrt.Builtin("canonicalize", func(c *pyrt.Call) (starlark.Value, error) {
			var d string
			if err := c.Unpack("device", &d); err != nil {
				return nil, err
			}
			n, err := canonicalDevice(d)
			return starlark.String(n), err
		}), nil
	}
	return nil, fmt.Errorf("%s", pyrt.UnknownAttr("Device", "attribute", name, deviceModule{}.AttrNames()))
}

func (deviceModule) SetField(name string, _ starlark.Value) error {
	if name == "DEFAULT" {
		return fmt.Errorf("Device.DEFAULT cannot be set in a script: the device is chosen before it runs (tgc run --device %s, or DEVICE=...)", strings.Join(backend.Names(), "|"))
	}
	return fmt.Errorf("Device has no attribute %q to set", name)
}

// Get is Device["CPU"].
func (deviceModule) Get(k starlark.Value) (starlark.Value, bool, error) {
	s, ok := starlark.AsString(k)
	if !ok {
		return nil, false, fmt.Errorf("Device[...]: want a device name, got %s", k.Type())
	}
	n, err := canonicalDevice(s)
	if err != nil {
		return nil, false, err
	}
	return deviceValue{n}, true, nil
}

// canonicalDevice is a device name as tgc spells it ("cpu:0" is CPU); the
// device must be one that runs here.
func canonicalDevice(s string) (string, error) {
	n, _, _ := strings.Cut(strings.ToUpper(s), ":")
	if n == "CLANG" {
		n = "CPU"
	}
	names := backend.Names()
	if !slices.Contains(names, n) {
		return "", fmt.Errorf("unknown device %q (devices that run here: %s)", s, strings.Join(names, ", "))
	}
	return n, nil
}

// deviceValue is Device["CPU"].
type deviceValue struct{ name string }

func (d deviceValue) String() string        { return "<Device " + d.name + ">" }
func (d deviceValue) Type() string          { return "Device" }
func (d deviceValue) Freeze()               {}
func (d deviceValue) Truth() starlark.Bool  { return starlark.True }
func (d deviceValue) Hash() (uint32, error) { return starlark.String(d.name).Hash() }
func (d deviceValue) AttrNames() []string   { return []string{"device", "synchronize"} }
func (d deviceValue) Attr(name string) (starlark.Value, error) {
	switch name {
	case "device":
		return starlark.String(d.name), nil
	case "synchronize":
		// tgc's launches finish before realize returns.
		return pyrt.Builtin("synchronize", func(c *pyrt.Call) (starlark.Value, error) { return starlark.None, c.NoArgs() }), nil
	}
	return nil, fmt.Errorf("%s", pyrt.UnknownAttr("Device", "attribute", name, d.AttrNames()))
}

// checkDevice accepts a device= argument: None or the device the script
// runs on (tgc runs a script on one device).
func checkDevice(c *pyrt.Call, v starlark.Value) error {
	fn := c.Name
	if v == nil || v == starlark.None {
		return nil
	}
	s, ok := starlark.AsString(v)
	if !ok {
		if d, isDev := v.(deviceValue); isDev {
			s = d.name
		} else {
			return fmt.Errorf("%s: for parameter device: got %s, want a device name", fn, v.Type())
		}
	}
	n, err := canonicalDevice(s)
	if err != nil {
		return fmt.Errorf("%s: %v", fn, err)
	}
	if cur := DeviceName(Context(c)); n != cur && cur != "default" {
		return fmt.Errorf("%s: device=%q, but this script runs on %s (tgc runs a script on one device: choose it with --device)", fn, s, cur)
	}
	return nil
}

// ---- GlobalCounters ----

// globalCounters is tinygrad's GlobalCounters: kernel launches and device
// time since the last reset().
type globalCounters struct {
	engine  func() *realize.Engine
	kernels int
	time    time.Duration
}

// NewGlobalCounters makes the GlobalCounters of one run, whose engine is
// engine() (nil: none that counts).
func NewGlobalCounters(engine func() *realize.Engine) starlark.Value {
	return &globalCounters{engine: engine}
}

func (g *globalCounters) String() string        { return "<GlobalCounters>" }
func (g *globalCounters) Type() string          { return "GlobalCounters" }
func (g *globalCounters) Freeze()               {}
func (g *globalCounters) Truth() starlark.Bool  { return starlark.True }
func (g *globalCounters) Hash() (uint32, error) { return 0x6c0b, nil }
func (g *globalCounters) AttrNames() []string {
	return []string{"kernel_count", "reset", "time_sum_s"}
}

func (g *globalCounters) stats() realize.Stats {
	if e := g.engine(); e != nil {
		return e.Stats
	}
	return realize.Stats{}
}

func (g *globalCounters) Attr(name string) (starlark.Value, error) {
	s := g.stats()
	switch name {
	case "kernel_count":
		return starlark.MakeInt(s.Kernels - g.kernels), nil
	case "time_sum_s":
		return starlark.Float((s.DeviceTime - g.time).Seconds()), nil
	case "reset":
		return pyrt.Builtin("reset", func(c *pyrt.Call) (starlark.Value, error) {
			s := g.stats()
			g.kernels, g.time = s.Kernels, s.DeviceTime
			return starlark.None, c.NoArgs()
		}), nil
	}
	return nil, fmt.Errorf("%s", pyrt.UnknownAttr("GlobalCounters", "attribute", name, g.AttrNames()))
}
