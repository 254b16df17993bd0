package backend

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"tgc/pkg/backend/kcache"
	"tgc/pkg/ir"
	"tgc/pkg/render"
)

// The CPU device: kernels rendered as C, compiled by the system compiler
// (found at run time, exec'd with an argument list, never a shell) into a
// shared object in a content-addressed cache, loaded with purego (no cgo),
// and launched with the outermost loop split across cores.

func init() {
	register(entry{name: "CPU", rank: 10,
		probe: func() (string, error) {
			cc, err := findCompiler()
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s (%s), %d cores", cc.path, cc.version, runtime.NumCPU()), nil
		},
		open: func(opts Options) (Device, error) {
			cc, err := findCompiler()
			if err != nil {
				return nil, err
			}
			w := hostVecWidth()
			return &cpuDevice{cc: cc, progs: map[string]*cpuProgram{}, width: w, cacheDir: opts.CacheDir}, nil
		}})
}

// baseCFlags are the compiler flags on every host (compilerFlags adds to
// them). No -ffast-math: results stay reproducible on a machine (FMA
// contraction still differs from GO in the last bit).
// -fno-trapping-math changes no value (tgc never reads the FP exception
// flags) but lets gcc compute both arms of a select whose arm divides
// (where(mask, g/n, 0) in a pool's gradient): with trapping math the
// division stays behind a branch and the loop is not vectorized.
// -fopenmp-simd makes gcc honour a kernel's `#pragma omp simd` (ir.VecLoops:
// a loop of symbolic length vectorized, its sums in lanes) and nothing
// else of OpenMP (no runtime, no threads).
var baseCFlags = []string{"-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-fno-trapping-math", "-fno-semantic-interposition", "-fopenmp-simd"}

// noHalfArith keeps float16 arithmetic off where the host has it
// (AVX512-FP16): kernels compute float16 in float registers and round each
// result with tg_round_half, but gcc narrows float ops on rounded halves to
// half ops and then contracts a half multiply and add into one FMA,
// skipping a rounding (x*y+x in float16 gave 19.140625, not 19.125, on a
// Xeon with avx512_fp16). Without the extension the conversions stay
// (F16C, AVX-512F) and nothing else in a kernel uses it.
const noHalfArith = "-mno-avx512fp16"

// compilerFlags are baseCFlags plus noHalfArith where the host has AVX512-FP16
// and the compiler takes the flag (one too old to take it cannot emit half
// arithmetic either).
func compilerFlags(hostFlags []string, accepts func(flag string) bool) []string {
	flags := slices.Clone(baseCFlags)
	if slices.Contains(hostFlags, "avx512_fp16") && accepts(noHalfArith) {
		flags = append(flags, noHalfArith)
	}
	return flags
}

type compiler struct {
	path, version string
	flags         []string // compilerFlags for this compiler and host
}

var (
	ccOnce sync.Once
	ccInfo compiler
	ccErr  error
)

// findCompiler looks for a C compiler once per process.
func findCompiler() (compiler, error) {
	ccOnce.Do(func() { ccInfo, ccErr = probeCompiler() })
	return ccInfo, ccErr
}

// probeCompiler looks for $CC, then cc, gcc, clang on PATH, and checks that
// the one it finds runs.
func probeCompiler() (compiler, error) {
	var tried []string
	cands := []string{"cc", "gcc", "clang"}
	if env := os.Getenv("CC"); env != "" {
		cands = append([]string{env}, cands...)
	}
	for _, c := range cands {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c)
			continue
		}
		out, err := exec.Command(path, "--version").Output()
		if err != nil {
			tried = append(tried, c+" (does not run)")
			continue
		}
		accepts := func(flag string) bool {
			cmd := exec.Command(path, flag, "-fsyntax-only", "-x", "c", "-")
			cmd.Stdin = strings.NewReader("int x;\n")
			return cmd.Run() == nil
		}
		return compiler{path: path, version: strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]),
			flags: compilerFlags(Host().Flags, accepts)}, nil
	}
	return compiler{}, fmt.Errorf("no C compiler found (tried %s on PATH; set CC or install gcc)", strings.Join(tried, ", "))
}

type cpuDevice struct {
	cc       compiler
	cacheDir string // "" = CacheDir()
	width    int    // float32 lanes of the host's vectors (hostVecWidth): the simd pass's width
	mu       sync.Mutex
	progs    map[string]*cpuProgram // by source without the name (sourceKey): compiled kernels in memory
	pool     mmapPool               // the buffers' memory

	wmu        sync.Mutex
	warnings   []string        // not yet taken by the engine
	warnedOnce map[string]bool // warnings given once per device
	cleaned    map[string]bool // cache folders cleaned of stale builds

	compileCounter
	launch *launcher // runs parallel launches on the device's worker threads
}

// flags are the compiler's flags for this device's kernels: with 16-lane
// vectors, gcc's own vectorization (of what the simd pass leaves: a
// streamed line's lanes, elementwise loops) prefers them too. gcc tunes
// some AVX-512 Intel parts for 256-bit vectors, and a streamed line
// written as two 256-bit halves and read back as one 512-bit vector
// missed store forwarding: softmax_4096's kernel took 7.0-7.4 ms instead
// of 4.6 (Xeon guest, a C harness of the rendered kernel).
func (d *cpuDevice) flags() []string {
	if d.width == 16 {
		return append(slices.Clone(d.cc.flags), "-mprefer-vector-width=512")
	}
	return d.cc.flags
}

func (d *cpuDevice) Name() string { return "CPU" }

// Target: C compilers turn upcast lanes into vector code, blocked for the
// host's vector width.
func (d *cpuDevice) Target() ir.Target {
	t := ir.CPUTarget
	t.VecWidth = d.width
	t.L1, t.L2, t.L3 = Host().L1d, Host().L2, Host().OutputCache()
	// Every buffer is its own mapping (mmapPool): page aligned.
	t.BufAlign = int64(os.Getpagesize())
	if HostHasAVX512() { // 32 vector registers at any width (EVEX encodings)
		t.VecRegs = 32
	}
	t.FMAWidth = Host().FMAWidth()
	t.FarPrefetch = Host().FarPrefetch()
	return t
}

// Fingerprint identifies what a kernel's speed depends on: the compiler,
// its flags, the processor and its cache sizes (the key of BEAM's stored
// results).
func (d *cpuDevice) Fingerprint() string {
	return strings.Join([]string{"CPU", d.cc.path, d.cc.version, strings.Join(d.flags(), " "), cpuModel(), Host().CacheKey(), fmt.Sprintf("vec%d", d.width)}, "\x00")
}
func (d *cpuDevice) Source(k *ir.Kernel) string { return render.Render(render.C, k) }

// Owns: every host buffer (GO's or the CPU's) is plain memory to the CPU.
func (d *cpuDevice) Owns(b Buffer) bool { _, ok := b.(*hostBuffer); return ok }

func (d *cpuDevice) Alloc(dt ir.DType, n int) (Buffer, error) { return d.alloc(dt, n, d.pool.get) }

// AllocScratch is a buffer of a schedule's scratch that is written and
// read once (ScratchAllocator; realize.Engine.SetOneShotScratch): from
// 16 MiB on, a reused one of its size or a fresh mapping left in 4 KiB
// pages; below, Alloc's. Buffers are otherwise advised for huge pages,
// which buffers used again and again run faster from (a decode step's
// rows: Q8_0 4.9-5.5 ms a token against 5.3-5.8 in small pages, F16 8.5
// against 9.6-9.8; softmax_4096 4.0-4.4 against 5.4 ms, on the Xeon
// guest). But in a guest whose host backs memory lazily, the first touch
// of a huge page the guest has not used lately costs the host's faults of
// all its 4 KiB pages: 10.8 ms per MB there, against 0.4 in small pages,
// so a Llama-3.2-1B-shaped model's 128-token prompt spent over a second
// touching its dequantized weights' scratch (67 MB a matrix) for the
// first time: prefill 65-73 → 89-108 tok/s in small pages. A 110M
// model's scratch (6.3 MB a matrix at most) stays in huge pages: there
// the 900-token prompt ran 3 % slower in small ones.
func (d *cpuDevice) AllocScratch(dt ir.DType, n int) (Buffer, error) {
	if n*dt.Size() < oneShotSmallPages {
		return d.Alloc(dt, n)
	}
	return d.alloc(dt, n, d.pool.getSmall)
}

// Carve is n values of dt at byte offset of one of the device's buffers
// (Carver).
func (d *cpuDevice) Carve(from Buffer, offset int, dt ir.DType, n int) (Buffer, error) {
	return carveHost(from, offset, dt, n)
}

// oneShotSmallPages is the size from which AllocScratch maps small pages.
const oneShotSmallPages = 16 << 20

// AllocZeroed is a buffer that reads as zeros (ZeroAllocator): a fresh
// mapping, whose pages cost nothing until written.
func (d *cpuDevice) AllocZeroed(dt ir.DType, n int) (Buffer, error) {
	b, err := d.alloc(dt, n, d.pool.getZeroed)
	if err == nil {
		b.(*hostBuffer).pages = newLazyPages(n * dt.Size())
	}
	return b, err
}

func (d *cpuDevice) alloc(dt ir.DType, n int, get func(int) ([]byte, error)) (Buffer, error) {
	size := n * dt.Size()
	mem, err := get(max(size, 1))
	if err != nil {
		return nil, fmt.Errorf("CPU: cannot allocate %d bytes: %w", size, err)
	}
	b := &hostBuffer{dt: dt, n: n, data: mem[:size]}
	var once sync.Once
	free := func() { once.Do(func() { d.pool.put(mem) }) }
	b.free = free
	runtime.AddCleanup(b, func(f func()) { f() }, free)
	return b, nil
}

// Memory is the account of the device's buffers (MemoryCounter).
func (d *cpuDevice) Memory() MemoryUsage { return d.pool.usage() }

// ResetPeak starts a new peak from the bytes live now.
func (d *cpuDevice) ResetPeak() { d.pool.resetPeak() }

// ReleasePooled unmaps the freed buffers kept for reuse.
func (d *cpuDevice) ReleasePooled() { d.pool.release() }

// Compile renders the kernels not yet in memory as one translation unit
// (a second kernel in the same file costs ~10 ms instead of ~100 ms),
// compiles it through the disk cache, and loads it.
func (d *cpuDevice) Compile(ks []*ir.Kernel) ([]Program, error) {
	progs, _, err := d.compileCounted(ks)
	return progs, err
}

func (d *cpuDevice) compileCounted(ks []*ir.Kernel) ([]Program, CompileCounts, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.during(func() ([]Program, error) { return d.compileLocked(ks) })
}

func (d *cpuDevice) compileLocked(ks []*ir.Kernel) ([]Program, error) {
	out := make([]Program, len(ks))
	srcs := make([]string, len(ks))
	keys := make([]string, len(ks))
	var todo []int
	seen := map[string]bool{}
	for i, k := range ks {
		srcs[i] = render.Render(render.C, k)
		keys[i] = sourceKey(srcs[i], k.Name)
		if _, ok := d.progs[keys[i]]; !ok && !seen[keys[i]] {
			seen[keys[i]] = true
			todo = append(todo, i)
		}
	}
	// Split the work into one translation unit per core: the compiler is
	// single-threaded, and BEAM hands over dozens of candidates at once.
	units := splitUnits(todo, srcs, runtime.GOMAXPROCS(0))
	libs := make([]*library, len(units))
	errs := make([]error, len(units))
	var wg sync.WaitGroup
	var launchErr error
	if d.launch == nil {
		// The launcher compiles (into an empty cache) beside the first
		// kernels, not before them.
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.launch, launchErr = d.loadLauncher()
		}()
	}
	for u, idx := range units {
		var unit strings.Builder
		for _, i := range idx {
			fmt.Fprintf(&unit, "/* ---- %s ---- */\n%s\n", ks[i].Name, srcs[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			libs[u], errs[u] = d.build(unit.String())
		}()
	}
	wg.Wait()
	if launchErr != nil {
		return nil, launchErr
	}
	for u, idx := range units {
		if errs[u] != nil {
			return nil, errs[u]
		}
		for _, i := range idx {
			sym, err := purego.Dlsym(libs[u].handle, ks[i].Name)
			if err != nil {
				return nil, fmt.Errorf("CPU: kernel %s: symbol not found in %s: %v", ks[i].Name, libs[u].path, err)
			}
			d.progs[keys[i]] = &cpuProgram{symbol: ks[i].Name, fn: sym, lib: libs[u], launch: d.launch}
		}
	}
	for i, k := range ks {
		p := *d.progs[keys[i]]
		p.name = k.Name
		// by the work its code does (Cost): an RMSNorm's sum of squares
		// runs once per call, not once per output (~2300 operations, not
		// the graph's 1.2 MFLOP), and split it paid a launch's hand-off
		// and wait (~4 µs a decode step's RMSNorm) for ~1 µs of work
		flops, bytes := k.Cost()
		p.small = flops < 1<<16 && k.GlobalSize() < 1<<14
		p.size = kernelSize{flops, bytes}
		p.spans = k.StoreSpans()
		outer := *k.Global[0]
		p.outer = &outer
		out[i] = &p
	}
	return out, nil
}

// sourceKey is a kernel's source with its name blanked: kernels that
// differ only in name (a layer's Adam update and the next layer's, an
// evaluation's conv over 10000 images and the training step's over 512: the
// outermost loop's bounds are arguments) share one compiled function.
func sourceKey(src, name string) string {
	return strings.Replace(src, "void "+name+"(", "void \x00(", 1)
}

// splitUnits deals the kernels to at most n translation units of similar
// source size (a unit under ~16 KiB is not worth its own compiler process).
func splitUnits(todo []int, srcs []string, n int) [][]int {
	if len(todo) == 0 {
		return nil
	}
	total := 0
	for _, i := range todo {
		total += len(srcs[i])
	}
	n = max(1, min(n, len(todo), total/(16<<10)+1))
	units := make([][]int, n)
	sizes := make([]int, n)
	// Largest first, each to the smallest unit so far: one long kernel
	// placed last would hold its unit's compile up while the others wait.
	todo = slices.Clone(todo)
	slices.SortStableFunc(todo, func(a, b int) int { return len(srcs[b]) - len(srcs[a]) })
	for _, i := range todo {
		u := 0
		for j := range sizes {
			if sizes[j] < sizes[u] {
				u = j
			}
		}
		units[u] = append(units[u], i)
		sizes[u] += len(srcs[i])
	}
	return units
}

type library struct {
	path   string
	handle uintptr
}

// CacheDir is where compiled kernels live by default (a device opened
// without Options.CacheDir: tests, programs that load no configuration):
// $TGC_CACHE, else the user cache directory. tgc passes its configured
// directory explicitly.
func CacheDir() string {
	if d := os.Getenv("TGC_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tgc")
	}
	return filepath.Join(os.TempDir(), "tgc-cache")
}

// cpuModel identifies the processor: a -march=native binary must never be
// loaded on another CPU. It is Host()'s reading of /proc/cpuinfo.
func cpuModel() string {
	h := Host()
	return h.Model + "|" + strings.Join(h.Flags, " ") + "|" + runtime.GOARCH
}

// hostVecWidth is the float32 lanes of the widest vectors the host runs
// well: 16 with AVX-512 (zmm registers), else 8 (AVX2; 8-wide vector
// extensions are lowered to 4-wide SSE code elsewhere, which is still
// correct). Kernels are compiled with -march=native for this host, and the
// cache key includes its flags, so a 16-wide kernel never reaches an AVX2
// machine. TGC_VEC_WIDTH=8|16 overrides it (to compare the two).
var hostVecWidth = sync.OnceValue(func() int {
	switch os.Getenv("TGC_VEC_WIDTH") {
	case "8":
		return 8
	case "16":
		return 16
	}
	return vecWidthFor(cpuModel())
})

// HostVecWidth is the vector width the CPU device uses on this host (16
// with AVX-512, else 8; see hostVecWidth).
func HostVecWidth() int { return hostVecWidth() }

// HostHasAVX512 says whether this host's CPU has avx512f, whatever
// TGC_VEC_WIDTH says.
func HostHasAVX512() bool { return hostHasAVX512() }

// hostHasAVX512 is read once: Target asks for every node a model's graph
// builds (the matmul panel width), and cpuModel joins the flags anew.
var hostHasAVX512 = sync.OnceValue(func() bool { return vecWidthFor(cpuModel()) == 16 })

// OpenCPUWidth opens a CPU device (not the shared one Open returns) that
// renders and blocks for vectors of width float32 lanes: tests compare
// both widths on one host. 16-wide kernels need an AVX-512 host to run.
func OpenCPUWidth(width int) (Device, error) {
	cc, err := findCompiler()
	if err != nil {
		return nil, err
	}
	return &cpuDevice{cc: cc, progs: map[string]*cpuProgram{}, width: width}, nil
}

// vecWidthFor reads the vector width off a cpuModel string.
func vecWidthFor(model string) int {
	if _, flags, ok := strings.Cut(model, "|"); ok {
		for _, f := range strings.Fields(strings.SplitN(flags, "|", 2)[0]) {
			if f == "avx512f" {
				return 16
			}
		}
	}
	return 8
}

// build compiles source to a shared object through the kernel cache
// (kcache: verified before it is loaded, written atomically) and loads it.
// A bad entry is rebuilt with a warning; a cache folder that cannot be
// written makes tgc compile into a private temporary folder instead.
func (d *cpuDevice) build(src string) (*library, error) {
	return d.buildIn("kernels", src, true)
}

// buildIn is build into the cache's folder sub; counted says whether the
// build counts in the device's compile statistics (kernels do; the
// launcher, which lives in its own folder, does not).
func (d *cpuDevice) buildIn(sub, src string, counted bool) (*library, error) {
	dir, key := filepath.Join(d.cacheRoot(), sub), d.cacheKey(src)
	path, bad := kcache.Lookup(dir, key)
	if path != "" {
		handle, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			if counted {
				d.hit()
			}
			return &library{path: path, handle: handle}, nil
		}
		bad = fmt.Errorf("%s does not load: %v", path, err)
	}
	path, b, stored, err := d.compile(src, dir, key, counted)
	switch {
	case err != nil && bad != nil:
		d.warnf("", "kernel cache: %v", bad)
	case bad != nil && stored != nil:
		d.warnf("", "kernel cache: %v; it cannot be replaced (%v): the kernel is compiled for this run only", bad, stored)
	case bad != nil && b.Private:
		d.warnf("", "kernel cache: %v; the kernel is compiled for this run only", bad)
	case bad != nil:
		d.warnf("", "kernel cache: %v; rebuilt it", bad)
	case stored != nil:
		d.warnf("", "kernel cache: cannot store %s (%v): the kernel is compiled for this run only", kcache.Path(dir, key), stored)
	}
	if err != nil {
		return nil, err
	}
	defer b.Close() // a loaded object's file may go
	handle, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("CPU: loading %s: %w", path, err)
	}
	return &library{path: path, handle: handle}, nil
}

// compile builds the cache entry for key and returns the path to load: the
// entry, or an object in the build folder b that the caller closes once it
// is loaded. stored says why the object could not be kept in the cache
// (nil when it was, or when the folder is not writable: that is warned
// about once here).
func (d *cpuDevice) compile(src, dir, key string, counted bool) (path string, b *kcache.Build, stored, err error) {
	start := time.Now()
	d.cleanStale(dir)
	b, reason := kcache.NewBuild(dir)
	if b == nil {
		return "", nil, nil, fmt.Errorf("CPU: %w", reason)
	}
	if reason != nil {
		// once per cache, not per folder: the launcher's folder and the
		// kernels' fail together
		d.warnf("readonly "+d.cacheRoot(), "kernel cache %s is not writable (%v): kernels are compiled into a temporary folder and not kept", dir, reason)
	}
	cfile := filepath.Join(b.Dir, "kernels.c")
	sofile := filepath.Join(b.Dir, "kernels"+kcache.Ext)
	if err := os.WriteFile(cfile, []byte(src), 0o600); err != nil {
		b.Close()
		return "", nil, nil, err
	}
	args := append(slices.Clone(d.flags()), "-o", sofile, cfile, "-lm")
	cmd := exec.Command(d.cc.path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Close()
		return "", nil, nil, &BuildError{Compiler: d.cc.path, Log: stderr.String(), Source: src, Err: err}
	}
	path, stored = b.Commit(filepath.Base(sofile), key)
	if counted {
		d.built(start)
	}
	return path, b, stored, nil
}

// cleanStale removes the build folders of killed runs, once per cache
// folder and device.
func (d *cpuDevice) cleanStale(dir string) {
	d.wmu.Lock()
	done := d.cleaned[dir]
	if d.cleaned == nil {
		d.cleaned = map[string]bool{}
	}
	d.cleaned[dir] = true
	d.wmu.Unlock()
	if !done {
		kcache.CleanStale(dir)
	}
}

// warnf records a warning for the engine to print (TakeWarnings); one with
// a non-empty once key is recorded once per device.
func (d *cpuDevice) warnf(once, format string, args ...any) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if once != "" {
		if d.warnedOnce[once] {
			return
		}
		if d.warnedOnce == nil {
			d.warnedOnce = map[string]bool{}
		}
		d.warnedOnce[once] = true
	}
	d.warnings = append(d.warnings, fmt.Sprintf(format, args...))
}

// TakeWarnings returns the warnings recorded since the last call (the
// engine prints them).
func (d *cpuDevice) TakeWarnings() []string {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	w := d.warnings
	d.warnings = nil
	return w
}

// cacheKey is the content address of a translation unit's shared object:
// source, compiler identity, flags, CPU model and the host's cache sizes
// (the blocking decisions in the source depend on them; the key keeps
// entries of hosts that differ only in caches apart, as BEAM's does).
func (d *cpuDevice) cacheKey(src string) string {
	h := sha256.New()
	fmt.Fprintf(h, "kcache v1\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s", src, d.cc.path, d.cc.version, strings.Join(d.flags(), " "), cpuModel(), Host().CacheKey())
	return hex.EncodeToString(h.Sum(nil))
}

// cacheRoot is the device's cache directory: the one it was opened with,
// else the default.
func (d *cpuDevice) cacheRoot() string {
	if d.cacheDir != "" {
		return d.cacheDir
	}
	return CacheDir()
}

// BuildError is a kernel that failed to compile: it carries the compiler's log.
type BuildError struct {
	Compiler, Log, Source string
	Err                   error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("compiling kernels with %s failed (%v):\n%s", e.Compiler, e.Err, e.Log)
}

type cpuProgram struct {
	name   string // the kernel's
	symbol string // the compiled function's: the name of the first kernel with this source
	fn     uintptr
	lib    *library
	// outer is the kernel's outermost loop, split across cores (the
	// program keeps it, not the kernel: a kernel's IR after its passes is
	// the compile's memory, megabytes for an unrolled one).
	outer *ir.Axis
	// small kernels run on the calling goroutine: spreading them costs more
	// than it saves.
	small  bool
	size   kernelSize     // a long kernel runs in more pieces (piecesFor)
	spans  []ir.StoreSpan // where its stores write (populateSpans)
	launch *launcher      // the device's worker threads
}

func (p *cpuProgram) Name() string { return p.name }

// Run calls the kernel: small kernels on this goroutine, others in one
// contiguous chunk of the outermost loop per core.
func (p *cpuProgram) Run(bufs []Buffer, vars []int64) (time.Duration, error) {
	ptrs := make([]uintptr, len(bufs))
	for i, b := range bufs {
		hb := b.(*hostBuffer)
		if len(hb.data) > 0 {
			ptrs[i] = uintptr(unsafe.Pointer(unsafe.SliceData(hb.data)))
		}
	}
	if len(vars) == 0 {
		vars = []int64{0}
	}
	// The kernel reads both arrays while goroutine stacks may move: pinned
	// heap memory, not addresses computed from possibly stack-held slices.
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&ptrs[0])
	pin.Pin(&vars[0])
	pb, pv := uintptr(unsafe.Pointer(&ptrs[0])), uintptr(unsafe.Pointer(&vars[0]))
	populateSpans(p.spans, bufs, vars)
	start := time.Now()
	n := p.outer.Trip(vars)
	if p.small {
		purego.SyscallN(p.fn, pb, pv, 0, uintptr(n))
	} else {
		p.launch.run(p.fn, pb, pv, n, p.size)
	}
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(vars)
	runtime.KeepAlive(bufs)
	return time.Since(start), nil
}

// Disassembly runs objdump on the kernel's symbol (DEBUG=4).
func (p *cpuProgram) Disassembly() (string, error) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		return "", errors.New("objdump not found")
	}
	out, err := exec.Command(objdump, "-d", "--no-show-raw-insn", "--disassemble="+p.symbol, p.lib.path).Output()
	if err != nil {
		return "", fmt.Errorf("objdump: %w", err)
	}
	// Drop objdump's file header: keep from the symbol line on.
	s := string(out)
	if i := strings.Index(s, "<"+p.symbol+">:"); i >= 0 {
		if j := strings.LastIndex(s[:i], "\n"); j >= 0 {
			s = s[j+1:]
		}
	}
	if i := strings.Index(s, "\nDisassembly of section"); i >= 0 {
		s = s[:i+1]
	}
	return s, nil
}
