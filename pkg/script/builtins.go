package script

import (
	"fmt"
	"math"
	"sort"
	"strings"

	starmath "go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// predeclared returns the names every script sees.
func (in *interp) predeclared() starlark.StringDict {
	return starlark.StringDict{
		"Tensor":   &tensorClass{in: in},
		"dtypes":   dtypesModule,
		"nn":       nnModule,
		"math":     mathModule,
		"struct":   starlark.NewBuiltin("struct", starlarkstruct.Make),
		"print":    builtin("print", printFn),
		"TinyJit":  builtin("TinyJit", tinyJitFn),
		"bool":     builtin("bool", boolFn),
		"format":   builtin("format", formatFn),
		"Ellipsis": ellipsis{},
		"config":   in.configDict(),             // tgc train settings (train.go)
		"trange":   builtin("trange", trangeFn), // progress loop (train.go)
		"report":   builtin("report", reportFn), // metrics (train.go)

		// hidden helpers the preprocessor and the AST rewriter call
		cmpBuiltin:   builtin(cmpBuiltin, cmpFn),
		sliceBuiltin: builtin(sliceBuiltin, getSliceFn),
		truthBuiltin: builtin(truthBuiltin, truthFn),
		sliceMaker:   builtin(sliceMaker, makeSliceFn),
		fstrBuiltin:  builtin(fstrBuiltin, fstrFn),
	}
}

// builtinFunc is the Go side of a builtin; it gets the call's arguments.
type builtinFunc func(c *call) (starlark.Value, error)

// builtin makes a Starlark builtin that converts Go panics into errors at
// the calling line.
func builtin(name string, fn builtinFunc) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
		c := &call{in: interpOf(th), name: name, args: args, kwargs: kwargs}
		defer recoverPanic(c, &err)
		return fn(c)
	})
}

// recoverPanic turns a panic in a builtin into an internal error.
func recoverPanic(c *call, err *error) {
	if r := recover(); r != nil {
		if c.in != nil {
			e := c.in.internalError(r).(*Error)
			*err = fmt.Errorf("%s: %s", c.name, e.Msg)
			return
		}
		*err = fmt.Errorf("%s: internal error: %v", c.name, r)
	}
}

// ---- print, bool and the hidden helpers ----

// printFn is Python's print(*args, sep=" ", end="\n").
func printFn(c *call) (starlark.Value, error) {
	sep, end := " ", "\n"
	for _, kv := range c.kwargs {
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
	for i, a := range c.args {
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
	w := c.in.stdout
	_, err := w.Write([]byte(sb.String()))
	if err != nil {
		return nil, fmt.Errorf("print: %v", err)
	}
	return starlark.None, nil
}

var errTruth = "the truth value of a Tensor is ambiguous: compare its value instead, e.g. t.item() > 0 or (t > 0).sum().item() > 0"

// boolFn is bool(x), failing for tensors like Python's.
func boolFn(c *call) (starlark.Value, error) {
	var x starlark.Value = starlark.False
	if err := c.unpack("x?", &x); err != nil {
		return nil, err
	}
	if _, ok := x.(*Tensor); ok {
		return nil, fmt.Errorf("bool: %s", errTruth)
	}
	return x.Truth(), nil
}

// truthFn guards conditions: it returns its argument, or fails for tensors.
func truthFn(c *call) (starlark.Value, error) {
	if len(c.args) != 1 {
		return nil, fmt.Errorf("%s: want 1 argument", c.name)
	}
	if _, ok := c.args[0].(*Tensor); ok {
		return nil, fmt.Errorf("%s", errTruth)
	}
	return c.args[0], nil
}

var cmpOps = map[string]syntax.Token{
	"<": syntax.LT, "<=": syntax.LE, ">": syntax.GT, ">=": syntax.GE, "==": syntax.EQL, "!=": syntax.NEQ,
}

// cmpFn implements a comparison: a bool tensor when either side is a
// tensor, else Starlark's own comparison.
func cmpFn(c *call) (starlark.Value, error) {
	if len(c.args) != 3 {
		return nil, fmt.Errorf("%s: want 3 arguments", c.name)
	}
	opname, _ := starlark.AsString(c.args[0])
	op, ok := cmpOps[opname]
	if !ok {
		return nil, fmt.Errorf("%s: unknown comparison %q", c.name, opname)
	}
	x, y := c.args[1], c.args[2]
	xt, xok := x.(*Tensor)
	yt, yok := y.(*Tensor)
	if !xok && !yok {
		b, err := starlark.Compare(op, x, y)
		if err != nil {
			return nil, err
		}
		return starlark.Bool(b), nil
	}
	var a, b *tensor.Tensor
	var err error
	if xok {
		a = xt.t
		b, err = operand(a, y)
	} else {
		b = yt.t
		a, err = operand(b, x)
	}
	if err != nil {
		return nil, err
	}
	if a == nil || b == nil {
		// Tensor vs. a non-number: Python's == falls back to identity.
		switch op {
		case syntax.EQL:
			return starlark.False, nil
		case syntax.NEQ:
			return starlark.True, nil
		}
		return nil, fmt.Errorf("cannot compare %s %s %s", x.Type(), opname, y.Type())
	}
	switch op {
	case syntax.LT:
		return wrap(a.Lt(b))
	case syntax.LE:
		return wrap(a.Le(b))
	case syntax.GT:
		return wrap(a.Gt(b))
	case syntax.GE:
		return wrap(a.Ge(b))
	case syntax.EQL:
		return wrap(a.Eq(b))
	default:
		return wrap(a.Ne(b))
	}
}

// ---- Ellipsis and slices ----

// ellipsis is Python's Ellipsis (the preprocessor turns ... into it).
type ellipsis struct{}

func (ellipsis) String() string        { return "Ellipsis" }
func (ellipsis) Type() string          { return "ellipsis" }
func (ellipsis) Freeze()               {}
func (ellipsis) Truth() starlark.Bool  { return starlark.True }
func (ellipsis) Hash() (uint32, error) { return 0x2e2e2e, nil }

// sliceValue is Python's slice(start, stop, step), made by the
// preprocessor for subscripts like t[1:4, ::2].
type sliceValue struct{ start, stop, step starlark.Value }

func (s sliceValue) String() string {
	return fmt.Sprintf("slice(%s, %s, %s)", s.start, s.stop, s.step)
}
func (sliceValue) Type() string          { return "slice" }
func (sliceValue) Freeze()               {}
func (sliceValue) Truth() starlark.Bool  { return starlark.True }
func (sliceValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: slice") }

func makeSliceFn(c *call) (starlark.Value, error) {
	s := sliceValue{starlark.None, starlark.None, starlark.None}
	if err := c.unpack("start", &s.start, "stop", &s.stop, "step", &s.step); err != nil {
		return nil, err
	}
	return s, nil
}

// getSliceFn implements x[lo:hi:step] for tensors and Starlark sequences.
func getSliceFn(c *call) (starlark.Value, error) {
	if len(c.args) != 4 {
		return nil, fmt.Errorf("%s: want 4 arguments", c.name)
	}
	x := c.args[0]
	s := sliceValue{c.args[1], c.args[2], c.args[3]}
	if t, ok := x.(*Tensor); ok {
		items, err := indexItems(s)
		if err != nil {
			return nil, err
		}
		return wrap(t.t.Index(items))
	}
	seq, ok := x.(starlark.Sliceable)
	if !ok {
		return nil, fmt.Errorf("invalid slice operand %s", x.Type())
	}
	start, end, step, err := sliceIndices(s, seq.Len())
	if err != nil {
		return nil, err
	}
	return seq.Slice(start, end, step), nil
}

// sliceIndices normalizes a slice against a length the way Python does:
// the result selects start, start+step, ... while before end.
func sliceIndices(s sliceValue, n int) (start, end, step int, err error) {
	step = 1
	if s.step != starlark.None {
		if step, err = toInt(s.step); err != nil {
			return 0, 0, 0, fmt.Errorf("invalid slice step: %v", err)
		}
		if step == 0 {
			return 0, 0, 0, fmt.Errorf("slice step cannot be zero")
		}
	}
	index := func(v starlark.Value, def, lo, hi int) (int, error) {
		if v == starlark.None {
			return def, nil
		}
		i, err := toInt(v)
		if err != nil {
			return 0, fmt.Errorf("invalid slice index: %v", err)
		}
		if i < 0 {
			i += n
		}
		return min(max(i, lo), hi), nil
	}
	if step > 0 {
		if start, err = index(s.start, 0, 0, n); err != nil {
			return
		}
		if end, err = index(s.stop, n, 0, n); err != nil {
			return
		}
		end = max(end, start)
	} else {
		if start, err = index(s.start, n-1, -1, n-1); err != nil {
			return
		}
		if end, err = index(s.stop, -1, -1, n-1); err != nil {
			return
		}
		end = min(end, start)
	}
	return start, end, step, nil
}

// ---- namespaces: dtypes, nn, math ----

// namespace is a read-only module-like value with helpful attribute errors.
type namespace struct {
	name    string
	members starlark.StringDict
}

func (m *namespace) String() string        { return "<module " + m.name + ">" }
func (m *namespace) Type() string          { return "module" }
func (m *namespace) Freeze()               { m.members.Freeze() }
func (m *namespace) Truth() starlark.Bool  { return starlark.True }
func (m *namespace) Hash() (uint32, error) { return starlark.String(m.name).Hash() }
func (m *namespace) AttrNames() []string   { return m.members.Keys() }
func (m *namespace) Attr(name string) (starlark.Value, error) {
	if v, ok := m.members[name]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("%s", unknownAttr(m.name, name, m.members.Keys()))
}

var dtypesModule = func() *namespace {
	m := starlark.StringDict{}
	for _, dt := range ir.AllDTypes {
		m[dt.String()] = DType{dt}
	}
	m["float"] = DType{ir.Float32}
	m["default_float"] = DType{ir.Float32}
	m["half"] = DType{ir.Float16}
	m["int"] = DType{ir.Int32}
	m["default_int"] = DType{ir.Int32}
	m["char"] = DType{ir.Int8}
	m["uchar"] = DType{ir.Uint8}
	m["is_float"] = builtin("is_float", func(c *call) (starlark.Value, error) {
		var d dtypeArg
		if err := c.unpack("dtype", &d); err != nil {
			return nil, err
		}
		return starlark.Bool(d.dt.IsFloat()), nil
	})
	m["is_int"] = builtin("is_int", func(c *call) (starlark.Value, error) {
		var d dtypeArg
		if err := c.unpack("dtype", &d); err != nil {
			return nil, err
		}
		return starlark.Bool(d.dt.IsInt()), nil
	})
	return &namespace{name: "dtypes", members: m}
}()

var nnModule = &namespace{name: "nn", members: starlark.StringDict{
	"state": &namespace{name: "nn.state", members: starlark.StringDict{
		"safe_load":      builtin("safe_load", safeLoad),
		"safe_save":      builtin("safe_save", safeSave),
		"get_state_dict": builtin("get_state_dict", getStateDict),
		"get_parameters": builtin("get_parameters", getParameters),
	}},
}}

var mathModule = func() *namespace {
	m := starlark.StringDict{}
	for k, v := range starmath.Module.Members {
		m[k] = v
	}
	m["inf"] = starlark.Float(math.Inf(1))
	m["nan"] = starlark.Float(math.NaN())
	m["prod"] = builtin("prod", func(c *call) (starlark.Value, error) {
		var it starlark.Iterable
		if err := c.unpack("iterable", &it); err != nil {
			return nil, err
		}
		iter := it.Iterate()
		defer iter.Done()
		var p starlark.Value = starlark.MakeInt(1)
		var x starlark.Value
		for iter.Next(&x) {
			var err error
			if p, err = starlark.Binary(syntax.STAR, p, x); err != nil {
				return nil, fmt.Errorf("prod: %v", err)
			}
		}
		return p, nil
	})
	return &namespace{name: "math", members: m}
}()

// ---- suggestions ----

// unknownAttr is the message for a missing attribute, with the nearest
// name when one is close. Tensor members are called methods unless the
// suggestion is a property such as shape.
func unknownAttr(owner, name string, names []string) string {
	n := nearest(name, names)
	what := "attribute"
	if _, isProp := properties[n]; owner == "Tensor" && !isProp {
		what = "method"
	}
	msg := fmt.Sprintf("%s has no %s %q", owner, what, name)
	if n != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", n)
	}
	return msg
}

// nearest returns the candidate closest to name in edit distance, if it is
// close enough to be a plausible typo.
func nearest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	sorted := append([]string{}, candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if strings.HasPrefix(c, "_") {
			continue
		}
		d := levenshtein(strings.ToLower(name), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(1, min(3, len(name)/3)) {
		return best
	}
	return ""
}

// levenshtein is the edit distance between a and b (insert, delete,
// substitute, each cost 1).
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
