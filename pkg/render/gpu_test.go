package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// gpuGraphs are goldenGraphs plus kernels that exercise the grid mapping:
// a grouped reduce, more than three global axes, a padded dimension.
func gpuGraphs() map[string]*tensor.Tensor {
	g := goldenGraphs()
	big := input(ir.Float32, 4, 4096)
	g["sum_group"] = big.Sum(false, 1)
	g["max_group2"] = input(ir.Float32, 3, 64, 32).Max(false, 1, 2).Add(big.Sum(false, 1).Shrink([][2]int{{0, 3}}))
	g["axes4"] = input(ir.Float32, 2, 3, 4, 5).Permute(3, 1, 2, 0).Exp2()
	g["padded"] = input(ir.Float32, 1031).Sqrt()
	g["bool_store"] = input(ir.Float32, 7, 9).Lt(tc.Const(0, ir.Float32))
	for name, t := range vecGraphs() {
		g[name] = t
	}
	return g
}

// vecGraphs exercise vector (float4) loads and stores: contiguous aligned
// accesses vectorize, others fall back to one scalar access per lane.
func vecGraphs() map[string]*tensor.Tensor {
	x := input(ir.Float32, 1, 65)
	return map[string]*tensor.Tensor{
		// all loads and the store are float4
		"vec_add": input(ir.Float32, 16, 64).Add(input(ir.Float32, 16, 64)).Exp2(),
		// a transposed load gathers its 4 lanes; the other load and the store are float4
		"vec_transpose": input(ir.Float32, 64, 32).Permute(1, 0).Add(input(ir.Float32, 32, 64)),
		// padding the inner axis: lanes have different guards and an unaligned index (scalar)
		"vec_pad_inner": input(ir.Float32, 8, 12).Pad([][2]int{{0, 0}, {1, 3}}, 0).Sqrt(),
		// padding the outer axis: one guard for all 4 lanes (a guarded float4 load)
		"vec_pad_outer": input(ir.Float32, 6, 16).Pad([][2]int{{1, 1}, {0, 0}}, 0).Sqrt(),
		// x[i] + x[i+1]: the aligned load is float4, the shifted one scalar and
		// sharing three lanes with it
		"vec_shift": x.Shrink([][2]int{{0, 1}, {0, 64}}).Add(x.Shrink([][2]int{{0, 1}, {1, 65}})),
		// float16 storage: half4 / vload_half4 / 8-byte accesses
		"vec_half": input(ir.Float16, 8, 32).Mul(input(ir.Float16, 8, 32)),
	}
}

// kernelsOf schedules and optimizes a graph as the engine does for a
// device of the given target.
func kernelsOf(t *testing.T, name string, out *tensor.Tensor, target ir.Target) []*ir.Kernel {
	t.Helper()
	if err := out.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s, err := fuse.Create([]*tensor.Node{out.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ks []*ir.Kernel
	for _, it := range s.Items {
		k, err := ir.OptimizeFor(it.Kernel, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		k.Name = it.Kernel.Name
		ks = append(ks, k)
	}
	return ks
}

func golden(t *testing.T, lang *Lang, ext string, graphs map[string]*tensor.Tensor) {
	for name, out := range graphs {
		var parts []string
		for _, k := range kernelsOf(t, name, out, lang.Target()) {
			if err := lang.Supports(k); err != nil { // the refusal is the golden
				parts = append(parts, "refused: "+err.Error()+"\n")
				continue
			}
			src := Render(lang, k)
			if again := Render(lang, k); again != src {
				t.Fatalf("%s: rendering is not stable", name)
			}
			parts = append(parts, src)
		}
		got := strings.Join(parts, "\n")
		path := filepath.Join("testdata", name+"."+ext)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./pkg/render -update to create it)", name, err)
		}
		if got != string(want) {
			t.Errorf("%s: rendered %s differs from %s:\n%s", name, lang.Name, path, got)
		}
	}
}

func TestGoldenCL(t *testing.T)    { golden(t, OpenCL, "cl", gpuGraphs()) }
func TestGoldenCUDA(t *testing.T)  { golden(t, CUDA, "cu", gpuGraphs()) }
func TestGoldenMetal(t *testing.T) { golden(t, Metal, "metal", gpuGraphs()) }
func TestGoldenCLNoHalf(t *testing.T) {
	lim := DefaultLimits
	lim.Half = false
	g := goldenGraphs()
	golden(t, OpenCLFor(lim), "nohalf.cl", map[string]*tensor.Tensor{"half_cast": g["half_cast"], "bitcast": g["bitcast"]})
}

// TestLaunch pins the grid mapping and local-size heuristic.
func TestLaunch(t *testing.T) {
	small := Limits{MaxWorkGroup: 64, MaxLocal: [3]int64{64, 64, 64}, MaxGroups: [3]int64{0, 2, 2}, LocalMem: 1 << 14}
	cases := []struct {
		name          string
		out           *tensor.Tensor
		lim           Limits
		global, local []int64
		group         int64
		plain         bool // optimized for no target: no GROUP, no vectors
	}{
		{"fits one group", input(ir.Float32, 10).Sqrt(), DefaultLimits, []int64{10}, []int64{10}, 0, false},
		{"divisor", input(ir.Float32, 1001).Sqrt(), DefaultLimits, []int64{1001}, []int64{143}, 0, false},
		{"vectorized: 4 lanes a thread", input(ir.Float32, 1000).Sqrt(), DefaultLimits, []int64{250}, []int64{250}, 0, false},
		{"padded prime", input(ir.Float32, 1031).Sqrt(), DefaultLimits, []int64{1280}, []int64{256}, 0, false},
		{"2d matmul", input(ir.Float32, 64, 32).Reshape(64, 32, 1).Mul(input(ir.Float32, 32, 16).Reshape(1, 32, 16)).Sum(false, 1), DefaultLimits, []int64{4, 64}, []int64{4, 64}, 0, false},
		{"4 axes merge into dim 2", input(ir.Float32, 2, 3, 4, 5).Permute(3, 1, 2, 0).Exp2(), DefaultLimits, []int64{2, 12, 5}, []int64{2, 12, 5}, 0, false},
		{"group", input(ir.Float32, 4, 4096).Sum(false, 1), DefaultLimits, []int64{256, 4}, []int64{256, 1}, 256, false},
		{"group limited", input(ir.Float32, 4, 4096).Sum(false, 1), Limits{MaxWorkGroup: 64, MaxLocal: [3]int64{64, 64, 64}, LocalMem: 1 << 14}, []int64{64, 4}, []int64{64, 1}, 64, false},
		{"no group without the GPU passes", input(ir.Float32, 4, 4096).Sum(false, 1), DefaultLimits, []int64{4}, []int64{4}, 0, true},
		{"too many groups: flat", input(ir.Float32, 63, 3, 2).Permute(2, 1, 0).Exp2(), small, []int64{378}, []int64{63}, 0, false},
	}
	for _, c := range cases {
		l := CUDA.WithLimits(c.lim)
		target := l.Target()
		if c.plain {
			target = ir.Target{}
		}
		ks := kernelsOf(t, c.name, c.out, target)
		k := ks[len(ks)-1]
		g, loc, ok := l.LaunchSize(k)
		lt := GPULaunch(l, k)
		if !ok || !equal(g, c.global) || !equal(loc, c.local) || lt.Group != c.group {
			t.Errorf("%s (%s): global %v local %v group %d, want %v %v %d", c.name, k.Name, g, loc, lt.Group, c.global, c.local, c.group)
		}
		if lt.Threads() > max(c.lim.MaxWorkGroup, 1) {
			t.Errorf("%s: %d threads per group exceed the limit %d", c.name, lt.Threads(), c.lim.MaxWorkGroup)
		}
		for d := 0; d < 3; d++ {
			if lt.Global[d]%lt.Local[d] != 0 {
				t.Errorf("%s: global %d not a multiple of local %d", c.name, lt.Global[d], lt.Local[d])
			}
		}
	}
	if _, _, ok := C.LaunchSize(nil); ok {
		t.Error("C has no launch geometry")
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
