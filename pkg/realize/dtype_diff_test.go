package realize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// The randomized differential test of the dtype rules (docs/language.md,
// "Dtype rules"): random op chains over every dtype, fused into kernels as
// the engine fuses them, must give GO's results bit for bit on the CPU and
// on CL. The only float difference the rules allow, a float32 or float64
// multiply fused into a following add (FMA contraction), is kept out of
// the chains; TestContractionWithinAnUlp checks it separately.

var diffDTypes = ir.AllDTypes

// diffValue is one tensor of a chain: mul marks a float32 or float64
// product (or its negation), which a C compiler may contract into a
// following add; input marks the chain's inputs (their NaNs have one bit
// pattern everywhere, so they may be bitcast).
type diffValue struct {
	t     *tensor.Tensor
	desc  string
	mul   bool
	input bool
}

// fusable: a product in this dtype may become half of an FMA.
func fusable(dt ir.DType) bool { return dt == ir.Float32 || dt == ir.Float64 }

// diffInput makes an input of dtype dt with edge values mixed in: the
// extremes of each integer type, -1, 0, ±0.0, infinities, NaN, values
// that saturate integer casts.
func diffInput(ctx *tensor.Context, r *rand.Rand, dt ir.DType, shape []int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	var t *tensor.Tensor
	var err error
	if dt.IsFloat() {
		v := make([]float64, n)
		edges := []float64{0, math.Copysign(0, -1), 0.5, -2.5, 3e9, -3e9, 300.5, math.Inf(1), math.Inf(-1), math.NaN(), 65504, 1e300, 3e38, 1e-40}
		for i := range v {
			if r.IntN(8) == 0 {
				v[i] = edges[r.IntN(len(edges))]
			} else {
				v[i] = r.Float64()*8 - 4
			}
		}
		t, err = ctx.FromFloats(dt, shape, v)
	} else {
		v := make([]int64, n)
		lo, hi := dt.Range()
		for i := range v {
			edges := []int64{lo, hi, -1, 0, 1, lo + 1, hi - 1}
			switch {
			case dt == ir.Bool:
				v[i] = int64(r.IntN(2))
			case r.IntN(4) == 0:
				v[i] = edges[r.IntN(len(edges))]
			case r.IntN(2) == 0:
				v[i] = int64(r.IntN(201) - 100)
			case dt.Size() == 8:
				v[i] = int64(r.Uint64())
			default:
				v[i] = lo + r.Int64N(hi-lo+1)
			}
		}
		t, err = ctx.FromInts(dt, shape, v)
	}
	if err != nil {
		panic(err)
	}
	return t
}

// diffGraph builds chain number seed: the same seed gives the same graph
// (and input values) on every device.
func diffGraph(ctx *tensor.Context, seed uint64) (*tensor.Tensor, string) {
	r := rand.New(rand.NewPCG(seed, 15))
	shapes := [][]int{{3, 5}, {3, 5}, {4, 33}, {16, 64}}
	shape := shapes[r.IntN(len(shapes))]
	var pool []diffValue
	for i := 0; i < 3; i++ {
		dt := diffDTypes[r.IntN(len(diffDTypes))]
		pool = append(pool, diffValue{t: diffInput(ctx, r, dt, shape), desc: fmt.Sprintf("in%d:%s", i, dt), input: true})
	}
	pick := func() diffValue { return pool[r.IntN(len(pool))] }
	isInt := func(v diffValue) bool { return !v.t.DType().IsFloat() }
	steps := 4 + r.IntN(6)
	for s := 0; s < steps; s++ {
		a, b := pick(), pick()
		var out diffValue
		f32 := fusable(ir.Promote(a.t.DType(), b.t.DType()))
		switch op := r.IntN(18); {
		case op <= 2: // add, sub, mul
			name := []string{"+", "-", "*"}[op]
			if f32 && op < 2 && (a.mul || b.mul) {
				out = diffValue{t: a.t.Maximum(b.t), desc: "max(" + a.desc + "," + b.desc + ")"}
				break
			}
			fns := []func(*tensor.Tensor) *tensor.Tensor{a.t.Add, a.t.Sub, a.t.Mul}
			out = diffValue{t: fns[op](b.t), desc: "(" + a.desc + name + b.desc + ")", mul: f32 && op == 2}
		case op == 3:
			out = diffValue{t: a.t.Neg(), desc: "-" + a.desc, mul: a.mul}
		case op == 4:
			out = diffValue{t: a.t.Maximum(b.t), desc: "max(" + a.desc + "," + b.desc + ")"}
		case op == 5:
			out = diffValue{t: a.t.Minimum(b.t), desc: "min(" + a.desc + "," + b.desc + ")"}
		case op == 6 && isInt(a) && isInt(b): // integer division, all four flavours
			k := r.IntN(4)
			fns := []func(*tensor.Tensor) *tensor.Tensor{a.t.IDiv, a.t.FloorDiv, a.t.Mod, a.t.Fmod}
			out = diffValue{t: fns[k](b.t), desc: fmt.Sprintf("%s.%s(%s)", a.desc, []string{"idiv", "floordiv", "mod", "fmod"}[k], b.desc)}
		case op == 6:
			out = diffValue{t: a.t.Div(b.t), desc: "(" + a.desc + "/" + b.desc + ")"}
		case op == 7:
			k := r.IntN(3)
			fns := []func(*tensor.Tensor) *tensor.Tensor{a.t.Lt, a.t.Eq, a.t.Ne}
			out = diffValue{t: fns[k](b.t), desc: fmt.Sprintf("(%s%s%s)", a.desc, []string{"<", "==", "!="}[k], b.desc)}
		case op == 8:
			c := pick()
			out = diffValue{t: c.t.Where(a.t, b.t), desc: fmt.Sprintf("where(%s,%s,%s)", c.desc, a.desc, b.desc)}
		case op == 9, op == 10:
			dt := diffDTypes[r.IntN(len(diffDTypes))]
			out = diffValue{t: a.t.Cast(dt), desc: fmt.Sprintf("%s.cast(%s)", a.desc, dt), mul: a.mul && fusable(dt) && dt.Size() >= a.t.DType().Size()}
		case op == 11 && !ir.Promote(a.t.DType(), b.t.DType()).IsFloat():
			k := r.IntN(3)
			fns := []func(*tensor.Tensor) *tensor.Tensor{a.t.And, a.t.Or, a.t.Xor}
			out = diffValue{t: fns[k](b.t), desc: fmt.Sprintf("(%s%s%s)", a.desc, []string{"&", "|", "^"}[k], b.desc)}
		case op == 11:
			out = diffValue{t: a.t.Sqrt(), desc: a.desc + ".sqrt()"}
		case op == 12:
			out = diffValue{t: a.t.Abs(), desc: a.desc + ".abs()"}
		case op == 13 && isInt(a): // an exact reduce, broadcast back by the next binary op
			ax := r.IntN(2)
			out = diffValue{t: a.t.Sum(true, ax), desc: fmt.Sprintf("%s.sum(%d)", a.desc, ax)}
		case op == 13:
			ax := r.IntN(2)
			out = diffValue{t: a.t.Max(true, ax), desc: fmt.Sprintf("%s.max(%d)", a.desc, ax)}
		case op == 14: // movement: flip, pad+shrink (guarded loads)
			if a.t.Ndim() != 2 || a.t.Shape()[1] == 1 {
				out = diffValue{t: a.t.Flip(0), desc: a.desc + ".flip(0)", mul: a.mul}
				break
			}
			sh := a.t.Shape()
			p := a.t.Pad([][2]int{{1, 0}, {0, 2}}, 0).Shrink([][2]int{{0, sh[0]}, {1, sh[1] + 1}})
			out = diffValue{t: p, desc: a.desc + ".pad.shrink", mul: false}
		case op == 15: // cat of two values, shrunk to a's shape across the seam
			if a.t.Ndim() != 2 || b.t.Ndim() != 2 || a.t.Shape()[1] != b.t.Shape()[1] {
				out = diffValue{t: a.t.Flip(1), desc: a.desc + ".flip(1)", mul: a.mul}
				break
			}
			c := a.t.Cat(0, b.t) // rows 1.. of a, then b's first row
			out = diffValue{t: c.Shrink([][2]int{{1, a.t.Shape()[0] + 1}, {0, a.t.Shape()[1]}}), desc: "cat(" + a.desc + "," + b.desc + ")[1:n+1]"}
		case op == 16 && a.t.DType() != ir.Bool && (a.input || !a.t.DType().IsFloat()):
			// the same bits as another dtype of the size (a computed NaN's
			// bits are not the rules' business: only inputs' floats)
			var same []ir.DType
			for _, dt := range diffDTypes {
				if dt != ir.Bool && dt.Size() == a.t.DType().Size() {
					same = append(same, dt)
				}
			}
			dt := same[r.IntN(len(same))]
			out = diffValue{t: a.t.Bitcast(dt), desc: fmt.Sprintf("%s.bitcast(%s)", a.desc, dt)}
		case op == 17 && isInt(a) && isInt(b) && !ir.Promote(a.t.DType(), b.t.DType()).IsFloat():
			// shifts by any count: negative ones and the width or more too
			if r.IntN(2) == 0 {
				out = diffValue{t: a.t.Shl(b.t), desc: "(" + a.desc + "<<" + b.desc + ")"}
			} else {
				out = diffValue{t: a.t.Shr(b.t), desc: "(" + a.desc + ">>" + b.desc + ")"}
			}
		default:
			out = diffValue{t: a.t.Trunc(), desc: a.desc + ".trunc()"}
		}
		if out.t.Err() != nil {
			panic(fmt.Sprintf("%s: %v", out.desc, out.t.Err()))
		}
		pool = append(pool, out)
	}
	last := pool[len(pool)-1]
	return last.t.Contiguous(), last.desc
}

// sameBits compares two results as the rules require: integers and floats
// bit for bit (the sign of zero included), any NaN equal to any NaN.
func sameBits(a, b float64) bool {
	if math.IsNaN(a) && math.IsNaN(b) {
		return true
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

// TestDTypeRulesMatchGO realizes every chain on each device in one
// schedule (one compilation) and compares with GO.
func TestDTypeRulesMatchGO(t *testing.T) {
	count := 120 // TGC_DIFF_CHAINS=N runs more
	if n, err := strconv.Atoi(os.Getenv("TGC_DIFF_CHAINS")); err == nil && n > 0 {
		count = n
	} else if testing.Short() {
		count = 30
	}
	var ref [][]float64
	var descs []string
	for _, dev := range []string{"GO", "CPU", "CL", "CUDA"} {
		e, err := Open(dev, Options{})
		if err != nil {
			if dev == "GO" || (os.Getenv("CI") != "" && dev != "CL" && dev != "CUDA") {
				t.Fatalf("%s: %v", dev, err)
			}
			t.Logf("%s unavailable: %v", dev, err)
			continue
		}
		ctx := tensor.NewContext(e)
		outs := make([]*tensor.Tensor, count)
		descs = descs[:0]
		for i := range outs {
			var d string
			outs[i], d = diffGraph(ctx, uint64(i))
			descs = append(descs, d)
		}
		start := time.Now()
		if err := tensor.RealizeAll(outs...); err != nil {
			t.Fatalf("%s: %v", dev, err)
		}
		t.Logf("%s: %d chains in %v", dev, count, time.Since(start))
		bad := 0
		for i, o := range outs {
			got, err := o.Floats()
			if err != nil {
				t.Fatalf("%s: chain %d: %v", dev, i, err)
			}
			if dev == "GO" {
				ref = append(ref, got)
				continue
			}
			for j := range got {
				if !sameBits(got[j], ref[i][j]) {
					bad++
					if bad <= 5 {
						t.Errorf("%s chain %d %s (%s): element %d: GO %v, %s %v", dev, i, descs[i], o.DType(), j, ref[i][j], dev, got[j])
					}
					break
				}
			}
		}
		if bad > 5 {
			t.Errorf("%s: %d of %d chains differ from GO", dev, bad, count)
		}
	}
}

// TestContractionWithinAnUlp: the one float difference the rules allow, a
// float32 a*b+c fused into one FMA (rounded once), differs from GO's two
// roundings by at most an ulp of the product plus an ulp of the result.
func TestContractionWithinAnUlp(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	n := 4096
	vals := [3][]float64{}
	for k := range vals {
		vals[k] = make([]float64, n)
		for i := range vals[k] {
			vals[k][i] = r.Float64()*8 - 4
		}
	}
	var ref []float64
	for _, dev := range []string{"GO", "CPU", "CL", "CUDA"} {
		e, err := Open(dev, Options{})
		if err != nil {
			continue
		}
		ctx := tensor.NewContext(e)
		in := func(k int) *tensor.Tensor {
			x, _ := ctx.FromFloats(ir.Float32, []int{n}, vals[k])
			return x
		}
		a, b, c := in(0), in(1), in(2)
		got, err := a.Mul(b).Add(c).Floats()
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = got
			continue
		}
		var worst []string
		ulp := func(v float64) float64 {
			f := float32(math.Abs(v))
			return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
		}
		for i := range got {
			// unfused: round(round(a*b)+c); fused: round(a*b+c)
			if d := math.Abs(got[i] - ref[i]); d > ulp(vals[0][i]*vals[1][i])+ulp(ref[i]) {
				worst = append(worst, fmt.Sprintf("element %d: GO %v, %s %v", i, ref[i], dev, got[i]))
			}
		}
		if len(worst) > 0 {
			t.Errorf("%s: %d elements beyond an ulp: %s", dev, len(worst), strings.Join(worst[:min(3, len(worst))], "; "))
		}
	}
}
