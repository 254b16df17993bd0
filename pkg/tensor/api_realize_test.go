package tensor_test

// Numeric sanity of the composed API through the real pipeline (scheduler,
// lowering, simplifier, GO interpreter and CPU backend). This is an
// external test package because realize imports tensor.

import (
	"fmt"
	"math"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

func buf(t *testing.T, c *tensor.Context, dt ir.DType, shape []int, vals ...float64) *tensor.Tensor {
	t.Helper()
	x, err := c.FromFloats(dt, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func ints(n int, k, off float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i)*k + off
	}
	return v
}

func TestAPIThroughEngines(t *testing.T) {
	p := func(i int) *int { return &i }
	x23 := func(c *tensor.Context) *tensor.Tensor { return buf(t, c, ir.Float32, []int{2, 3}, 1, 5, -2, 5, 0, 3) }
	cases := []struct {
		name  string
		build func(c *tensor.Context) *tensor.Tensor
		want  []float64
	}{
		{"softmax", func(c *tensor.Context) *tensor.Tensor { return x23(c).Softmax(-1).Sum(false, 1) }, []float64{1, 1}},
		{"argmax", func(c *tensor.Context) *tensor.Tensor { return x23(c).Argmax(p(1), false) }, []float64{1, 0}},
		{"argmin flat", func(c *tensor.Context) *tensor.Tensor { return x23(c).Argmin(nil, false) }, []float64{2}},
		{"min", func(c *tensor.Context) *tensor.Tensor { return x23(c).Min(false, 0) }, []float64{1, 0, -2}},
		{"var", func(c *tensor.Context) *tensor.Tensor { return x23(c).Var(false, 1, 1) }, []float64{37.0 / 3, 19.0 / 3}},
		{"cumsum", func(c *tensor.Context) *tensor.Tensor { return x23(c).Cumsum(1) }, []float64{1, 6, 4, 5, 5, 8}},
		{"cumsum long", func(c *tensor.Context) *tensor.Tensor {
			return c.Ones([]int{600}, ir.Int32).Cumsum(0).Shrink([][2]int{{595, 600}})
		}, []float64{596, 597, 598, 599, 600}},
		{"arange", func(c *tensor.Context) *tensor.Tensor {
			return c.Arange(3, 300, 7, ir.Int32).Shrink([][2]int{{40, 43}})
		}, []float64{283, 290, 297}},
		{"eye", func(c *tensor.Context) *tensor.Tensor { return c.Eye(2, 3, ir.Float32) }, []float64{1, 0, 0, 0, 1, 0}},
		{"index step", func(c *tensor.Context) *tensor.Tensor {
			return buf(t, c, ir.Float32, []int{3, 4}, ints(12, 1, 0)...).Index([]tensor.IndexItem{tensor.SliceIndex(nil, nil, p(2)), tensor.SliceIndex(p(3), nil, p(-2))})
		}, []float64{3, 1, 11, 9}},
		{"cat", func(c *tensor.Context) *tensor.Tensor {
			return buf(t, c, ir.Float32, []int{2, 1}, 1, 2).Cat(1, buf(t, c, ir.Float32, []int{2, 2}, 3, 4, 5, 6))
		}, []float64{1, 3, 4, 2, 5, 6}},
		{"dot", func(c *tensor.Context) *tensor.Tensor {
			return buf(t, c, ir.Float32, []int{2, 2}, 1, 2, 3, 4).Dot(buf(t, c, ir.Float32, []int{2, 2}, 5, 6, 7, 8))
		}, []float64{19, 22, 43, 50}},
		{"conv2d", func(c *tensor.Context) *tensor.Tensor {
			x := buf(t, c, ir.Float32, []int{1, 1, 3, 3}, ints(9, 1, 1)...)
			w := buf(t, c, ir.Float32, []int{1, 1, 2, 2}, 1, 0, 0, 1)
			return x.Conv2d(w, nil, tensor.ConvOpts{Padding: []int{0}})
		}, []float64{6, 8, 12, 14}},
		{"max_pool2d", func(c *tensor.Context) *tensor.Tensor {
			return buf(t, c, ir.Float32, []int{1, 1, 4, 4}, ints(16, 1, 0)...).MaxPool2d(tensor.PoolOpts{})
		}, []float64{5, 7, 13, 15}},
		{"avg_pool2d ceil", func(c *tensor.Context) *tensor.Tensor {
			return buf(t, c, ir.Float32, []int{1, 3, 3}, ints(9, 1, 0)...).AvgPool2d(tensor.PoolOpts{CeilMode: true}, true)
		}, []float64{2, 3.5, 6.5, 8}},
		{"floordiv mod", func(c *tensor.Context) *tensor.Tensor {
			a := buf(t, c, ir.Int32, []int{4}, -7, 7, -7, 7)
			b := buf(t, c, ir.Int32, []int{4}, 3, 3, -3, -3)
			return a.FloorDiv(b).Mul(buf(t, c, ir.Int32, []int{1}, 10)).Add(a.Mod(b))
		}, []float64{-30 + 2, 20 + 1, 20 - 1, -30 - 2}},
		{"pow", func(c *tensor.Context) *tensor.Tensor {
			return buf(t, c, ir.Float32, []int{3}, -2, 0, 3).Pow(buf(t, c, ir.Float32, []int{3}, 3, 0, 0.5))
		}, []float64{-8, 1, math.Sqrt(3)}},
		{"sparse ce", func(c *tensor.Context) *tensor.Tensor {
			return buf(t, c, ir.Float32, []int{2, 2}, 0, 0, 0, 0).SparseCategoricalCrossentropy(buf(t, c, ir.Int32, []int{2}, 0, 1), -1, 0, "mean")
		}, []float64{math.Ln2}},
		{"tril", func(c *tensor.Context) *tensor.Tensor { return c.Ones([]int{2, 3}, ir.Int32).Tril(0) }, []float64{1, 0, 0, 1, 1, 0}},
		{"gelu", func(c *tensor.Context) *tensor.Tensor { return buf(t, c, ir.Float32, []int{2}, 0, 1).Gelu() }, []float64{0, 0.5 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*1.044715))}},
	}
	for _, dev := range []string{"GO", "CPU"} {
		ctx, _, err := realize.NewContext(dev, realize.Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		for _, c := range cases {
			got, err := c.build(ctx).Floats()
			if err != nil {
				t.Errorf("%s %s: %v", dev, c.name, err)
				continue
			}
			if len(got) != len(c.want) {
				t.Errorf("%s %s: got %v, want %v", dev, c.name, got, c.want)
				continue
			}
			for i := range got {
				if math.Abs(got[i]-c.want[i]) > 1e-5*(1+math.Abs(c.want[i])) {
					t.Errorf("%s %s: got %v, want %v", dev, c.name, got, c.want)
					break
				}
			}
		}
	}
}

// A run makes a context on an engine; tensors are created from it and
// every op after that works in their context.
func ExampleContext() {
	ctx, _, err := realize.NewContext("GO", realize.Options{})
	if err != nil {
		panic(err)
	}
	x, err := ctx.FromFloats(ir.Float32, []int{2, 2}, []float64{1, 2, 3, 4})
	if err != nil {
		panic(err)
	}
	y := x.Dot(x).Add(x.Const(1, ir.Float32)).Relu()
	v, err := y.Floats()
	fmt.Println(v, err)

	other, _, _ := realize.NewContext("GO", realize.Options{})
	fmt.Println(y.Add(other.Ones([]int{2, 2}, ir.Float32)).Err())
	// Output:
	// [8 11 16 23] <nil>
	// tensors of different contexts (runs) cannot be combined; make them in one context
}

// TestReverseExclusiveCumsum: ONNX's reverse exclusive CumSum, a flipped
// scan shifted by a pad, reads x[n+g-r] under a guard that relates the
// output loop and the scan's (r > g); the kernel verifier must prove it
// in bounds (it refused sizes 3 to 15 once).
func TestReverseExclusiveCumsum(t *testing.T) {
	for _, dev := range []string{"GO", "CPU"} {
		ctx, _, err := realize.NewContext(dev, realize.Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		for _, n := range []int{2, 3, 5, 9, 15, 16, 517} {
			vals := make([]float64, n)
			want := make([]float64, n)
			for i := range vals {
				vals[i] = float64((i*5)%7) - 2
			}
			for i := range n {
				for j := i + 1; j < n; j++ {
					want[i] += vals[j]
				}
			}
			for _, dt := range []ir.DType{ir.Float32, ir.Float64} {
				x := buf(t, ctx, dt, []int{n}, vals...)
				got, err := x.Flip(0).Cumsum(0).Pad([][2]int{{1, 0}}, 0).Shrink([][2]int{{0, n}}).Flip(0).Floats()
				if err != nil {
					t.Errorf("%s %s n=%d: %v", dev, dt, n, err)
					continue
				}
				for i := range want {
					if got[i] != want[i] { // small integers: exact
						t.Errorf("%s %s n=%d: got %v, want %v", dev, dt, n, got, want)
						break
					}
				}
			}
		}
	}
}
