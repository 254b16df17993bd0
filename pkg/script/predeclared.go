package script

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"tgc/pkg/script/frontend"
	"tgc/pkg/script/nnlib"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
)

// predeclared returns the names every script sees: tinygrad's (which the
// tinygrad modules also export), Python's builtins that Starlark lacks, tgc
// train's, and the hidden builtins of the frontend's translation.
func (in *interp) predeclared() starlark.StringDict {
	d := in.tinygradNames()
	in.imports = modules(d)
	extra := starlark.StringDict{
		"math":         pyrt.Math,
		"struct":       starlark.NewBuiltin("struct", starlarkstruct.Make),
		"print":        pyrt.Builtin("print", printFn),
		"bool":         pyrt.Builtin("bool", tensorlib.Bool),
		"format":       pyrt.Builtin("format", pyrt.Format),
		"repr":         pyrt.Builtin("repr", pyrt.Repr),
		"isinstance":   pyrt.Builtin("isinstance", pyrt.IsInstance),
		"setattr":      pyrt.Builtin("setattr", pyrt.SetAttr),
		"staticmethod": pyrt.Builtin("staticmethod", pyrt.StaticMethod),
		"classmethod":  pyrt.Builtin("classmethod", pyrt.ClassMethod),
		"property":     pyrt.Builtin("property", pyrt.Property),
		"object":       pyrt.Object,
		"sum":          pyrt.Builtin("sum", pyrt.Sum),
		"round":        pyrt.Builtin("round", pyrt.Round),
		"pow":          pyrt.Builtin("pow", tensorlib.Pow),
		"divmod":       pyrt.Builtin("divmod", pyrt.Divmod),
		"callable":     pyrt.Builtin("callable", pyrt.IsCallable),
		"map":          pyrt.Builtin("map", pyrt.Map),
		"filter":       pyrt.Builtin("filter", pyrt.Filter),
		"Ellipsis":     pyrt.Ellipsis{},
		"__name__":     starlark.String("__main__"),
		"argv":         in.argv,
		"config":       in.configDict(),                  // tgc train settings (train.go)
		"trange":       pyrt.Builtin("trange", trangeFn), // progress loop (train.go)
		"report":       pyrt.Builtin("report", reportFn), // metrics (train.go)

		// hidden helpers the frontend's translation calls
		frontend.Cmp:         pyrt.Builtin(frontend.Cmp, tensorlib.Cmp),
		frontend.GetSlice:    pyrt.Builtin(frontend.GetSlice, tensorlib.GetSlice),
		frontend.Truth:       pyrt.Builtin(frontend.Truth, tensorlib.Truth),
		frontend.MakeSlice:   pyrt.Builtin(frontend.MakeSlice, pyrt.MakeSlice),
		frontend.FStr:        pyrt.Builtin(frontend.FStr, pyrt.FString),
		frontend.ClassMarker: pyrt.Builtin("class", pyrt.MakeClass),
		frontend.Unset:       pyrt.Unset,
		frontend.Super:       pyrt.Builtin("super", pyrt.Super),
		frontend.With:        pyrt.Builtin("with", pyrt.With),
		frontend.Import:      pyrt.Builtin("import", in.imports.Import),
		frontend.Assert:      pyrt.Builtin("assert", pyrt.Assert),
		frontend.Raise:       pyrt.Builtin("raise", pyrt.Raise),
		frontend.Del:         pyrt.Builtin("del", pyrt.Del),
		frontend.Pow:         pyrt.Builtin("**", tensorlib.Pow),
		frontend.MatMul:      pyrt.Builtin("@", tensorlib.MatMul),
	}
	for k, v := range extra {
		d[k] = v
	}
	for k, v := range pyrt.Exceptions {
		d[k] = v
	}
	return d
}

// tinygradNames are the names of tinygrad's top-level package, predeclared
// and importable (from tinygrad import Tensor, nn).
func (in *interp) tinygradNames() starlark.StringDict {
	return starlark.StringDict{
		"Tensor":         tensorlib.NewClass(in.ctx),
		"dtypes":         tensorlib.DTypes,
		"nn":             nnlib.Module,
		"TinyJit":        pyrt.Builtin("TinyJit", tensorlib.TinyJit),
		"Variable":       pyrt.Builtin("Variable", tensorlib.VariableFn),
		"Device":         tensorlib.NewDevice(func() string { return tensorlib.DeviceName(in.ctx) }),
		"Context":        pyrt.Builtin("Context", tensorlib.ContextVars),
		"GlobalCounters": in.counters,
		"getenv":         pyrt.Builtin("getenv", in.getenv),
	}
}

// modules is the table of what a script can import.
func modules(top starlark.StringDict) pyrt.Modules {
	nn := nnlib.Module
	sub := func(name string) starlark.Value {
		v, _ := nn.Attr(name)
		return v
	}
	helpers := pyrt.NewModule("tinygrad.helpers", starlark.StringDict{
		"getenv":         top["getenv"],
		"Context":        top["Context"],
		"GlobalCounters": top["GlobalCounters"],
		"trange":         pyrt.Builtin("trange", trangeFn),
		"colored":        pyrt.Builtin("colored", colored),
		"prod":           mustAttr(pyrt.Math, "prod"),
	})
	jit := pyrt.NewModule("tinygrad.engine.jit", starlark.StringDict{"TinyJit": top["TinyJit"]})
	tg := starlark.StringDict{"helpers": helpers}
	for k, v := range top {
		tg[k] = v
	}
	tg["engine"] = pyrt.NewModule("tinygrad.engine", starlark.StringDict{"jit": jit})
	tg["tensor"] = pyrt.NewModule("tinygrad.tensor", starlark.StringDict{"Tensor": top["Tensor"]})
	tg["dtype"] = pyrt.NewModule("tinygrad.dtype", starlark.StringDict{"dtypes": top["dtypes"]})
	tg["device"] = pyrt.NewModule("tinygrad.device", starlark.StringDict{"Device": top["Device"]})
	tinygrad := pyrt.NewModule("tinygrad", tg)
	return pyrt.Modules{
		"tinygrad":             tinygrad,
		"tinygrad.tensor":      tg["tensor"],
		"tinygrad.dtype":       tg["dtype"],
		"tinygrad.device":      tg["device"],
		"tinygrad.helpers":     helpers,
		"tinygrad.engine":      tg["engine"],
		"tinygrad.engine.jit":  jit,
		"tinygrad.nn":          nn,
		"tinygrad.nn.optim":    sub("optim"),
		"tinygrad.nn.state":    sub("state"),
		"tinygrad.nn.datasets": sub("datasets"),
		"math":                 pyrt.Math,
		"typing":               pyrt.Typing,
	}
}

func mustAttr(m *pyrt.Module, name string) starlark.Value {
	v, err := m.Attr(name)
	if err != nil {
		panic(err)
	}
	return v
}

// getenvAliases are the tinygrad environment variables that tgc train's
// flags set: getenv("STEPS", 70) is --steps when given.
var getenvAliases = map[string]string{"STEPS": "steps", "BS": "batch", "LR": "lr"}

// getenv is tinygrad's getenv(key, default=0): the tgc train flag that
// stands for key (STEPS, BS, LR) when given, else the environment
// variable, else default; converted to default's type.
func (in *interp) getenv(c *pyrt.Call) (starlark.Value, error) {
	var key string
	var def starlark.Value = starlark.MakeInt(0)
	if err := c.Unpack("key", &key, "default?", &def); err != nil {
		return nil, err
	}
	if flag, ok := getenvAliases[key]; ok {
		if v, ok := in.train.sess.Config[flag]; ok {
			return configValue(v), nil
		}
	}
	s, ok := os.LookupEnv(key)
	if !ok {
		return def, nil
	}
	switch def.(type) {
	case starlark.Int, starlark.Bool:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("getenv: %s=%q is not an integer", key, s)
		}
		if _, isBool := def.(starlark.Bool); isBool {
			return starlark.Bool(n != 0), nil
		}
		return starlark.MakeInt(n), nil
	case starlark.Float:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("getenv: %s=%q is not a number", key, s)
		}
		return starlark.Float(f), nil
	}
	return starlark.String(s), nil
}

// colored is tinygrad's colored(st, color, background=False): st in an
// ANSI color.
func colored(c *pyrt.Call) (starlark.Value, error) {
	var st string
	var color starlark.Value = starlark.None
	background := false
	if err := c.Unpack("st", &st, "color?", &color, "background?", &background); err != nil {
		return nil, err
	}
	if color == starlark.None {
		return starlark.String(st), nil
	}
	name, ok := starlark.AsString(color)
	colors := []string{"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"}
	idx := -1
	for i, n := range colors {
		if n == strings.ToLower(name) {
			idx = i
		}
	}
	if !ok || idx < 0 {
		return nil, fmt.Errorf("colored: unknown color %s (want one of %s)", color, strings.Join(colors, ", "))
	}
	code := 30 + idx
	if background {
		code += 10
	}
	if name == strings.ToUpper(name) {
		code += 60
	}
	return starlark.String(fmt.Sprintf("\x1b[%dm%s\x1b[0m", code, st)), nil
}

// printFn is Python's print(*args, sep=" ", end="\n", flush=False).
func printFn(c *pyrt.Call) (starlark.Value, error) {
	sep, end := " ", "\n"
	for _, kv := range c.Kwargs {
		if kv[0] == starlark.String("flush") {
			continue // output is not buffered
		}
		s, ok := starlark.AsString(kv[1])
		switch {
		case !ok && kv[1] != starlark.None:
			return nil, fmt.Errorf("print: %s must be a string, got %s", kv[0], kv[1].Type())
		case kv[0] == starlark.String("sep") && ok:
			sep = s
		case kv[0] == starlark.String("end") && ok:
			end = s
		case kv[0] != starlark.String("sep") && kv[0] != starlark.String("end"):
			return nil, fmt.Errorf("print: unexpected keyword argument %s", kv[0])
		}
	}
	var sb strings.Builder
	for i, a := range c.Args {
		if i > 0 {
			sb.WriteString(sep)
		}
		if s, ok := a.(starlark.String); ok {
			sb.WriteString(string(s))
		} else {
			sb.WriteString(a.String())
		}
	}
	sb.WriteString(end)
	if _, err := interpOf(c.Thread).stdout.Write([]byte(sb.String())); err != nil {
		return nil, fmt.Errorf("print: %v", err)
	}
	return starlark.None, nil
}
