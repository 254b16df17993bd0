package render

import (
	"testing"

	"tgc/pkg/ir"
)

// A negative operand after an infix operator keeps its own parentheses:
// x--0.5f would be a decrement to C (found by ONNX's GridSample with
// reflection padding). The op table's templates are filled in by expand.
func TestInfixNegativeOperand(t *testing.T) {
	for _, c := range []struct {
		op   ir.Op
		args []string
		want string
	}{
		{ir.OpSub, []string{"x", "-0.5f"}, "(x-(-0.5f))"},
		{ir.OpSub, []string{"x", "-INFINITY"}, "(x-(-INFINITY))"},
		{ir.OpAdd, []string{"x", "0.5f"}, "(x+0.5f)"},
		{ir.OpAdd, []string{"-x", "y"}, "(-x+y)"},
		{ir.OpNeg, []string{"-0.5f"}, "(-(-0.5f))"},
		{ir.OpCmpLt, []string{"x", "-1"}, "(x<(-1))"},
		{ir.OpMax, []string{"x", "-0.5f"}, "((x>-0.5f)?x:-0.5f)"},
	} {
		if got := expand(c.op.Info().C, c.args, nil); got != c.want {
			t.Errorf("%s%q = %q, want %q", c.op, c.args, got, c.want)
		}
	}
}
