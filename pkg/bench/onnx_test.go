package bench

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/onnx"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// The ONNX workloads' jitted runs give, call after call (captures and
// replays, new inputs each time), what the model's plain run gives.
func TestJitRunnerMatchesPlainRun(t *testing.T) {
	m, ctx := onnxCase(t, "pytorch-converted/test_Conv2d_groups")
	in := m.Inputs
	run := jitRunner(ctx, "conv", m)
	rng := rand.New(rand.NewPCG(1, 2))
	for call := range 5 {
		arrays := randomInputs(in, rng)
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

// A served model's calls do not pile up device memory: each call's input
// buffers go back to the device's pool when it returns (left to the garbage
// collector, every call faulted in a fresh upload buffer and the process
// grew by the inputs' size per call).
func TestJitRunnerFreesInputs(t *testing.T) {
	m, ctx := onnxCase(t, "pytorch-converted/test_Conv2d_groups")
	e := ctx.Engine().(*realize.Engine)
	mc, ok := e.Dev.(backend.MemoryCounter)
	if !ok {
		t.Skip("the CPU device does not count its memory")
	}
	arrays := map[string]*onnx.Array{}
	for _, v := range m.Inputs {
		arrays[v.Name] = pattern(v.Name, inputShape(v))
	}
	run := jitRunner(ctx, "conv", m)
	var live []int64
	var outBytes int64
	for range 8 {
		outs, err := run(arrays)
		if err != nil {
			t.Fatal(err)
		}
		outBytes = 0
		for _, o := range outs {
			outBytes += int64(o.Numel() * o.DType().Size())
		}
		live = append(live, mc.Memory().Live)
	}
	// Calls 0 and 1 run the function (and capture it); from call 2 on the
	// replays hold only their outputs, which the caller keeps (the
	// garbage collector frees them later).
	for i := 3; i < len(live); i++ {
		if d := live[i] - live[i-1]; d != outBytes {
			t.Fatalf("call %d: live device memory grew by %d bytes, the outputs are %d (live: %v): the inputs are not freed", i, d, outBytes, live)
		}
	}
}

// An output that is an input's own buffer (an Identity model) is not freed
// with the call's inputs: each call's output keeps its values after the
// calls that follow.
func TestJitRunnerKeepsOutputsThatAreInputs(t *testing.T) {
	m, ctx := onnxCase(t, "node/test_identity")
	run := jitRunner(ctx, "identity", m)
	rng := rand.New(rand.NewPCG(3, 4))
	var ins []*onnx.Array
	var outs []*tensor.Tensor
	for range 5 {
		arrays := randomInputs(m.Inputs, rng)
		for _, v := range m.Inputs {
			ins = append(ins, arrays[v.Name])
		}
		got, err := run(arrays)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || len(arrays) != 1 {
			t.Fatalf("%d outputs of %d inputs, want 1 of 1", len(got), len(arrays))
		}
		outs = append(outs, got[0])
	}
	for call, o := range outs {
		g := floats(t, o)
		for i := range g {
			if w := ins[call].Float(i); g[i] != w {
				t.Fatalf("call %d: output [%d] is %g after the later calls, want its input's %g", call, i, g[i], w)
			}
		}
	}
}

// onnxCase loads a model of ONNX's test data (skipping the test where
// Debian's libonnx-testdata is not installed) and a CPU context for it.
func onnxCase(t *testing.T, name string) (*onnx.Model, *tensor.Context) {
	t.Helper()
	path := "/usr/share/libonnx-testdata/data/" + name + "/model.onnx"
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
	return m, ctx
}

// randomInputs draws a float array of normal values for each input.
func randomInputs(in []onnx.ValueInfo, rng *rand.Rand) map[string]*onnx.Array {
	arrays := map[string]*onnx.Array{}
	for _, v := range in {
		a := onnx.NewArray(onnx.Float, inputShape(v))
		for i := range a.Numel() {
			a.SetFloat(i, rng.NormFloat64())
		}
		arrays[v.Name] = a
	}
	return arrays
}

func inputShape(v onnx.ValueInfo) []int {
	shape := make([]int, len(v.Dims))
	for i, d := range v.Dims {
		shape[i] = d.Value
	}
	return shape
}
