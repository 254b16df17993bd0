package render

import "testing"

// A negative right operand keeps its own parentheses: x--0.5f would be a
// decrement to C (found by ONNX's GridSample with reflection padding).
func TestInfixNegativeOperand(t *testing.T) {
	for _, c := range []struct{ a, op, b, want string }{
		{"x", "-", "-0.5f", "(x-(-0.5f))"},
		{"x", "-", "-INFINITY", "(x-(-INFINITY))"},
		{"x", "+", "0.5f", "(x+0.5f)"},
	} {
		if got := infix(c.a, c.op, c.b); got != c.want {
			t.Errorf("infix(%q, %q, %q) = %q, want %q", c.a, c.op, c.b, got, c.want)
		}
	}
}
