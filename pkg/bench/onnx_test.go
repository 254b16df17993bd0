package bench

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"tgc/pkg/onnx"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// The ONNX workloads' jitted runs give, call after call (captures and
// replays, new inputs each time), what the model's plain run gives.
func TestJitRunnerMatchesPlainRun(t *testing.T) {
	const path = "/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d_groups/model.onnx"
	if _, err := os.Stat(path); err != nil {
		t.Skip("ONNX test data not installed (Debian's libonnx-testdata)")
	}
	m, err := onnx.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skip(err)
	}
	in := m.Inputs
	run := jitRunner(ctx, "conv", m)
	rng := rand.New(rand.NewPCG(1, 2))
	for call := range 5 {
		arrays := map[string]*onnx.Array{}
		for _, v := range in {
			shape := make([]int, len(v.Dims))
			for i, d := range v.Dims {
				shape[i] = d.Value
			}
			a := onnx.NewArray(onnx.Float, shape)
			for i := range a.Numel() {
				a.SetFloat(i, rng.NormFloat64())
			}
			arrays[v.Name] = a
		}
		got, err := run(arrays)
		if err != nil {
			t.Fatal(err)
		}
		inputs := map[string]onnx.Input{}
		for n, a := range arrays {
			x, err := a.Tensor(ctx, n, false)
			if err != nil {
				t.Fatal(err)
			}
			inputs[n] = onnx.Input{Tensor: x}
		}
		want, err := m.Run(ctx, inputs, onnx.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("call %d: %d outputs, want %d", call, len(got), len(want))
		}
		for o := range want {
			g, w := floats(t, got[o]), floats(t, want[o])
			for i := range w {
				if math.Abs(g[i]-w[i]) > 1e-5*(1+math.Abs(w[i])) {
					t.Fatalf("call %d output %d [%d]: %g, want %g", call, o, i, g[i], w[i])
				}
			}
		}
	}
}

func floats(t *testing.T, x *tensor.Tensor) []float64 {
	t.Helper()
	v, err := x.Floats()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
