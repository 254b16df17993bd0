package pyrt

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"go.starlark.net/starlark"
)

// Imports. A script imports only modules tgc provides (tinygrad's, math,
// typing): import binds the module value, from ... import binds its
// members. Anything else is an error naming the module, at the import.

// Modules is the table of what a script can import, by dotted name.
type Modules map[string]starlark.Value

// Check reports whether module exists and, when name is not "", has name.
func (m Modules) Check(module, name string) error {
	mod, ok := m[module]
	if !ok {
		return unknownModule(module, m)
	}
	if name == "" || name == "*" {
		return nil
	}
	if _, ok := m[module+"."+name]; ok {
		return nil
	}
	if ha, ok := mod.(starlark.HasAttrs); ok {
		if v, err := ha.Attr(name); err == nil && v != nil {
			return nil
		}
		return fmt.Errorf("cannot import name %q from %s%s", name, module, suggest(name, ha.AttrNames()))
	}
	return fmt.Errorf("cannot import name %q from %s", name, module)
}

// Import is the builtin behind import statements (the frontend checked
// them with Check): __tgimport__(module) is the module;
// __tgimport__(module, None) the top-level package (import a.b binds a);
// __tgimport__(module, name) a member; __tgimport__(module, "*") binds
// nothing.
func (m Modules) Import(c *Call) (starlark.Value, error) {
	if len(c.Args) < 1 || len(c.Args) > 2 {
		return nil, fmt.Errorf("import: want a module and a name")
	}
	name, _ := starlark.AsString(c.Args[0])
	member := ""
	if len(c.Args) == 2 {
		switch x := c.Args[1].(type) {
		case starlark.NoneType:
			top, _, _ := strings.Cut(name, ".")
			return m[top], m.Check(name, "")
		case starlark.String:
			member = string(x)
		}
	}
	if err := m.Check(name, member); err != nil {
		return nil, err
	}
	switch member {
	case "":
		return m[name], nil
	case "*":
		return starlark.None, nil
	}
	if sub, ok := m[name+"."+member]; ok {
		return sub, nil
	}
	return m[name].(starlark.HasAttrs).Attr(member)
}

func suggest(name string, names []string) string {
	if n := Nearest(name, names); n != "" {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
}

// unknownModule is the error for a module tgc does not provide.
func unknownModule(name string, modules Modules) error {
	var names []string
	for n := range modules {
		names = append(names, n)
	}
	sort.Strings(names)
	top, _, _ := strings.Cut(name, ".")
	hint := ""
	switch top {
	case "numpy":
		hint = "; tensors take numpy's place: t.numpy() prints like an array and has .tolist()"
	case "torch":
		hint = "; tgc follows tinygrad: from tinygrad import Tensor, nn"
	case "os", "sys", "pathlib", "io", "subprocess", "socket", "urllib", "requests", "pickle":
		hint = "; scripts have no file, process or network access beyond nn.state and nn.datasets"
	}
	msg := fmt.Sprintf("no module named %q: a tgc script can import %s%s", name, strings.Join(names, ", "), hint)
	if n := Nearest(name, names); n != "" && hint == "" {
		msg += fmt.Sprintf(" (did you mean %s?)", n)
	}
	return fmt.Errorf("%s", msg)
}

// typeHint stands for the names of typing (List, Optional, ...): scripts
// import them for annotations, which the frontend drops; anywhere else
// they subscript to themselves.
type typeHint struct{ name string }

func (t typeHint) String() string        { return "typing." + t.name }
func (t typeHint) Type() string          { return "typing" }
func (t typeHint) Freeze()               {}
func (t typeHint) Truth() starlark.Bool  { return starlark.True }
func (t typeHint) Hash() (uint32, error) { return starlark.String(t.name).Hash() }
func (t typeHint) Get(starlark.Value) (starlark.Value, bool, error) {
	return t, true, nil
}

// Typing is the module typing.
var Typing = func() *Module {
	m := starlark.StringDict{}
	for _, n := range []string{"Any", "Callable", "Dict", "List", "Optional", "Sequence", "Tuple", "Union",
		"Iterable", "Iterator", "Literal", "Type", "Set", "ClassVar", "Final", "cast"} {
		m[n] = typeHint{n}
	}
	m["cast"] = Builtin("cast", func(c *Call) (starlark.Value, error) {
		var typ, v starlark.Value
		if err := c.Unpack("typ", &typ, "val", &v); err != nil {
			return nil, err
		}
		return v, nil
	})
	m["TYPE_CHECKING"] = starlark.False
	return NewModule("typing", m)
}()

// Del is the builtin behind del x[k]: x.pop(k) for a dict or a list.
func Del(c *Call) (starlark.Value, error) {
	var x, k starlark.Value
	if err := c.Unpack("obj", &x, "key", &k); err != nil {
		return nil, err
	}
	if _, ok := x.(*starlark.Dict); !ok {
		if _, ok := x.(*starlark.List); !ok {
			return nil, fmt.Errorf("del: a %s does not support item deletion (a dict or a list does)", x.Type())
		}
	}
	pop, err := x.(starlark.HasAttrs).Attr("pop")
	if err != nil {
		return nil, err
	}
	if _, err := starlark.Call(c.Thread, pop, starlark.Tuple{k}, nil); err != nil {
		return nil, fmt.Errorf("del: %v", err)
	}
	return starlark.None, nil
}

// NumPow is x ** y for Python numbers: an int for ints with y >= 0, else
// a float.
func NumPow(x, y starlark.Value) (starlark.Value, error) {
	xi, xInt := x.(starlark.Int)
	yi, yInt := y.(starlark.Int)
	if b, ok := x.(starlark.Bool); ok {
		xi, xInt = starlark.MakeInt(boolInt(b)), true
	}
	if b, ok := y.(starlark.Bool); ok {
		yi, yInt = starlark.MakeInt(boolInt(b)), true
	}
	if xInt && yInt && yi.Sign() >= 0 {
		e, ok := yi.Int64()
		if !ok || e > 1<<20 {
			return nil, fmt.Errorf("** : the exponent %s is too large", yi)
		}
		r := new(big.Int).Exp(xi.BigInt(), big.NewInt(e), nil)
		if r.BitLen() > 1<<16 {
			return nil, fmt.Errorf("**: the result has more than %d bits", 1<<16)
		}
		return starlark.MakeBigInt(r), nil
	}
	xf, ok1 := starlark.AsFloat(x)
	yf, ok2 := starlark.AsFloat(y)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("unsupported operand types for **: %s and %s", x.Type(), y.Type())
	}
	if xf == 0 && yf < 0 {
		return nil, fmt.Errorf("ZeroDivisionError: 0.0 cannot be raised to a negative power")
	}
	r := math.Pow(xf, yf)
	if math.IsNaN(r) && !math.IsNaN(xf) && !math.IsNaN(yf) {
		return nil, fmt.Errorf("ValueError: %v ** %v is not a real number", xf, yf)
	}
	return starlark.Float(r), nil
}

func boolInt(b starlark.Bool) int {
	if b {
		return 1
	}
	return 0
}
