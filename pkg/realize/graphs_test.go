package realize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/half"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// nd is a dense row-major float64 array: the reference the random graphs
// are checked against, computed by index arithmetic of its own (no view,
// no kernel, no pass of tgc's in between).
type nd struct {
	shape []int
	v     []float64
	dt    ir.DType // float32, float16 (rounded after every op), or int32 (exact: compared exactly)
	scale float64  // a bound on the magnitudes its values were computed from
	rel   float64  // the tolerance, relative to scale: float16 anywhere in its past widens it
}

func ndSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// ndGen is the array of shape whose element at each index is f(index).
func ndGen(shape []int, f func(idx []int) float64) nd {
	a := nd{shape: slices.Clone(shape), v: make([]float64, ndSize(shape))}
	idx := make([]int, len(shape))
	for i := range a.v {
		a.v[i] = f(idx)
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return a
}

// at is the element at idx; a dimension of size 1 broadcasts (any index
// reads its one element).
func (a nd) at(idx []int) float64 {
	off := 0
	for d, n := range a.shape {
		i := idx[d]
		if n == 1 {
			i = 0
		}
		off = off*n + i
	}
	return a.v[off]
}

// of is a of dtype dt (its values rounded to float16 for float16), made
// from ins: its scale at least s and its own largest value, its tolerance
// the widest of theirs and dt's.
func (a nd) of(dt ir.DType, s float64, ins ...nd) nd {
	a.dt, a.scale, a.rel = dt, s, 2e-6
	if dt == ir.Float16 {
		a.rel = 8e-3 // a few roundings to 11 bits inside a composite function
		for i, x := range a.v {
			a.v[i] = float64(half.ToFloat32(half.FromFloat32(float32(x))))
		}
	}
	for _, in := range ins {
		a.rel = max(a.rel, in.rel)
	}
	for _, x := range a.v {
		a.scale = math.Max(a.scale, math.Abs(x))
	}
	return a
}

// graphProg is a random graph of Tensor-API calls, replayable on any
// context: step i makes value i from the values before it (inputs are
// steps too), ref[i] is its reference.
type graphProg struct {
	desc  []string
	steps []func(ctx *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor
	ref   []nd
	outs  []int
}

func (p *graphProg) add(desc string, ref nd, f func(ctx *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor) int {
	p.desc = append(p.desc, desc)
	p.steps = append(p.steps, f)
	p.ref = append(p.ref, ref)
	return len(p.steps) - 1
}

// input is a new input of shape: values in [-1, 1) (float16 ones
// rounded), or int32 ones in [-9, 9].
func (p *graphProg) input(r *rand.Rand, dt ir.DType, shape []int) int {
	vals, scale := float32Values(r, ndSize(shape)), 1.0
	if dt == ir.Int32 {
		scale = 9
		for i := range vals {
			vals[i] = float64(r.IntN(19) - 9)
		}
	}
	shape = slices.Clone(shape)
	return p.add(fmt.Sprintf("input%v %s", shape, dt), nd{shape: shape, v: vals}.of(dt, scale), func(ctx *tensor.Context, _ []*tensor.Tensor) *tensor.Tensor {
		t, err := ctx.FromFloats(dt, shape, vals)
		if err != nil {
			panic(err)
		}
		return t
	})
}

// build replays the program on ctx.
func (p *graphProg) build(ctx *tensor.Context) []*tensor.Tensor {
	vs := make([]*tensor.Tensor, 0, len(p.steps))
	for _, f := range p.steps {
		vs = append(vs, f(ctx, vs))
	}
	return vs
}

func (p *graphProg) String() string {
	var sb strings.Builder
	for i, d := range p.desc {
		fmt.Fprintf(&sb, "  v%d = %s  %v\n", i, d, p.ref[i].shape)
	}
	fmt.Fprintf(&sb, "  outputs %v", p.outs)
	return sb.String()
}

// graphMaxElems bounds a value's elements (the draws that would grow past
// it draw again).
const graphMaxElems = 1 << 14

// drawGraph draws a chain of 3-10 calls on one input of float32, int32
// or float16 (with casts between them), inputs and earlier values joining
// it: unary functions, broadcast binaries, where, sums and maxes over
// some axes, permutes, reshapes, expands, pads, shrinks, flips, cats,
// products, cumsums, contiguous copies, softmaxes and log-softmaxes; the
// first input sometimes with dimensions of 9-48 (the CPU's vectors and
// register blocks). Its outputs are the last value and sometimes an
// intermediate one (realized in the same schedule, so the kernels share
// it).
func drawGraph(r *rand.Rand) *graphProg {
	p := &graphProg{}
	rank := 1 + r.IntN(4)
	shape := make([]int, rank)
	big := r.IntN(3) == 0 // dimensions the CPU's vectors and register blocks take
	for i := range shape {
		shape[i] = 1 + r.IntN(7)
		if big && i >= rank-2 {
			shape[i] = []int{9, 16, 17, 24, 32, 33, 48}[r.IntN(7)]
		}
	}
	dt := []ir.DType{ir.Float32, ir.Float32, ir.Int32, ir.Float16}[r.IntN(4)]
	x := p.input(r, dt, shape)
	n := 3 + r.IntN(8)
	for range n {
		for {
			if y, ok := p.randomCall(r, x); ok {
				x = y
				break
			}
		}
	}
	p.outs = []int{x}
	if r.IntN(3) == 0 {
		if mid := r.IntN(x); !slices.Contains(p.outs, mid) && !strings.HasPrefix(p.desc[mid], "input") {
			p.outs = append(p.outs, mid)
		}
	}
	return p
}

// randomCall draws one call on value x (false: the draw does not apply to
// x's shape; draw again).
func (p *graphProg) randomCall(r *rand.Rand, x int) (int, bool) {
	a := p.ref[x]
	shape, rank := a.shape, len(a.shape)
	axis := r.IntN(max(rank, 1))
	switch r.IntN(15) {
	case 0: // unary
		type unary struct {
			name string
			f    func(float64) float64
			t    func(*tensor.Tensor) *tensor.Tensor
		}
		us := []unary{
			{"neg", func(v float64) float64 { return -v }, (*tensor.Tensor).Neg},
			{"relu", func(v float64) float64 { return math.Max(v, 0) }, (*tensor.Tensor).Relu},
			{"sqrt(abs)", func(v float64) float64 { return math.Sqrt(math.Abs(v)) }, func(t *tensor.Tensor) *tensor.Tensor { return t.Abs().Sqrt() }},
			{"sigmoid", func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }, (*tensor.Tensor).Sigmoid},
			{"sin", math.Sin, (*tensor.Tensor).Sin},
			{"exp(tanh)", func(v float64) float64 { return math.Exp(math.Tanh(v)) }, func(t *tensor.Tensor) *tensor.Tensor { return t.Tanh().Exp() }},
		}
		if a.dt == ir.Int32 { // exact integer functions (Python's floor division and modulo, C's truncation)
			int3 := func(t *tensor.Tensor, v int64) *tensor.Tensor { return t.ScalarInt(v, false) }
			us = []unary{
				{"neg", func(v float64) float64 { return -v }, (*tensor.Tensor).Neg},
				{"abs", math.Abs, (*tensor.Tensor).Abs},
				{"relu", func(v float64) float64 { return math.Max(v, 0) }, (*tensor.Tensor).Relu},
				{"% 7", func(v float64) float64 { return v - 7*math.Floor(v/7) }, func(t *tensor.Tensor) *tensor.Tensor { return t.Mod(int3(t, 7)) }},
				{"// 3", func(v float64) float64 { return math.Floor(v / 3) }, func(t *tensor.Tensor) *tensor.Tensor { return t.FloorDiv(int3(t, 3)) }},
				{"idiv 3", func(v float64) float64 { return math.Trunc(v / 3) }, func(t *tensor.Tensor) *tensor.Tensor { return t.IDiv(int3(t, 3)) }},
				{"float32", func(v float64) float64 { return v }, func(t *tensor.Tensor) *tensor.Tensor { return t.Cast(ir.Float32) }},
			}
		}
		switch a.dt {
		case ir.Float32:
			us = append(us, unary{"float16", func(v float64) float64 { return v }, func(t *tensor.Tensor) *tensor.Tensor { return t.Cast(ir.Float16) }})
		case ir.Float16:
			us = append(us, unary{"float32", func(v float64) float64 { return v }, func(t *tensor.Tensor) *tensor.Tensor { return t.Cast(ir.Float32) }})
		}
		u := us[r.IntN(len(us))]
		if u.name == "float32" || u.name == "float16" {
			to := map[string]ir.DType{"float32": ir.Float32, "float16": ir.Float16}[u.name]
			ref := ndGen(shape, a.at).of(to, a.scale, a)
			return p.add(fmt.Sprintf("v%d.cast(%s)", x, u.name), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return u.t(vs[x]) }), true
		}
		ref := ndGen(shape, func(idx []int) float64 { return u.f(a.at(idx)) }).of(a.dt, a.scale, a)
		return p.add(fmt.Sprintf("%s(v%d)", u.name, x), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return u.t(vs[x]) }), true
	case 1, 2: // binary, the other operand an input or an earlier value that broadcasts with x
		o := -1
		if r.IntN(2) == 0 {
			for _, i := range r.Perm(x) {
				if broadcasts(p.ref[i].shape, shape) && p.ref[i].dt == a.dt {
					o = i
					break
				}
			}
		}
		if o < 0 {
			oshape := slices.Clone(shape)
			for d := range oshape {
				if r.IntN(3) == 0 {
					oshape[d] = 1
				}
			}
			o = p.input(r, a.dt, oshape)
		}
		b := p.ref[o]
		out := slices.Clone(shape)
		for d := range out {
			out[d] = max(shape[d], b.shape[d])
		}
		type binary struct {
			name string
			f    func(x, y float64) float64
			t    func(x, y *tensor.Tensor) *tensor.Tensor
		}
		bs := []binary{
			{"+", func(x, y float64) float64 { return x + y }, (*tensor.Tensor).Add},
			{"*", func(x, y float64) float64 { return x * y }, (*tensor.Tensor).Mul},
			{"-", func(x, y float64) float64 { return x - y }, (*tensor.Tensor).Sub},
			{"maximum", math.Max, (*tensor.Tensor).Maximum},
			{"/(|.|+0.5)", func(x, y float64) float64 { return x / (math.Abs(y) + 0.5) },
				func(x, y *tensor.Tensor) *tensor.Tensor { return x.Div(y.Abs().Add(y.Scalar(0.5, true))) }},
		}
		if a.dt == ir.Int32 {
			if maxAbs(a)+maxAbs(b) >= 1<<30 {
				return 0, false // a sum could wrap (the reference does not)
			}
			pos := func(y *tensor.Tensor) *tensor.Tensor { return y.Abs().Add(y.ScalarInt(1, false)) }
			bs = []binary{
				{"+", func(x, y float64) float64 { return x + y }, (*tensor.Tensor).Add},
				{"-", func(x, y float64) float64 { return x - y }, (*tensor.Tensor).Sub},
				{"maximum", math.Max, (*tensor.Tensor).Maximum},
				{"xor", func(x, y float64) float64 { return float64(int32(x) ^ int32(y)) }, (*tensor.Tensor).Xor},
				{"and", func(x, y float64) float64 { return float64(int32(x) & int32(y)) }, (*tensor.Tensor).And},
				{"or", func(x, y float64) float64 { return float64(int32(x) | int32(y)) }, (*tensor.Tensor).Or},
				{"// (|.|+1)", func(x, y float64) float64 { return math.Floor(x / (math.Abs(y) + 1)) },
					func(x, y *tensor.Tensor) *tensor.Tensor { return x.FloorDiv(pos(y)) }},
				{"% (|.|+1)", func(x, y float64) float64 { d := math.Abs(y) + 1; return x - d*math.Floor(x/d) },
					func(x, y *tensor.Tensor) *tensor.Tensor { return x.Mod(pos(y)) }},
				{"idiv (|.|+1)", func(x, y float64) float64 { return math.Trunc(x / (math.Abs(y) + 1)) },
					func(x, y *tensor.Tensor) *tensor.Tensor { return x.IDiv(pos(y)) }},
			}
			if maxAbs(a)*maxAbs(b) < 1<<30 {
				bs = append(bs, binary{"*", func(x, y float64) float64 { return x * y }, (*tensor.Tensor).Mul})
			}
		}
		f := bs[r.IntN(len(bs))]
		swap := r.IntN(2) == 0 && !strings.Contains(f.name, "|")
		ref := ndGen(out, func(idx []int) float64 {
			if swap {
				return f.f(b.at(idx), a.at(idx))
			}
			return f.f(a.at(idx), b.at(idx))
		}).of(a.dt, 2*a.scale*math.Max(b.scale, 1), a, b)
		return p.add(fmt.Sprintf("v%d %s v%d (swapped %v)", x, f.name, o, swap), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor {
			if swap {
				return f.t(vs[o], vs[x])
			}
			return f.t(vs[x], vs[o])
		}), true
	case 3: // where, the condition a comparison of two inputs (exact in both)
		cshape := slices.Clone(shape)
		for d := range cshape {
			if r.IntN(3) == 0 {
				cshape[d] = 1
			}
		}
		c1, c2 := p.input(r, ir.Float32, cshape), p.input(r, ir.Float32, cshape)
		alt := 0.25
		if a.dt == ir.Int32 {
			alt = 3
		}
		ref := ndGen(shape, func(idx []int) float64 {
			if p.ref[c1].at(idx) < p.ref[c2].at(idx) {
				return a.at(idx)
			}
			return alt
		}).of(a.dt, a.scale, a)
		return p.add(fmt.Sprintf("where(v%d < v%d, v%d, %g)", c1, c2, x, alt), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor {
			return vs[c1].Lt(vs[c2]).Where(vs[x], vs[x].Scalar(alt, a.dt != ir.Int32))
		}), true
	case 4: // sum or max over some axes
		if rank == 0 {
			return 0, false
		}
		var axes []int
		for d := range rank {
			if r.IntN(2) == 0 {
				axes = append(axes, d)
			}
		}
		if len(axes) == 0 {
			axes = []int{axis}
		}
		keep := r.IntN(2) == 0 || len(axes) == rank
		isMax := r.IntN(3) == 0
		kshape := slices.Clone(shape)
		fan := 1
		for _, d := range axes {
			kshape[d] = 1
			fan *= shape[d]
		}
		if a.dt == ir.Int32 && !isMax && float64(fan)*maxAbs(a) >= 1<<30 {
			return 0, false
		}
		acc := ndGen(kshape, func([]int) float64 {
			if isMax {
				return math.Inf(-1)
			}
			return 0
		})
		ndGen(shape, func(idx []int) float64 {
			k := slices.Clone(idx)
			for _, d := range axes {
				k[d] = 0
			}
			off := 0
			for d, n := range kshape {
				off = off*n + k[d]
			}
			if v := a.at(idx); isMax {
				acc.v[off] = math.Max(acc.v[off], v)
			} else {
				acc.v[off] += v
			}
			return 0
		})
		ref := acc
		if !keep {
			var out []int
			for d, n := range shape {
				if !slices.Contains(axes, d) {
					out = append(out, n)
				}
			}
			ref.shape = out
		}
		scale := a.scale * float64(fan)
		name := "sum"
		if isMax {
			name, scale = "max", a.scale
		}
		ref = ref.of(a.dt, scale, a)
		return p.add(fmt.Sprintf("v%d.%s(keepdim=%v, %v)", x, name, keep, axes), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor {
			if isMax {
				return vs[x].Max(keep, axes...)
			}
			return vs[x].Sum(keep, axes...)
		}), true
	case 5: // permute
		if rank < 2 {
			return 0, false
		}
		perm := r.Perm(rank)
		out := make([]int, rank)
		for i, d := range perm {
			out[i] = shape[d]
		}
		ref := ndGen(out, func(idx []int) float64 {
			j := make([]int, rank)
			for i, d := range perm {
				j[d] = idx[i]
			}
			return a.at(j)
		}).of(a.dt, a.scale, a)
		return p.add(fmt.Sprintf("v%d.permute%v", x, perm), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Permute(perm...) }), true
	case 6: // reshape: merge two neighbours, split one, or insert a 1
		out := slices.Clone(shape)
		switch k := r.IntN(3); {
		case k == 0 && rank >= 2:
			d := r.IntN(rank - 1)
			out = slices.Concat(shape[:d], []int{shape[d] * shape[d+1]}, shape[d+2:])
		case k == 1 && rank > 0 && rank < 5:
			var divs []int
			for q := 2; q < shape[axis]; q++ {
				if shape[axis]%q == 0 {
					divs = append(divs, q)
				}
			}
			if len(divs) == 0 {
				return 0, false
			}
			q := divs[r.IntN(len(divs))]
			out = slices.Concat(shape[:axis], []int{q, shape[axis] / q}, shape[axis+1:])
		case rank < 5:
			at := r.IntN(rank + 1)
			out = slices.Concat(shape[:at], []int{1}, shape[at:])
		default:
			return 0, false
		}
		ref := nd{shape: out, v: a.v, dt: a.dt, scale: a.scale, rel: a.rel}
		return p.add(fmt.Sprintf("v%d.reshape%v", x, out), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Reshape(out...) }), true
	case 7: // expand a dimension of 1
		var ones []int
		for d, n := range shape {
			if n == 1 {
				ones = append(ones, d)
			}
		}
		if len(ones) == 0 {
			return 0, false
		}
		out := slices.Clone(shape)
		out[ones[r.IntN(len(ones))]] = 2 + r.IntN(4)
		if ndSize(out) > graphMaxElems {
			return 0, false
		}
		ref := ndGen(out, a.at).of(a.dt, a.scale, a)
		return p.add(fmt.Sprintf("v%d.expand%v", x, out), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Expand(out...) }), true
	case 8: // pad
		if rank == 0 {
			return 0, false
		}
		pads := make([][2]int, rank)
		out := slices.Clone(shape)
		for d := range pads {
			if d == axis || r.IntN(3) == 0 {
				pads[d] = [2]int{r.IntN(3), r.IntN(3)}
			}
			out[d] += pads[d][0] + pads[d][1]
		}
		if ndSize(out) > graphMaxElems {
			return 0, false
		}
		value := []float64{0, 0, 0.5, -1}[r.IntN(4)]
		if a.dt == ir.Int32 {
			value = math.Trunc(value)
		}
		ref := ndGen(out, func(idx []int) float64 {
			j := make([]int, rank)
			for d := range idx {
				if j[d] = idx[d] - pads[d][0]; j[d] < 0 || j[d] >= shape[d] {
					return value
				}
			}
			return a.at(j)
		}).of(a.dt, a.scale, a)
		return p.add(fmt.Sprintf("v%d.pad(%v, %g)", x, pads, value), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Pad(pads, value) }), true
	case 9: // shrink
		if rank == 0 {
			return 0, false
		}
		bounds := make([][2]int, rank)
		out := make([]int, rank)
		for d, n := range shape {
			b := r.IntN(n)
			e := b + 1 + r.IntN(n-b)
			bounds[d], out[d] = [2]int{b, e}, e-b
		}
		ref := ndGen(out, func(idx []int) float64 {
			j := make([]int, rank)
			for d := range idx {
				j[d] = idx[d] + bounds[d][0]
			}
			return a.at(j)
		}).of(a.dt, a.scale, a)
		return p.add(fmt.Sprintf("v%d.shrink%v", x, bounds), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Shrink(bounds) }), true
	case 10: // flip
		if rank == 0 {
			return 0, false
		}
		axes := []int{axis}
		for d := range rank {
			if d != axis && r.IntN(3) == 0 {
				axes = append(axes, d)
			}
		}
		ref := ndGen(shape, func(idx []int) float64 {
			j := slices.Clone(idx)
			for _, d := range axes {
				j[d] = shape[d] - 1 - idx[d]
			}
			return a.at(j)
		}).of(a.dt, a.scale, a)
		return p.add(fmt.Sprintf("v%d.flip%v", x, axes), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Flip(axes...) }), true
	case 11: // cat with an input along an axis
		if rank == 0 {
			return 0, false
		}
		oshape := slices.Clone(shape)
		oshape[axis] = 1 + r.IntN(3)
		out := slices.Clone(shape)
		out[axis] += oshape[axis]
		if ndSize(out) > graphMaxElems {
			return 0, false
		}
		o := p.input(r, a.dt, oshape)
		first := r.IntN(2) == 0 // x first
		b := p.ref[o]
		ref := ndGen(out, func(idx []int) float64 {
			j := slices.Clone(idx)
			lead, lb, tail := a, shape[axis], b
			if !first {
				lead, lb, tail = b, oshape[axis], a
			}
			if j[axis] < lb {
				return lead.at(j)
			}
			j[axis] -= lb
			return tail.at(j)
		}).of(a.dt, math.Max(a.scale, 1), a, b)
		return p.add(fmt.Sprintf("cat(v%d first %v, v%d, axis %d)", x, first, o, axis), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor {
			if first {
				return vs[x].Cat(axis, vs[o])
			}
			return vs[o].Cat(axis, vs[x])
		}), true
	case 12: // a product with an input (x a matrix)
		if rank != 2 {
			return 0, false
		}
		m, k, n := shape[0], shape[1], 1+r.IntN(9)
		if a.dt == ir.Int32 && float64(k)*maxAbs(a)*9 >= 1<<30 {
			return 0, false
		}
		o := p.input(r, a.dt, []int{k, n})
		b := p.ref[o]
		ref := ndGen([]int{m, n}, func(idx []int) float64 {
			s := 0.0
			for q := range k {
				s += a.at([]int{idx[0], q}) * b.at([]int{q, idx[1]})
			}
			return s
		}).of(a.dt, a.scale*float64(k), a, b)
		return p.add(fmt.Sprintf("v%d.dot(v%d)", x, o), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Dot(vs[o]) }), true
	case 13: // cumsum, or a contiguous copy
		if rank == 0 {
			return 0, false
		}
		if r.IntN(2) == 0 {
			ref := nd{shape: shape, v: a.v, dt: a.dt, scale: a.scale, rel: a.rel}
			return p.add(fmt.Sprintf("v%d.contiguous()", x), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Contiguous() }), true
		}
		if a.dt == ir.Int32 && float64(shape[axis])*maxAbs(a) >= 1<<30 {
			return 0, false
		}
		ref := ndGen(shape, func(idx []int) float64 {
			j, s := slices.Clone(idx), 0.0
			for q := 0; q <= idx[axis]; q++ {
				j[axis] = q
				s += a.at(j)
			}
			return s
		}).of(a.dt, a.scale*float64(shape[axis]), a)
		return p.add(fmt.Sprintf("v%d.cumsum(%d)", x, axis), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor { return vs[x].Cumsum(axis) }), true
	case 14: // softmax or log_softmax along an axis (max, exponentials and a sum over it)
		if rank == 0 || a.dt == ir.Int32 {
			return 0, false
		}
		logs := r.IntN(3) == 0
		lse := ndGen(shape, func(idx []int) float64 {
			j, m := slices.Clone(idx), math.Inf(-1)
			for q := range shape[axis] {
				j[axis] = q
				m = math.Max(m, a.at(j))
			}
			s := 0.0
			for q := range shape[axis] {
				j[axis] = q
				s += math.Exp(a.at(j) - m)
			}
			return m + math.Log(s)
		})
		ref := ndGen(shape, func(idx []int) float64 {
			if logs {
				return a.at(idx) - lse.at(idx)
			}
			return math.Exp(a.at(idx) - lse.at(idx))
		}).of(a.dt, a.scale*float64(shape[axis]), a)
		name := "softmax"
		if logs {
			name = "log_softmax"
		}
		return p.add(fmt.Sprintf("v%d.%s(%d)", x, name, axis), ref, func(_ *tensor.Context, vs []*tensor.Tensor) *tensor.Tensor {
			if logs {
				return vs[x].LogSoftmax(axis)
			}
			return vs[x].Softmax(axis)
		}), true
	}
	return 0, false
}

// maxAbs is the largest magnitude in a.
func maxAbs(a nd) float64 {
	m := 0.0
	for _, v := range a.v {
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// broadcasts says whether o broadcasts against x: the same rank, each
// dimension equal or 1 in o.
func broadcasts(o, x []int) bool {
	if len(o) != len(x) {
		return false
	}
	for d := range o {
		if o[d] != x[d] && o[d] != 1 {
			return false
		}
	}
	return true
}

// TestRandomGraphsMatchReference: random graphs of Tensor-API calls
// (drawGraph) realized on GO, on the CPU at each width and on OpenCL
// where there is a device, every device's graphs in one schedule,
// against float64 arrays computed by index arithmetic of the test's own:
// it checks fusion, the views folded into index expressions, the passes
// and the renderers together, where TestRandomLayersMatchGO compares two
// devices that share the first two. 48 graphs; TGC_GRAPHS=N draws N,
// TGC_GRAPHS_SEED=S others.
func TestRandomGraphsMatchReference(t *testing.T) {
	count, r := sweep("GRAPHS", 48, 29, 5)
	progs := make([]*graphProg, count)
	for i := range progs {
		progs[i] = drawGraph(r)
	}
	check := func(name string, e *Engine) {
		ctx := tensor.NewContext(e)
		var outs []*tensor.Tensor
		for _, p := range progs {
			vs := p.build(ctx)
			for _, o := range p.outs {
				outs = append(outs, vs[o])
			}
		}
		if err := tensor.RealizeAll(outs...); err != nil {
			// the graph that fails alone, to name it
			for i, p := range progs {
				vs := p.build(tensor.NewContext(e))
				var mine []*tensor.Tensor
				for _, o := range p.outs {
					mine = append(mine, vs[o])
				}
				if err := tensor.RealizeAll(mine...); err != nil {
					t.Fatalf("%s, graph %d:\n%s\n%v", name, i, p, err)
				}
			}
			t.Fatalf("%s: %v (no graph fails alone)", name, err)
		}
		k := 0
		for i, p := range progs {
			for _, o := range p.outs {
				got, err := outs[k].Floats()
				k++
				want := p.ref[o]
				if err != nil {
					t.Fatalf("%s, graph %d:\n%s\n%v", name, i, p, err)
				}
				if !slices.Equal(outs[k-1].Shape(), want.shape) && !(len(want.shape) == 0 && ndSize(outs[k-1].Shape()) == 1) {
					t.Errorf("%s, graph %d, v%d: shape %v, want %v\n%s", name, i, o, outs[k-1].Shape(), want.shape, p)
					continue
				}
				if dt := outs[k-1].DType(); dt != want.dt {
					t.Errorf("%s, graph %d, v%d: dtype %s, want %s\n%s", name, i, o, dt, want.dt, p)
					continue
				}
				tol := 1e-6 + want.rel*want.scale
				if want.dt == ir.Int32 {
					tol = 0
				}
				if j, bad := mismatch(want.v, got, tol); bad || want.dt == ir.Int32 && !slices.Equal(want.v, got) {
					if !bad {
						for j = range got {
							if got[j] != want.v[j] {
								break
							}
						}
					}
					t.Errorf("%s, graph %d, v%d: element %d: %v, want %v (scale %g)\n%s", name, i, o, j, got[j], want.v[j], want.scale, p)
				}
			}
		}
	}
	goe, err := Open("GO", Options{})
	if err != nil {
		t.Fatal(err)
	}
	check("GO", goe)
	for _, w := range cpuWidths() {
		dev, err := backend.OpenCPUWidth(w)
		if err != nil {
			t.Skipf("CPU unavailable: %v", err)
		}
		check(fmt.Sprintf("CPU at %d lanes", w), New(dev, Options{}))
	}
	// the OpenCL renderer too, where there is a device (PoCL in CI)
	if cl, err := Open("CL", Options{}); err == nil {
		check("CL", cl)
	} else {
		t.Logf("CL unavailable: %v", err)
	}
}
