package realize

import (
	"math"
	"math/rand/v2"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestUpcastMatchesGO: kernels big enough for the CPU's upcast pass
// (register blocking) give the GO device's results, which run without it.
func TestUpcastMatchesGO(t *testing.T) {
	cpu, err := Open("CPU", Options{})
	if err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	goe, _ := Open("GO", Options{})
	r := rand.New(rand.NewPCG(3, 4))
	data := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = r.Float64()*2 - 1
		}
		return v
	}
	va, vb, vbias, vx, vw := data(48*64), data(64*48), data(40), data(2*3*12*16), data(8*3*3*3)
	graphs := map[string]func(ctx *tensor.Context) *tensor.Tensor{
		"matmul+bias+relu": func(ctx *tensor.Context) *tensor.Tensor {
			a, _ := ctx.FromFloats(ir.Float32, []int{48, 64}, va)
			b, _ := ctx.FromFloats(ir.Float32, []int{64, 40}, vb[:64*40])
			bias, _ := ctx.FromFloats(ir.Float32, []int{40}, vbias)
			return a.Dot(b).Add(bias).Relu()
		},
		"batched matmul": func(ctx *tensor.Context) *tensor.Tensor {
			a, _ := ctx.FromFloats(ir.Float32, []int{3, 16, 64}, va[:3*16*64])
			b, _ := ctx.FromFloats(ir.Float32, []int{3, 64, 16}, vb[:3*64*16])
			return a.Dot(b)
		},
		"conv2d": func(ctx *tensor.Context) *tensor.Tensor {
			x, _ := ctx.FromFloats(ir.Float32, []int{2, 3, 12, 16}, vx)
			w, _ := ctx.FromFloats(ir.Float32, []int{8, 3, 3, 3}, vw)
			return x.Conv2d(w, nil, tensor.ConvOpts{Padding: []int{1}})
		},
		"max over rows": func(ctx *tensor.Context) *tensor.Tensor {
			a, _ := ctx.FromFloats(ir.Float32, []int{48, 64}, va)
			return a.Max(false, 1).Add(a.Sum(false, 1))
		},
		"softmax": func(ctx *tensor.Context) *tensor.Tensor {
			a, _ := ctx.FromFloats(ir.Float32, []int{48, 64}, va)
			return a.Softmax(-1)
		},
	}
	for name, build := range graphs {
		var res [2][]float64
		for d, e := range []*Engine{goe, cpu} {
			ctx := tensor.NewContext(e)
			if res[d], err = build(ctx).Floats(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		for i := range res[0] {
			if a, b := res[0][i], res[1][i]; math.Abs(a-b) > 1e-4+1e-4*math.Abs(a) {
				t.Errorf("%s: element %d: GO %v, CPU %v", name, i, a, b)
				break
			}
		}
	}
}

// TestUpcastPassApplies: the matmul kernel really is blocked (so the test
// above exercises it): 40 x 2 lanes for a 48x40 output (8-lane vectors:
// 5 vectors, the whole row, by 2 rows).
func TestUpcastPassApplies(t *testing.T) {
	ctx := tensor.NewContext(nil)
	a, _ := ctx.FromFloats(ir.Float32, []int{48, 64}, make([]float64, 48*64))
	b, _ := ctx.FromFloats(ir.Float32, []int{64, 40}, make([]float64, 64*40))
	sched := scheduleOf(t, a.Dot(b))
	k, err := ir.OptimizeFor(sched, ir.CPUTarget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Stores) != 80 {
		t.Errorf("upcast made %d stores, want 40x2 = 80", len(k.Stores))
	}
}

func scheduleOf(t *testing.T, x *tensor.Tensor) *ir.Kernel {
	t.Helper()
	s, err := fuse.Create([]*tensor.Node{x.Node()}, fuse.Options{})
	if err != nil || len(s.Items) != 1 {
		t.Fatalf("schedule: %v (%d kernels)", err, len(s.Items))
	}
	return s.Items[0].Kernel
}

// TestSplitReduceMatches: a sum and a max big enough to be split in two
// stages equal the float64 result on both devices.
func TestSplitReduceMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	vals := make([]float64, 1<<16)
	want, wantMax := 0.0, math.Inf(-1)
	for i := range vals {
		vals[i] = float64(float32(r.Float64()*2 - 1))
		want += vals[i]
		wantMax = math.Max(wantMax, vals[i])
	}
	for _, dev := range []string{"GO", "CPU"} {
		ctx, _, err := NewContext(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		x, _ := ctx.FromFloats(ir.Float32, []int{1 << 16}, vals)
		got, err := x.Sum(false).Item()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-3 {
			t.Errorf("%s: sum %v, want %v", dev, got, want)
		}
		gotMax, _ := x.Reshape(16, 4096).Max(false).Item()
		if gotMax != wantMax {
			t.Errorf("%s: max %v, want %v", dev, gotMax, wantMax)
		}
	}
}
