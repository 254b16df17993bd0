package realize

import (
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestBeamEngine: with BEAM on, the engine searches the matmul kernel,
// stores the result, computes what the GO device computes, and a second
// engine reuses the stored result instead of searching.
func TestBeamEngine(t *testing.T) {
	t.Setenv("TGC_CACHE", t.TempDir())
	r := rand.New(rand.NewPCG(9, 9))
	va, vb := make([]float64, 32*48), make([]float64, 48*32)
	for i := range va {
		va[i], vb[i] = r.Float64()-0.5, r.Float64()-0.5
	}
	build := func(ctx *tensor.Context) *tensor.Tensor {
		a, _ := ctx.FromFloats(ir.Float32, []int{32, 48}, va)
		b, _ := ctx.FromFloats(ir.Float32, []int{48, 32}, vb)
		return a.Dot(b).Relu()
	}
	goc, _, _ := NewContext("GO", Options{})
	want, err := build(goc).Floats()
	if err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 2; run++ {
		ctx, e, err := NewContext("CPU", Options{Beam: 2, BeamBudget: 10 * time.Second, Out: io.Discard})
		if err != nil {
			t.Skipf("CPU unavailable: %v", err)
		}
		got, err := build(ctx).Floats()
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-4 {
				t.Fatalf("run %d: element %d: %v, GO %v", run, i, got[i], want[i])
			}
		}
		st := e.Beam().Stats
		if run == 0 && (st.Searched != 1 || st.Reused != 0) {
			t.Errorf("first engine: %+v, want one search", st)
		}
		if run == 1 && (st.Searched != 0 || st.Reused != 1) {
			t.Errorf("second engine: %+v, want the stored result", st)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(os.Getenv("TGC_CACHE"), "beam", "*.json")); len(files) != 1 {
		t.Errorf("%d stored results, want 1", len(files))
	}
}

// TestBeamGPU: on a grid device (CL, CUDA) BEAM chooses among the grid opts (GROUP
// lane counts, 4 lanes for vector accesses): the search runs, every
// candidate is checked against the unoptimized kernel, the results equal
// GO's and are stored.
func TestBeamGPU(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	vx, vw := make([]float64, 4*4096), make([]float64, 4096*8)
	for i := range vx {
		vx[i] = r.Float64() - 0.5
	}
	for i := range vw {
		vw[i] = r.Float64() - 0.5
	}
	build := func(ctx *tensor.Context) *tensor.Tensor {
		x, _ := ctx.FromFloats(ir.Float32, []int{4, 4096}, vx)
		w, _ := ctx.FromFloats(ir.Float32, []int{4096, 8}, vw)
		return x.Dot(w).Add(x.Sum(true, 1))
	}
	goc, _, _ := NewContext("GO", Options{})
	want, err := build(goc).Floats()
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"CL", "CUDA"} {
		t.Run(dev, func(t *testing.T) {
			t.Setenv("TGC_CACHE", t.TempDir())
			ctx, e, err := NewContext(dev, Options{Beam: 1, BeamBudget: 2 * time.Second, Out: io.Discard})
			if err != nil {
				t.Skipf("%s unavailable: %v", dev, err)
			}
			got, err := build(ctx).Floats()
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-3 {
					t.Fatalf("element %d: %v, GO %v", i, got[i], want[i])
				}
			}
			st := e.Beam().Stats
			if st.Searched == 0 || st.Candidates < 2 {
				t.Errorf("BEAM on %s: %+v, want searches with several candidates", dev, st)
			}
			if files, _ := filepath.Glob(filepath.Join(os.Getenv("TGC_CACHE"), "beam", "*.json")); len(files) != st.Searched {
				t.Errorf("%d stored results, want %d", len(files), st.Searched)
			}
		})
	}
}
