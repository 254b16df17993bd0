package script

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"tgc/pkg/script/frontend"
	"tgc/pkg/script/nnlib"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
)

// predeclared returns the names every script sees.
func (in *interp) predeclared() starlark.StringDict {
	return starlark.StringDict{
		"Tensor":   tensorlib.NewClass(in.ctx),
		"dtypes":   tensorlib.DTypes,
		"nn":       nnlib.Module,
		"math":     pyrt.Math,
		"struct":   starlark.NewBuiltin("struct", starlarkstruct.Make),
		"print":    pyrt.Builtin("print", printFn),
		"TinyJit":  pyrt.Builtin("TinyJit", tensorlib.TinyJit),
		"Variable": pyrt.Builtin("Variable", tensorlib.VariableFn),
		"bool":     pyrt.Builtin("bool", tensorlib.Bool),
		"format":   pyrt.Builtin("format", pyrt.Format),
		"Ellipsis": pyrt.Ellipsis{},
		"config":   in.configDict(),                  // tgc train settings (train.go)
		"trange":   pyrt.Builtin("trange", trangeFn), // progress loop (train.go)
		"report":   pyrt.Builtin("report", reportFn), // metrics (train.go)

		// hidden helpers the frontend's translation calls
		frontend.Cmp:       pyrt.Builtin(frontend.Cmp, tensorlib.Cmp),
		frontend.GetSlice:  pyrt.Builtin(frontend.GetSlice, tensorlib.GetSlice),
		frontend.Truth:     pyrt.Builtin(frontend.Truth, tensorlib.Truth),
		frontend.MakeSlice: pyrt.Builtin(frontend.MakeSlice, pyrt.MakeSlice),
		frontend.FStr:      pyrt.Builtin(frontend.FStr, pyrt.FString),
	}
}

// printFn is Python's print(*args, sep=" ", end="\n").
func printFn(c *pyrt.Call) (starlark.Value, error) {
	sep, end := " ", "\n"
	for _, kv := range c.Kwargs {
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
