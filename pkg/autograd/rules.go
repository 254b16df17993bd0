package autograd

import (
	"math"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// rule returns the gradient of each source of n given the gradient g of n
// (nil where a source gets none). Every rule builds its result with the
// Tensor API; sources of an ALU node already have n's shape and dtype.
func rule(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
	src := func(i int) *tensor.Tensor { return tensor.FromNode(n.Src[i]) }
	self := tensor.FromNode(n)
	c := func(v float64) *tensor.Tensor { return self.Const(v, n.DType) }
	switch n.Op {
	// ---- elementwise ----
	case ir.OpAdd:
		return []*tensor.Tensor{g, g}
	case ir.OpSub:
		return []*tensor.Tensor{g, g.Neg()}
	case ir.OpMul:
		return []*tensor.Tensor{g.Mul(src(1)), g.Mul(src(0))}
	case ir.OpDiv: // n = a/b: da = g/b, db = -g*a/b^2 = -g*n/b
		return []*tensor.Tensor{g.Div(src(1)), g.Mul(self).Div(src(1)).Neg()}
	case ir.OpNeg:
		return []*tensor.Tensor{g.Neg()}
	case ir.OpRecip: // d(1/x) = -1/x^2 = -n*n
		return []*tensor.Tensor{g.Mul(self).Mul(self).Neg()}
	case ir.OpExp2: // d 2^x = 2^x * ln2
		return []*tensor.Tensor{g.Mul(self).Mul(c(math.Ln2))}
	case ir.OpLog2: // d log2(x) = 1/(x ln2)
		return []*tensor.Tensor{g.Div(src(0).Mul(c(math.Ln2)))}
	case ir.OpSin:
		return []*tensor.Tensor{g.Mul(src(0).Cos())}
	case ir.OpSqrt: // d sqrt(x) = 1/(2 sqrt(x))
		return []*tensor.Tensor{g.Div(self.Mul(c(2)))}
	case ir.OpCast: // the gradient flows back in the source's dtype
		if !n.Src[0].DType.IsFloat() {
			return nil
		}
		return []*tensor.Tensor{g.Cast(n.Src[0].DType)}
	case ir.OpMax: // ties split the gradient in half
		a, b := src(0), src(1)
		tie := a.Eq(b).Where(g.Mul(c(0.5)), c(0))
		return []*tensor.Tensor{a.Gt(b).Where(g, tie), b.Gt(a).Where(g, tie)}
	case ir.OpWhere:
		cond := src(0)
		return []*tensor.Tensor{nil, cond.Where(g, c(0)), cond.Where(c(0), g)}
	case ir.OpTrunc, ir.OpMod, ir.OpNot, ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpCmpLt, ir.OpCmpNe, ir.OpCmpEq:
		return nil // piecewise constant or not float: no gradient

	// ---- reduce (the node keeps the reduced axes as size 1) ----
	case ir.OpSum:
		return []*tensor.Tensor{g.Expand(n.Src[0].Shape...)}
	case ir.OpMaxReduce: // one-hot of the maxima, divided by their count
		x := src(0)
		mask := x.Eq(self.Expand(n.Src[0].Shape...))
		count := mask.Sum(true, n.Arg.([]int)...).Cast(n.DType)
		return []*tensor.Tensor{mask.Where(g.Div(count).Expand(n.Src[0].Shape...), c(0))}

	// ---- movement ----
	case ir.OpReshape:
		return []*tensor.Tensor{g.Reshape(n.Src[0].Shape...)}
	case ir.OpPermute:
		order := n.Arg.([]int)
		inv := make([]int, len(order))
		for i, a := range order {
			inv[a] = i
		}
		return []*tensor.Tensor{g.Permute(inv...)}
	case ir.OpExpand:
		var axes []int
		for i, d := range n.Src[0].Shape {
			if d == 1 && n.Shape[i] != 1 {
				axes = append(axes, i)
			}
		}
		if len(axes) == 0 {
			return []*tensor.Tensor{g}
		}
		return []*tensor.Tensor{g.Sum(true, axes...)}
	case ir.OpPad:
		pads := n.Arg.([][2]int)
		bounds := make([][2]int, len(pads))
		for i, p := range pads {
			bounds[i] = [2]int{p[0], p[0] + n.Src[0].Shape[i]}
		}
		return []*tensor.Tensor{g.Shrink(bounds)}
	case ir.OpShrink:
		bounds, ok := n.Arg.([][2]int)
		if !ok {
			return []*tensor.Tensor{tensor.Errorf("gradient", "no gradient through a shrink with symbolic bounds %v", n.Arg)}
		}
		pads := make([][2]int, len(bounds))
		for i, b := range bounds {
			pads[i] = [2]int{b[0], n.Src[0].Shape[i] - b[1]}
		}
		return []*tensor.Tensor{g.Pad(pads, 0)}
	case ir.OpFlip:
		return []*tensor.Tensor{g.Flip(n.Arg.([]int)...)}
	case ir.OpContiguous:
		return []*tensor.Tensor{g}
	}
	errs := make([]*tensor.Tensor, len(n.Src))
	for i := range errs {
		errs[i] = tensor.Errorf("gradient", "no gradient rule for %s", n.Op)
	}
	return errs
}
