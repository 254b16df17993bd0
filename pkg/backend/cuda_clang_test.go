package backend

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/render"
	"tgc/pkg/tensor"
)

// The CUDA runtime's PTX path without libnvrtc: clang with
// render.CUDAClangPrelude. Checked here without a GPU: every kernel
// compiles to PTX with its .entry and no external function.

func clangOrSkip(t *testing.T) string {
	t.Helper()
	clang := findClang()
	if clang == "" {
		t.Skip("no clang-15 or clang (CI installs clang-15)")
	}
	return clang
}

func TestCheckPTX(t *testing.T) {
	ok := ".version 7.1\n.target sm_86\n.visible .entry E_4(\n\t.param .u64 E_4_param_0\n)\n{\n\tret;\n}\n"
	if err := checkPTX(ok, "E_4"); err != nil {
		t.Errorf("valid PTX refused: %v", err)
	}
	if err := checkPTX(ok, "E_5"); err == nil || !strings.Contains(err.Error(), "E_5") {
		t.Errorf("missing entry not reported: %v", err)
	}
	ext := ".extern .func  (.param .b32 func_retval0) __nv_sinf\n(\n\t.param .b32 __nv_sinf_param_0\n)\n;\n" + ok
	if err := checkPTX(ext, "E_4"); err == nil || !strings.Contains(err.Error(), "__nv_sinf") {
		t.Errorf("external function not reported: %v", err)
	}
}

func TestClangArchs(t *testing.T) {
	got := clangArchs(9, 0)
	if got[0] != "sm_90" || got[1] != "sm_89" || got[len(got)-1] != "sm_50" {
		t.Errorf("archs for 9.0: %v", got)
	}
	if got := clangArchs(7, 5); got[0] != "sm_75" || got[1] != "sm_72" {
		t.Errorf("archs for 7.5: %v", got)
	}
}

// TestClangArchFallback: for a compute 9.0 device, an architecture clang
// does not know (clang-15 stops at sm_86) falls back to an older one.
func TestClangArchFallback(t *testing.T) {
	clang := clangOrSkip(t)
	src := "extern \"C\" __global__ void __launch_bounds__(4) E_4(float *__restrict__ out0) { out0[threadIdx.x] = sinf(1.0f); }\n"
	ptx, arch, err := clangPTX(clang, clangArchs(9, 0), src, "E_4")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ptx, ".target "+arch) {
		t.Errorf("PTX for %s lacks its .target:\n%s", arch, ptx)
	}
}

var kernelName = regexp.MustCompile(`__global__ void __launch_bounds__\(\d+\) (\w+)\(`)

// TestClangPTXGolden compiles every golden CUDA file of pkg/render (several
// kernels each) as the runtime would.
func TestClangPTXGolden(t *testing.T) {
	clang := clangOrSkip(t)
	files, _ := filepath.Glob(filepath.Join("..", "render", "testdata", "*.cu"))
	if len(files) == 0 {
		t.Fatal("no golden CUDA files")
	}
	runParallel(t, len(files), func(i int) {
		if filepath.Base(files[i]) == "f64_math.cu" { // float64 exp2: refused without NVRTC (TestClangRefusesFloat64Math)
			return
		}
		src, err := os.ReadFile(files[i])
		if err != nil {
			t.Error(err)
			return
		}
		var names []string
		for _, m := range kernelName.FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
		if _, _, err := clangPTX(clang, clangArchs(8, 0), string(src), names...); err != nil {
			t.Errorf("%s: %v", files[i], err)
		}
	})
}

// TestClangPTXKernels renders kernels using every math function, float16,
// rand, grouped reduces and vector accesses, with two sets of limits, and
// compiles each alone as the runtime does.
func TestClangPTXKernels(t *testing.T) {
	clang := clangOrSkip(t)
	in := func(dt ir.DType, shape ...int) *tensor.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x, err := tc.FromFloats(dt, shape, make([]float64, n))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	x, y := in(ir.Float32, 16, 64), in(ir.Float32, 16, 64)
	h := in(ir.Float16, 8, 32)
	tc.ManualSeed(1)
	graphs := []*tensor.Tensor{
		x.Exp2().Add(y.Log2()).Mul(x.Sin()).Sub(y.Abs().Sqrt()),
		x.Mod(y).Add(x.Trunc()),
		x.Exp().Add(y.Log()).Add(x.Cos()).Add(y.Tanh()).Add(x.Sigmoid()),
		x.Softmax(1),
		h.Mul(h).Add(h.Sin()),
		in(ir.Float32, 4, 4096).Sum(false, 1).Sqrt(),
		in(ir.Float32, 33, 70).Dot(in(ir.Float32, 70, 44)).Relu(),
		in(ir.Float32, 7, 9).Pad([][2]int{{1, 1}, {0, 3}}, 0).Flip(1).Log2(),
		tc.Rand(8, 32).Mul(x.Shrink([][2]int{{0, 8}, {0, 32}})),
	}
	small := render.Limits{MaxWorkGroup: 64, MaxLocal: [3]int64{64, 64, 64}, MaxGroups: [3]int64{0, 2, 2}, LocalMem: 1 << 10}
	type job struct{ name, src string }
	var jobs []job
	for _, g := range graphs {
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		s, err := fuse.Create([]*tensor.Node{g.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range s.Items {
			k, err := ir.Optimize(it.Kernel, nil)
			if err != nil {
				t.Fatal(err)
			}
			k.Name = it.Kernel.Name
			for _, lang := range []*render.Lang{render.CUDA, render.CUDAFor(small)} {
				jobs = append(jobs, job{k.Name, render.Render(lang, k)})
			}
		}
	}
	runParallel(t, len(jobs), func(i int) {
		ptx, _, err := clangPTX(clang, clangArchs(8, 0), jobs[i].src, jobs[i].name)
		if err != nil {
			t.Errorf("%s: %v\n%s", jobs[i].name, err, jobs[i].src)
			return
		}
		for _, op := range []string{"call", ".extern"} {
			if strings.Contains(ptx, op+" ") || strings.Contains(ptx, op+"\t") {
				t.Errorf("%s: PTX contains %q", jobs[i].name, op)
			}
		}
	})
	if len(jobs) < 20 {
		t.Errorf("only %d kernels", len(jobs))
	}
}

// runParallel runs f(0..n-1) on a few goroutines.
func runParallel(t *testing.T, n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// TestClangRefusesFloat64Math: without NVRTC, a kernel with float64 exp2 is
// refused with a reason before clang runs; float64 sqrt compiles.
func TestClangRefusesFloat64Math(t *testing.T) {
	b := ir.NewBuilder()
	i := &ir.Axis{ID: 0, Size: 4, Kind: ir.AxisGlobal}
	x := b.Load(1, ir.Float64, b.Var(i), nil)
	mk := func(op ir.Op) *ir.Kernel {
		return &ir.Kernel{Name: "E_4", B: b, Global: []*ir.Axis{i},
			Bufs:   []ir.BufParam{{DType: ir.Float64, Size: 4, Output: true}, {DType: ir.Float64, Size: 4}},
			Stores: []*ir.Expr{b.Store(0, b.Var(i), b.Alu(op, x))}}
	}
	if err := clangSupports(mk(ir.OpExp2)); err == nil || !strings.Contains(err.Error(), "float64 exp2, which needs NVRTC") {
		t.Errorf("float64 exp2: %v", err)
	}
	if err := clangSupports(mk(ir.OpSqrt)); err != nil {
		t.Errorf("float64 sqrt: %v", err)
	}
	clang := clangOrSkip(t)
	src := render.Render(render.CUDA, mk(ir.OpSqrt))
	if _, _, err := clangPTX(clang, clangArchs(8, 0), src, "E_4"); err != nil {
		t.Errorf("float64 sqrt through clang: %v", err)
	}
}

// tc is the context of this package's test graphs (they are scheduled and
// rendered, never realized).
var tc = tensor.NewContext(nil)

// TestCUDAObjectsCached: the CUDA device's images go through the kernel
// cache (checked with the clang path, which needs no GPU): a first
// compile builds and stores the image, a second (another process's, a
// fresh device) loads the same bytes without running the compiler, a
// damaged entry is rebuilt and replaced, and the key names the target.
func TestCUDAObjectsCached(t *testing.T) {
	clang := clangOrSkip(t)
	t.Setenv("TGC_CACHE", t.TempDir())
	newDev := func() *cudaDevice {
		return &cudaDevice{info: &cudaInfo{major: 8, minor: 0, clang: clang}, lang: render.CUDA}
	}
	x, err := tc.FromFloats(ir.Float32, []int{4, 64}, make([]float64, 256))
	if err != nil {
		t.Fatal(err)
	}
	s, err := fuse.Create([]*tensor.Node{x.Exp2().Sum(false, 1).Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Optimize(s.Items[0].Kernel, nil)
	if err != nil {
		t.Fatal(err)
	}
	ks, srcs, todo := []*ir.Kernel{k}, []string{render.Render(render.CUDA, k)}, []int{0}
	compile := func(d *cudaDevice) ([]cudaObject, CompileCounts, error) {
		var objs []cudaObject
		_, counts, err := d.during(func() ([]Program, error) {
			var err error
			objs, err = d.objectsFor(ks, srcs, todo)
			return nil, err
		})
		return objs, counts, err
	}
	d := newDev()
	objs, counts, err := compile(d)
	if err != nil || counts.Builds != 1 || counts.CacheHits != 0 || !strings.Contains(objs[0].ptx, ".entry "+k.Name) {
		t.Fatalf("first compile: %+v, %v", counts, err)
	}
	dir := filepath.Join(CacheDir(), "cuda")
	key := d.cacheKey(srcs[0])
	stored, err := os.ReadFile(filepath.Join(dir, key+".so"))
	if err != nil {
		t.Fatalf("nothing stored: %v", err)
	}
	objs, counts, err = compile(newDev())
	if err != nil || counts.Builds != 0 || counts.CacheHits != 1 || !strings.HasPrefix(string(stored), string(objs[0].image)) {
		t.Fatalf("second compile: %+v, %v", counts, err)
	}
	damaged := append([]byte{}, stored...)
	damaged[10] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, key+".so"), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, counts, err = compile(newDev()); err != nil || counts.Builds != 1 {
		t.Fatalf("damaged entry: %+v, %v", counts, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, key+".so")); string(got) != string(stored) {
		t.Error("the damaged entry was not replaced")
	}
	other := newDev()
	other.info.minor = 6
	if other.cacheKey(srcs[0]) == key {
		t.Error("the key does not name the target")
	}
}
