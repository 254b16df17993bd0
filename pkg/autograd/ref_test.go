package autograd_test

import (
	"math"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// A dense float64 reference evaluator of the tensor graph (adapted from
// pkg/tensor/math_test.go). Unlike the engine it does not round float
// results to float32: finite differences of it are accurate to ~1e-9, so
// gradient graphs can be checked with tight tolerances, independently of
// the scheduler and the backends.

func forEachIndex(shape []int, f func(idx []int, flat int)) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	idx := make([]int, len(shape))
	for flat := range n {
		f(idx, flat)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
}

func flatIndex(shape, idx []int) int {
	f := 0
	for d, s := range shape {
		f = f*s + idx[d]
	}
	return f
}

func floatOp64(op ir.Op, a, b float64) float64 {
	switch op {
	case ir.OpNeg:
		return -a
	case ir.OpRecip:
		return 1 / a
	case ir.OpExp2:
		return math.Exp2(a)
	case ir.OpLog2:
		return math.Log2(a)
	case ir.OpSin:
		return math.Sin(a)
	case ir.OpSqrt:
		return math.Sqrt(a)
	case ir.OpTrunc:
		return math.Trunc(a)
	case ir.OpAdd:
		return a + b
	case ir.OpSub:
		return a - b
	case ir.OpMul:
		return a * b
	case ir.OpDiv:
		return a / b
	case ir.OpMod:
		return math.Mod(a, b)
	case ir.OpMax:
		return math.Max(a, b)
	}
	panic("floatOp64: " + op.String())
}

// eval64 evaluates n; memo may hold values that replace nodes (the
// perturbed inputs of a finite difference).
func eval64(n *tensor.Node, memo map[*tensor.Node][]float64) []float64 {
	if v, ok := memo[n]; ok {
		return v
	}
	src := make([][]float64, len(n.Src))
	for i, s := range n.Src {
		src[i] = eval64(s, memo)
	}
	out := make([]float64, n.Numel())
	switch {
	case n.Op == ir.OpBuffer:
		b := n.Arg.(*tensor.Buffer)
		data := b.Host
		if data == nil {
			var err error
			if data, err = tc.Engine().Read(n); err != nil {
				panic(err)
			}
		}
		for i := range out {
			out[i] = tensor.GetValue(data, b.DType, i)
		}
	case n.Op == ir.OpConst:
		out[0], _ = n.ConstValue()
	case n.Op == ir.OpContiguous || n.Op == ir.OpReshape:
		copy(out, src[0])
	case n.Op == ir.OpCast:
		for i := range out {
			switch v := src[0][i]; {
			case n.DType.IsFloat():
				out[i] = v
			case n.Src[0].DType.IsFloat():
				out[i] = float64(ir.CastFloatToInt(n.DType, v))
			default:
				out[i] = float64(n.DType.Wrap(int64(v)))
			}
		}
	case n.Op == ir.OpWhere:
		for i := range out {
			if src[0][i] != 0 {
				out[i] = src[1][i]
			} else {
				out[i] = src[2][i]
			}
		}
	case n.Op.IsCompare():
		for i := range out {
			if ir.Compare(n.Op, src[0][i], src[1][i]) {
				out[i] = 1
			}
		}
	case n.Op.IsUnary() || n.Op.IsBinary():
		for i := range out {
			a, b := src[0][i], 0.0
			if len(src) > 1 {
				b = src[1][i]
			}
			if n.DType.IsFloat() {
				out[i] = floatOp64(n.Op, a, b)
			} else {
				out[i] = float64(ir.IntOp(n.Op, n.DType, int64(a), int64(b)))
			}
		}
	case n.Op.IsReduce():
		in := n.Src[0].Shape
		if n.Op == ir.OpMaxReduce {
			for i := range out {
				out[i] = math.Inf(-1)
			}
		}
		oidx := make([]int, len(in))
		forEachIndex(in, func(idx []int, flat int) {
			copy(oidx, idx)
			for _, a := range n.Arg.([]int) {
				oidx[a] = 0
			}
			o := flatIndex(n.Shape, oidx)
			if n.Op == ir.OpSum {
				out[o] += src[0][flat]
			} else {
				out[o] = math.Max(out[o], src[0][flat])
			}
		})
	case n.Op.IsMovement():
		in := n.Src[0].Shape
		sidx := make([]int, len(in))
		forEachIndex(n.Shape, func(idx []int, flat int) {
			switch n.Op {
			case ir.OpPermute:
				for i, a := range n.Arg.([]int) {
					sidx[a] = idx[i]
				}
			case ir.OpExpand:
				for d := range in {
					sidx[d] = idx[d]
					if in[d] == 1 {
						sidx[d] = 0
					}
				}
			case ir.OpShrink:
				for d, b := range n.Arg.([][2]int) {
					sidx[d] = idx[d] + b[0]
				}
			case ir.OpFlip:
				copy(sidx, idx)
				for _, a := range n.Arg.([]int) {
					sidx[a] = in[a] - 1 - idx[a]
				}
			case ir.OpPad:
				for d, p := range n.Arg.([][2]int) {
					sidx[d] = idx[d] - p[0]
					if sidx[d] < 0 || sidx[d] >= in[d] {
						return // padding reads 0
					}
				}
			}
			out[flat] = src[0][flatIndex(in, sidx)]
		})
	default:
		panic("eval64: unhandled op " + n.Op.String())
	}
	memo[n] = out
	return out
}
