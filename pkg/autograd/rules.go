package autograd

import (
	"math"

	"tgc/pkg/tensor"
)

// rule returns the gradient of each source of n given the gradient g of n
// (nil where a source gets none): the rule the op table names for n's op
// (ir.OpInfo.Grad). An op with none passes no gradient (piecewise
// constant, or not float).
func rule(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
	name := n.Op.Info().Grad
	if name == "" && n.Op.IsALU() {
		return nil
	}
	if r, ok := gradRules[name]; ok {
		return r(n, g)
	}
	errs := make([]*tensor.Tensor, len(n.Src))
	for i := range errs {
		errs[i] = tensor.Errorf("gradient", "no gradient rule for %s", n.Op)
	}
	return errs
}

// gradRule computes the gradients of n's sources from n's gradient g.
// Every rule builds its result with the Tensor API; sources of an ALU node
// already have n's shape and dtype.
type gradRule func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor

func src(n *tensor.Node, i int) *tensor.Tensor { return tensor.FromNode(n.Src[i]) }

// konst is a constant of n's dtype, in n's run.
func konst(n *tensor.Node, v float64) *tensor.Tensor { return tensor.FromNode(n).Const(v, n.DType) }

// gradRules are the gradient rules by the names the op table gives them.
var gradRules = map[string]gradRule{
	// ---- elementwise ----
	"add": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{g, g} },
	"sub": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{g, g.Neg()} },
	"mul": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{g.Mul(src(n, 1)), g.Mul(src(n, 0))}
	},
	"div": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { // n = a/b: da = g/b, db = -g*a/b^2 = -g*n/b
		return []*tensor.Tensor{g.Div(src(n, 1)), g.Mul(tensor.FromNode(n)).Div(src(n, 1)).Neg()}
	},
	"neg": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{g.Neg()} },
	"recip": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { // d(1/x) = -1/x^2 = -n*n
		self := tensor.FromNode(n)
		return []*tensor.Tensor{g.Mul(self).Mul(self).Neg()}
	},
	"exp2": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { // d 2^x = 2^x * ln2
		return []*tensor.Tensor{g.Mul(tensor.FromNode(n)).Mul(konst(n, math.Ln2))}
	},
	"log2": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { // d log2(x) = 1/(x ln2)
		return []*tensor.Tensor{g.Div(src(n, 0).Mul(konst(n, math.Ln2)))}
	},
	"sin": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{g.Mul(src(n, 0).Cos())}
	},
	"sqrt": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { // d sqrt(x) = 1/(2 sqrt(x))
		return []*tensor.Tensor{g.Div(tensor.FromNode(n).Mul(konst(n, 2)))}
	},
	"cast": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { // the gradient flows back in the source's dtype
		if !n.Src[0].DType.IsFloat() {
			return nil
		}
		return []*tensor.Tensor{g.Cast(n.Src[0].DType)}
	},
	"max": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { // ties split the gradient in half
		a, b := src(n, 0), src(n, 1)
		tie := a.Eq(b).Where(g.Mul(konst(n, 0.5)), konst(n, 0))
		return []*tensor.Tensor{a.Gt(b).Where(g, tie), b.Gt(a).Where(g, tie)}
	},
	"where": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		cond := src(n, 0)
		return []*tensor.Tensor{nil, cond.Where(g, konst(n, 0)), cond.Where(konst(n, 0), g)}
	},

	// ---- reduce (the node keeps the reduced axes as size 1) ----
	"sum": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{g.Expand(n.Src[0].Shape...)}
	},
	"max_reduce": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { // one-hot of the maxima, divided by their count
		x := src(n, 0)
		mask := x.Eq(tensor.FromNode(n).Expand(n.Src[0].Shape...))
		count := mask.Sum(true, n.Arg.([]int)...).Cast(n.DType)
		return []*tensor.Tensor{mask.Where(g.Div(count).Expand(n.Src[0].Shape...), konst(n, 0))}
	},

	// ---- movement ----
	"reshape": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{g.Reshape(n.Src[0].Shape...)}
	},
	"permute": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		order := n.Arg.([]int)
		inv := make([]int, len(order))
		for i, a := range order {
			inv[a] = i
		}
		return []*tensor.Tensor{g.Permute(inv...)}
	},
	"expand": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
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
	},
	"pad": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		pads := n.Arg.([][2]int)
		bounds := make([][2]int, len(pads))
		for i, p := range pads {
			bounds[i] = [2]int{p[0], p[0] + n.Src[0].Shape[i]}
		}
		return []*tensor.Tensor{g.Shrink(bounds)}
	},
	"shrink": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		bounds, ok := n.Arg.([][2]int)
		if !ok {
			return []*tensor.Tensor{tensor.Errorf("gradient", "no gradient through a shrink with symbolic bounds %v", n.Arg)}
		}
		pads := make([][2]int, len(bounds))
		for i, b := range bounds {
			pads[i] = [2]int{b[0], n.Src[0].Shape[i] - b[1]}
		}
		return []*tensor.Tensor{g.Pad(pads, 0)}
	},
	"flip": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{g.Flip(n.Arg.([]int)...)}
	},
	"contiguous": func(n *tensor.Node, g *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{g} },
}
