package realize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestEmitGPU: tracing for CL, CUDA and METAL needs no device and writes
// kernels in the dialect plus launch sizes for each kernel.
func TestEmitGPU(t *testing.T) {
	for _, dev := range []struct{ name, ext, marker string }{
		{"CL", "cl", "__kernel"}, {"CUDA", "cu", `extern "C" __global__`}, {"METAL", "metal", "kernel void"},
	} {
		var dump strings.Builder
		tr, err := NewTracer(strings.ToLower(dev.name), Options{Debug: 5, Out: &dump})
		if err != nil {
			t.Fatalf("%s: %v", dev.name, err)
		}
		ctx := tensor.NewContext(tr)
		x, _ := ctx.FromFloats(ir.Float32, []int{4, 4096}, make([]float64, 4*4096))
		w, _ := ctx.FromFloats(ir.Float32, []int{4096, 8}, make([]float64, 4096*8))
		if _, err := x.Dot(w).Relu().Add(x.Sum(true, 1)).Floats(); err != nil {
			t.Fatalf("%s: %v", dev.name, err)
		}
		// The grid decisions are passes: DEBUG=5 shows them.
		for _, want := range []string{" after opts ---", " after vec4 ---", "  group 256 lanes\n", "opts [GROUP(256)]"} {
			if !strings.Contains(dump.String(), want) {
				t.Errorf("%s: no %q in the DEBUG=5 output:\n%s", dev.name, want, dump.String())
			}
		}
		dir := t.TempDir()
		if err := tr.WritePlan(dir); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "plan.json"))
		if err != nil {
			t.Fatal(err)
		}
		var plan Plan
		if err := json.Unmarshal(data, &plan); err != nil {
			t.Fatal(err)
		}
		if plan.Device != dev.name || plan.ABI == "" || len(plan.Kernels) == 0 {
			t.Fatalf("%s: plan device %q abi %q, %d kernels", dev.name, plan.Device, plan.ABI, len(plan.Kernels))
		}
		for _, k := range plan.Kernels {
			if !strings.HasSuffix(k.Source, "."+dev.ext) {
				t.Errorf("%s: kernel source %s", dev.name, k.Source)
			}
			src, err := os.ReadFile(filepath.Join(dir, k.Source))
			if err != nil || !strings.Contains(string(src), dev.marker+" ") && !strings.Contains(string(src), dev.marker+"(") {
				t.Errorf("%s: %s lacks %q (%v)", dev.name, k.Source, dev.marker, err)
			}
			if len(k.Global) == 0 || len(k.Local) != len(k.Global) {
				t.Errorf("%s: %s: global %v local %v", dev.name, k.Name, k.Global, k.Local)
			}
			for i := range k.Global {
				if k.Local[i] <= 0 || k.Global[i]%k.Local[i] != 0 {
					t.Errorf("%s: %s: global %v not a multiple of local %v", dev.name, k.Name, k.Global, k.Local)
				}
			}
		}
	}
}

// TestEmitMetalRefusesFloat64: Metal has no float64; the trace says so
// (naming the kernel) instead of writing a kernel Metal cannot compile.
func TestEmitMetalRefusesFloat64(t *testing.T) {
	tr, err := NewTracer("metal", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := tensor.NewContext(tr)
	x, _ := ctx.FromFloats(ir.Float64, []int{8}, make([]float64, 8))
	err = x.Sqrt().Realize().Err()
	if err == nil || !strings.Contains(err.Error(), "uses float64, which METAL does not have") {
		t.Fatalf("got %v, want a float64 refusal", err)
	}
	// a float32 kernel reading a float64 buffer cannot declare it either
	y, _ := ctx.FromFloats(ir.Float64, []int{8}, make([]float64, 8))
	if err := y.Cast(ir.Float32).Sqrt().Realize().Err(); err == nil {
		t.Fatal("a kernel with a float64 input was emitted for Metal")
	}
}
