package tensorlib

import (
	"errors"
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"tgc/pkg/script/pyrt"
)

// The Python operators Starlark lacks, which the frontend turns into calls:
// a ** b is Pow(a, b), a @ b is a * MatMul(b).

// TruthError refuses a tensor as a condition (assert t).
func (v *Tensor) TruthError() error { return errors.New(ErrTruth) }

// Pow is a ** b: t.pow(b) when either side is a tensor, else Python's
// power of numbers.
func Pow(c *pyrt.Call) (starlark.Value, error) {
	if len(c.Args) != 2 || len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("**: want two operands")
	}
	x, y := c.Args[0], c.Args[1]
	if xt, ok := x.(*Tensor); ok {
		o, err := operand(xt.t, y)
		if err != nil || o == nil {
			return nil, fmt.Errorf("unsupported operand types for **: Tensor and %s", y.Type())
		}
		return Wrap(xt.t.Pow(o))
	}
	if yt, ok := y.(*Tensor); ok {
		o, err := operand(yt.t, x)
		if err != nil || o == nil {
			return nil, fmt.Errorf("unsupported operand types for **: %s and Tensor", x.Type())
		}
		return Wrap(o.Pow(yt.t))
	}
	return pyrt.NumPow(x, y)
}

// MatMul marks the right operand of @: the frontend writes a @ b as
// a * MatMul(b), which has @'s precedence and associativity.
func MatMul(c *pyrt.Call) (starlark.Value, error) {
	if len(c.Args) != 1 || len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("@: want one operand")
	}
	return matmulRHS{c.Args[0]}, nil
}

// matmulRHS is the right side of a @ b.
type matmulRHS struct{ v starlark.Value }

var _ starlark.HasBinary = matmulRHS{}

func (m matmulRHS) String() string        { return "@" + m.v.String() }
func (m matmulRHS) Type() string          { return m.v.Type() }
func (m matmulRHS) Freeze()               {}
func (m matmulRHS) Truth() starlark.Bool  { return starlark.True }
func (m matmulRHS) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: @ operand") }

// Binary is x * m for x on the left: x @ m.v.
func (m matmulRHS) Binary(op syntax.Token, x starlark.Value, side starlark.Side) (starlark.Value, error) {
	xt, ok1 := x.(*Tensor)
	yt, ok2 := m.v.(*Tensor)
	if op != syntax.STAR || side != starlark.Right || !ok1 || !ok2 {
		return nil, fmt.Errorf("unsupported operand types for @: %s and %s (@ multiplies tensors)", x.Type(), m.v.Type())
	}
	return Wrap(xt.t.Dot(yt.t))
}
