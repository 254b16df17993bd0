package tensor

import (
	"fmt"
	"strconv"
	"strings"

	"tgc/pkg/ir"
)

// Symbolic integers (tinygrad's Variable). A decode step attends to
// start_pos+1 positions: with the position a Variable, the step's kernels
// read it from their launch vars, so one compiled schedule serves every
// position.
//
// A dimension that depends on a variable keeps its largest value in
// Node.Shape (so buffer sizes, strides and every shape computation stay
// plain ints) and its symbolic form in Node.Sym. A buffer of such a node
// is allocated and laid out at the largest size; the loops over the
// symbolic dimension run to its value at launch, so elements past it are
// neither written nor read. Only the ops that keep this sound accept
// symbolic dimensions: movement ops that leave the dimension whole (a
// reshape that keeps it a dimension of its own, permute, expand of a 1,
// shrink to a symbolic end), elementwise ops broadcasting it against the
// same dimension or 1, and reduces (which loop to its value).

// Variable is an integer known only when the graph runs, within [Min, Max].
// Variables are compared by value: two with the same name and range are
// the same variable.
type Variable struct {
	Name     string
	Min, Max int
}

// NewVariable checks a variable's name and range.
func NewVariable(name string, lo, hi int) (Variable, error) {
	if !validVarName(name) {
		return Variable{}, fmt.Errorf("variable name %q: want letters, digits and _ (not starting with a digit)", name)
	}
	if lo < 0 || hi <= lo {
		return Variable{}, fmt.Errorf("variable %s: range [%d, %d] must satisfy 0 <= min < max", name, lo, hi)
	}
	return Variable{Name: name, Min: lo, Max: hi}, nil
}

func validVarName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Bind gives the variable its value for one graph.
func (v Variable) Bind(val int) (SInt, error) {
	if v.Name == "" {
		return SInt{}, fmt.Errorf("bind: the variable has no name")
	}
	if val < v.Min || val > v.Max {
		return SInt{}, fmt.Errorf("variable %s = %d is outside its range [%d, %d]", v.Name, val, v.Min, v.Max)
	}
	return SInt{Var: v, Val: val}, nil
}

func (v Variable) String() string { return fmt.Sprintf("%s[%d..%d]", v.Name, v.Min, v.Max) }

// SInt is an integer that may depend on a bound variable: the variable's
// value plus C, or the constant C when Var is the zero Variable.
type SInt struct {
	Var Variable
	Val int // the variable's value in this graph
	C   int
}

// Int is a constant SInt.
func Int(c int) SInt { return SInt{C: c} }

// IsSym reports whether s depends on a variable.
func (s SInt) IsSym() bool { return s.Var.Name != "" }

// Value is s with the variable at its bound value.
func (s SInt) Value() int { return s.Val + s.C }

// Max and Min bound s over the variable's range.
func (s SInt) Max() int {
	if !s.IsSym() {
		return s.C
	}
	return s.Var.Max + s.C
}

func (s SInt) Min() int {
	if !s.IsSym() {
		return s.C
	}
	return s.Var.Min + s.C
}

// Add returns s + c.
func (s SInt) Add(c int) SInt { s.C += c; return s }

// sameSym reports whether a and b are the same symbolic expression.
func sameSym(a, b SInt) bool { return a.Var == b.Var && a.C == b.C }

// sub is a - b when it can be expressed as an SInt (b constant, or b on
// the same variable as a).
func sub(a, b SInt) (SInt, bool) {
	switch {
	case !b.IsSym():
		return a.Add(-b.C), true
	case a.Var == b.Var && a.Val == b.Val:
		return Int(a.C - b.C), true
	}
	return SInt{}, false
}

// String prints s as a script would write it ("start_pos+1").
func (s SInt) String() string {
	switch {
	case !s.IsSym():
		return fmt.Sprint(s.C)
	case s.C > 0:
		return fmt.Sprintf("%s+%d", s.Var.Name, s.C)
	case s.C < 0:
		return fmt.Sprintf("%s-%d", s.Var.Name, -s.C)
	}
	return s.Var.Name
}

// Key is s without its bound value: what a schedule is cached by.
func (s SInt) Key() string {
	if !s.IsSym() {
		return strconv.Itoa(s.C)
	}
	return fmt.Sprintf("%s%+d", s.Var, s.C)
}

// bound is s with its value, for intern keys (nodes of two bindings differ).
func (s SInt) bound() string {
	if !s.IsSym() {
		return strconv.Itoa(s.C)
	}
	return fmt.Sprintf("%s=%d%+d", s.Var, s.Val, s.C)
}

// SymShrink is the argument of a SHRINK with a symbolic bound: (begin, end)
// per dimension. Shrinks with constant bounds keep [][2]int.
type SymShrink [][2]SInt

// Key prints the bounds without values (schedule cache keys).
func (s SymShrink) Key() string {
	var sb strings.Builder
	for _, b := range s {
		fmt.Fprintf(&sb, "(%s,%s)", b[0].Key(), b[1].Key())
	}
	return sb.String()
}

func (s SymShrink) String() string {
	var parts []string
	for _, b := range s {
		parts = append(parts, fmt.Sprintf("(%s, %s)", b[0], b[1]))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func (s SymShrink) bound() string {
	var sb strings.Builder
	for _, b := range s {
		fmt.Fprintf(&sb, "(%s,%s)", b[0].bound(), b[1].bound())
	}
	return sb.String()
}

// Dims returns the node's dimensions as SInts.
func (n *Node) Dims() []SInt {
	d := make([]SInt, len(n.Shape))
	for i, s := range n.Shape {
		if n.Sym != nil && n.Sym[i].IsSym() {
			d[i] = n.Sym[i]
		} else {
			d[i] = Int(s)
		}
	}
	return d
}

// HasSym reports whether a dimension of the node is symbolic.
func (n *Node) HasSym() bool { return n.Sym != nil }

// Dims returns the tensor's dimensions; symbolic ones depend on a variable
// (Shape gives their largest values).
func (t *Tensor) Dims() []SInt { return t.node.Dims() }

// splitDims turns dimensions into a shape of ints (largest values) and the
// symbolic part (nil when every dimension is constant).
func splitDims(dims []SInt) ([]int, []SInt) {
	shape := make([]int, len(dims))
	var sym []SInt
	for i, d := range dims {
		shape[i] = d.Max()
		if d.IsSym() {
			if sym == nil {
				sym = make([]SInt, len(dims))
			}
			sym[i] = d
		}
	}
	return shape, sym
}

// FormatDims prints dimensions the way Python prints a tuple.
func FormatDims(d []SInt) string {
	if len(d) == 1 {
		return fmt.Sprintf("(%s,)", d[0])
	}
	parts := make([]string, len(d))
	for i, x := range d {
		parts[i] = x.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// shapeString prints a node's shape, symbolic dimensions by name.
func (n *Node) shapeString() string {
	if n.Sym == nil {
		return FormatShape(n.Shape)
	}
	return FormatDims(n.Dims())
}

// maxShape is the largest size of each dimension.
func maxShape(dims []SInt) []int {
	shape, _ := splitDims(dims)
	return shape
}

// newSymNode is newNode for a shape given as dimensions.
func (c *Context) newSymNode(op ir.Op, dt ir.DType, dims []SInt, arg any, src ...*Node) *Node {
	shape, sym := splitDims(dims)
	return c.makeNode(op, dt, shape, sym, arg, src...)
}

// like makes a node of t's shape (symbolic dimensions included).
func (t *Tensor) like(op ir.Op, dt ir.DType, arg any, src ...*Node) *Node {
	return t.node.ctx.makeNode(op, dt, t.node.Shape, t.node.Sym, arg, src...)
}

// Variables lists the variables a graph depends on with their bound
// values, in a deterministic order; two values of one variable are an
// error.
func Variables(order []*Node) ([]SInt, error) {
	var out []SInt
	seen := map[Variable]int{}
	add := func(s SInt) error {
		if !s.IsSym() {
			return nil
		}
		if i, ok := seen[s.Var]; ok {
			if out[i].Val != s.Val {
				return fmt.Errorf("variable %s is bound to %d and to %d in one graph", s.Var.Name, out[i].Val, s.Val)
			}
			return nil
		}
		seen[s.Var] = len(out)
		out = append(out, SInt{Var: s.Var, Val: s.Val})
		return nil
	}
	for _, n := range order {
		for _, s := range n.Sym {
			if err := add(s); err != nil {
				return nil, err
			}
		}
		for _, s := range n.SymArgs() {
			if err := add(s); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// SymArgs lists the symbolic integers in a node's argument (a variable
// node's value, a symbolic shrink's bounds).
func (n *Node) SymArgs() []SInt {
	switch a := n.Arg.(type) {
	case SInt:
		return []SInt{a}
	case SymShrink:
		var out []SInt
		for _, b := range a {
			out = append(out, b[0], b[1])
		}
		return out
	}
	return nil
}

// VarTensor is a 0-d int32 tensor holding a bound variable's value: the
// value is read from the kernel's launch vars, so graphs that differ only
// in the value share their compiled kernels (and a TinyJit replays them
// with the new value).
func (c *Context) VarTensor(s SInt) *Tensor {
	if !s.IsSym() {
		return c.Const(float64(s.C), ir.Int32)
	}
	return FromNode(c.newNode(ir.OpParam, ir.Int32, nil, s))
}

// BoundVar returns the variable of a tensor made by VarTensor.
func (t *Tensor) BoundVar() (SInt, bool) {
	if t.err != nil || t.node.Op != ir.OpParam {
		return SInt{}, false
	}
	s, ok := t.node.Arg.(SInt)
	return s, ok
}

// broadcastDims is BroadcastShape for dimensions that may be symbolic: a
// symbolic dimension broadcasts with 1 and with itself only.
func broadcastDims(dims ...[]SInt) ([]SInt, bool) {
	n := 0
	for _, d := range dims {
		n = max(n, len(d))
	}
	out := make([]SInt, n)
	for i := range out {
		out[i] = Int(1)
	}
	for _, d := range dims {
		off := n - len(d)
		for i, x := range d {
			o := out[off+i]
			switch {
			case !o.IsSym() && o.C == 1:
				out[off+i] = x
			case !x.IsSym() && x.C == 1:
			case o.IsSym() != x.IsSym():
				return nil, false
			case o.IsSym() && (!sameSym(o, x) || o.Val != x.Val):
				return nil, false
			case !o.IsSym() && o.C != x.C:
				return nil, false
			}
		}
	}
	return out, true
}

// reshapeSym maps the symbolic dimensions of src onto a reshape's new
// shape: each must stay a dimension of its own, at the same place in the
// row-major layout (the same product of the dimensions before it). It
// returns the new dimensions, or false.
func reshapeSym(src *Node, shape []int) ([]SInt, bool) {
	dims := make([]SInt, len(shape))
	for j, d := range shape {
		dims[j] = Int(d)
	}
	for i, s := range src.Sym {
		if !s.IsSym() {
			continue
		}
		before := prod(src.Shape[:i])
		found := false
		p := 1
		for j, d := range shape {
			if p == before && d == src.Shape[i] {
				dims[j] = s
				found = true
				break
			}
			p *= d
			if p > before {
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return dims, true
}
