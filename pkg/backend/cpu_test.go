package backend

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"

	"tgc/pkg/ir"
)

func cpuOrSkip(t *testing.T) *cpuDevice {
	t.Helper()
	cc, err := findCompiler()
	if err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	t.Setenv("TGC_CACHE", t.TempDir())
	return &cpuDevice{cc: cc, progs: map[string]*cpuProgram{}}
}

func TestNoCompilerIsExplained(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CC", "")
	_, err := probeCompiler()
	if err == nil || !strings.Contains(err.Error(), "no C compiler found (tried cc, gcc, clang") {
		t.Fatalf("got %v, want a 'no C compiler found' error naming what was tried", err)
	}
}

const addOne = `#include <stdint.h>
void add_one(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *o = (float *)bufs[0];
  for (int64_t i = start; i < end; i++) o[i] += 1.0f;
}
`

// TestCorruptCacheEntryIsRebuilt: a cache file that does not load is
// deleted and rebuilt, not trusted and not fatal.
func TestCorruptCacheEntryIsRebuilt(t *testing.T) {
	d := cpuOrSkip(t)
	src := addOne + "/* corrupt-entry test */\n"
	path := d.cachePath(src)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not an ELF file"), 0o600); err != nil {
		t.Fatal(err)
	}
	lib, err := d.build(src)
	if err != nil {
		t.Fatalf("build with a corrupt entry: %v", err)
	}
	if _, err := purego.Dlsym(lib.handle, "add_one"); err != nil {
		t.Fatalf("rebuilt library lacks the kernel: %v", err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "\x7fELF") {
		t.Fatal("cache entry was not replaced by a shared object")
	}
	if info, err := os.Stat(filepath.Dir(path)); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %v, want 0700", info.Mode().Perm())
	}
}

// TestConcurrentBuilds: builders racing on the same entry all succeed
// (temp file + rename), as separate tgc processes sharing a cache do.
func TestConcurrentBuilds(t *testing.T) {
	d := cpuOrSkip(t)
	src := addOne + "/* concurrency test */\n"
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := &cpuDevice{cc: d.cc, progs: map[string]*cpuProgram{}}
			_, errs[i] = other.build(src)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("builder %d: %v", i, err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(d.cachePath(src)), "build-*"))
	if len(left) != 0 {
		t.Errorf("temporary build directories left behind: %v", left)
	}
}

// TestBuildErrorShowsLog: a kernel that fails to compile reports the
// compiler's log.
func TestBuildErrorShowsLog(t *testing.T) {
	d := cpuOrSkip(t)
	_, err := d.build("void broken(void) { this is not C; }\n")
	be, ok := err.(*BuildError)
	if !ok || !strings.Contains(be.Log, "error") {
		t.Fatalf("got %v, want a BuildError carrying the compiler log", err)
	}
}

// TestParallelSplitCoversRange: the outer loop is split into disjoint
// chunks that cover [0, n).
func TestParallelSplitCoversRange(t *testing.T) {
	for _, n := range []int64{1, 2, 3, 7, 1000} {
		var mu sync.Mutex
		seen := make([]int, n)
		parallel(n, func(lo, hi int64) {
			mu.Lock()
			defer mu.Unlock()
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("n=%d: index %d covered %d times", n, i, c)
			}
		}
	}
}

// TestSplitUnits: every kernel lands in exactly one unit, small batches
// stay one unit (one compiler process), big ones use every core, and
// nothing to compile means no unit at all.
func TestSplitUnits(t *testing.T) {
	src := func(n, size int) ([]int, []string) {
		var todo []int
		var srcs []string
		for i := 0; i < n; i++ {
			todo = append(todo, i)
			srcs = append(srcs, strings.Repeat("x", size))
		}
		return todo, srcs
	}
	for _, tc := range []struct{ n, size, cores, units int }{
		{0, 100, 4, 0},
		{3, 100, 4, 1},
		{40, 4000, 2, 2},
		{40, 4000, 8, 8},
		{3, 40000, 8, 3},
	} {
		todo, srcs := src(tc.n, tc.size)
		units := splitUnits(todo, srcs, tc.cores)
		if len(units) != tc.units {
			t.Errorf("%+v: %d units", tc, len(units))
		}
		seen := map[int]int{}
		for _, u := range units {
			if len(u) == 0 {
				t.Errorf("%+v: empty unit", tc)
			}
			for _, i := range u {
				seen[i]++
			}
		}
		for _, i := range todo {
			if seen[i] != 1 {
				t.Errorf("%+v: kernel %d in %d units", tc, i, seen[i])
			}
		}
	}
	// One long kernel among short ones: placed first, it gets a unit of
	// its own share (30 + 10 against 10 + 10 + 10), where in order it
	// would land on a unit already holding two (10 + 10 + 30 against 20).
	srcs := []string{strings.Repeat("x", 10000), strings.Repeat("x", 10000), strings.Repeat("x", 10000), strings.Repeat("x", 10000), strings.Repeat("x", 30000)}
	units := splitUnits([]int{0, 1, 2, 3, 4}, srcs, 2)
	for _, u := range units {
		size := 0
		for _, i := range u {
			size += len(srcs[i])
		}
		if size > 40000 {
			t.Errorf("units %v: one holds %d bytes of source, want at most 40000 of 70000", units, size)
		}
	}
}

// TestConcurrentOpen: devices are opened once per name and settings, also
// when many runs open them at once; a CPU device opened with a cache
// directory stores its kernels there.
func TestConcurrentOpen(t *testing.T) {
	if _, err := findCompiler(); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	a, b := Options{CacheDir: t.TempDir()}, Options{CacheDir: t.TempDir()}
	devs := make([]Device, 16)
	var wg sync.WaitGroup
	for i := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := a
			if i%2 == 1 {
				opts = b
			}
			d, err := OpenWith("cpu", opts)
			if err != nil {
				t.Error(err)
			}
			devs[i] = d
		}()
	}
	wg.Wait()
	if devs[0] != devs[2] || devs[1] != devs[3] || devs[0] == devs[1] {
		t.Fatal("OpenWith does not give one device per name and settings")
	}
	lib, err := devs[1].(*cpuDevice).build(addOne + "/* open test */\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lib.path, filepath.Join(b.CacheDir, "kernels")+string(filepath.Separator)) {
		t.Errorf("kernel stored at %s, want under %s", lib.path, b.CacheDir)
	}
}

// TestMemoryAccount: the CPU device counts the bytes of its live buffers
// and their peak; a freed buffer's memory is pooled (and reused by the
// next buffer of its size) until ReleasePooled.
func TestMemoryAccount(t *testing.T) {
	d, err := OpenCPUWidth(hostVecWidth())
	if err != nil {
		t.Skip(err)
	}
	mem := d.(MemoryCounter)
	check := func(what string, want MemoryUsage) {
		t.Helper()
		if got := mem.Memory(); got != want {
			t.Errorf("%s: %+v, want %+v", what, got, want)
		}
	}
	a, _ := d.Alloc(ir.Float32, 1000)
	b, _ := d.Alloc(ir.Uint8, 3)
	check("two buffers", MemoryUsage{Live: 4003, Peak: 4003})
	a.Free()
	a.Free() // twice: counted once
	check("one freed", MemoryUsage{Live: 3, Peak: 4003, Pooled: 4000})
	mem.ResetPeak()
	check("peak reset", MemoryUsage{Live: 3, Peak: 3, Pooled: 4000})
	c, _ := d.Alloc(ir.Int32, 1000) // the pooled 4000 bytes again
	check("reused", MemoryUsage{Live: 4003, Peak: 4003})
	c.Free()
	b.Free()
	mem.ReleasePooled()
	check("released", MemoryUsage{Peak: 4003})
}
