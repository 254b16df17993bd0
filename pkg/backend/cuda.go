package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"tgc/pkg/backend/kcache"
	"tgc/pkg/ir"
	"tgc/pkg/render"
)

// The CUDA device: kernels rendered as CUDA C, compiled to PTX by NVRTC
// (libnvrtc, with --gpu-architecture from the device's compute capability),
// loaded and launched through the driver API (libcuda.so.1). Both
// libraries are loaded at run time with purego: no cgo, no SDK to build.
//
// A CUDA context is current per OS thread, so every driver call runs on
// one worker goroutine locked to its thread (cudaWorker.do), which created
// the context.
//
// Without libnvrtc, PTX comes from clang (clang-15 or clang, found at run
// time and exec'd with an argument list): `clang -x cuda --cuda-device-only
// --cuda-gpu-arch=sm_XY -nocudainc -nocudalib -O3 -S` with
// render.CUDAClangPrelude in place of the CUDA headers, which maps the math
// functions to PTX instructions (no libdevice; precision in that prelude's
// comment). The architecture is the device's, or the newest older one
// clang knows: the driver compiles the PTX for the GPU it loads on.

func init() {
	register(entry{name: "CUDA", rank: 20,
		probe: func() (string, error) {
			info, err := cudaProbe()
			if err != nil {
				return "", err
			}
			return info.String(), nil
		},
		open: func(Options) (Device, error) { return openCUDA() }})
}

// Driver API constants (cuda.h).
const (
	cuSuccess              = 0
	cuErrorOutOfMemory     = 2
	cuAttrMaxThreads       = 1
	cuAttrMaxBlockDimX     = 2
	cuAttrMaxGridDimX      = 5
	cuAttrMaxSharedPerBlok = 8
	cuAttrCCMajor          = 75
	cuAttrCCMinor          = 76
)

var cudaFuncNames = []string{
	"cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
	"cuDeviceTotalMem_v2", "cuCtxCreate_v2", "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemFree_v2",
	"cuMemGetInfo_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuModuleLoadData", "cuModuleGetFunction",
	"cuLaunchKernel", "cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime",
	"cuEventDestroy_v2", "cuGetErrorString", "cuGetErrorName",
}

var nvrtcFuncNames = []string{
	"nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize", "nvrtcGetProgramLog",
	"nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcDestroyProgram", "nvrtcGetErrorString",
}

// cudaError is a failed driver or NVRTC call: its name, the code and the
// library's error string.
type cudaError struct {
	call string
	code int32
	msg  string
}

func (e *cudaError) Error() string {
	return fmt.Sprintf("CUDA: %s failed: %s (%d)", e.call, e.msg, e.code)
}

type cudaAPI struct {
	fns      map[string]uintptr
	nvrtcErr func(code int32) string // nvrtcGetErrorString
}

// Pointers converted to uintptr in the arguments must stay valid for the
// C call: a goroutine stack can move, so they are moved to the heap.
//
//go:uintptrescapes
func (a *cudaAPI) call(name string, args ...uintptr) error {
	r, _, _ := purego.SyscallN(a.fns[name], args...)
	if code := int32(r); code != cuSuccess {
		return &cudaError{call: name, code: code, msg: a.errorString(name, code)}
	}
	return nil
}

// errorString asks the library for a code's description.
func (a *cudaAPI) errorString(call string, code int32) string {
	if strings.HasPrefix(call, "nvrtc") {
		if a.nvrtcErr == nil {
			return "unknown error"
		}
		return a.nvrtcErr(code)
	}
	var name, desc *byte
	purego.SyscallN(a.fns["cuGetErrorName"], uintptr(code), uintptr(unsafe.Pointer(&name)))
	purego.SyscallN(a.fns["cuGetErrorString"], uintptr(code), uintptr(unsafe.Pointer(&desc)))
	switch {
	case name != nil && desc != nil:
		return cString(name) + ": " + cString(desc)
	case name != nil:
		return cString(name)
	}
	return "unknown error"
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cudaInfo is what the probe found: device 0.
type cudaInfo struct {
	api          *cudaAPI
	dev          int32
	name         string
	major, minor int32
	totalMem     uint64
	limits       render.Limits
	clang        string // set when libnvrtc is missing: the PTX compiler
	cubin        bool   // NVRTC writes machine code (nvrtcGetCUBIN, CUDA 11.1 on)
	nvrtcVersion string // "major.minor", part of the kernel cache's key
}

func (i *cudaInfo) String() string {
	s := fmt.Sprintf("%s, compute %d.%d, %d MiB", i.name, i.major, i.minor, i.totalMem>>20)
	switch {
	case i.clang != "":
		s += ", PTX by " + filepath.Base(i.clang) + " (no libnvrtc)"
	case i.cubin:
		s += fmt.Sprintf(", NVRTC %s to sm_%d%d", i.nvrtcVersion, i.major, i.minor)
	default:
		s += fmt.Sprintf(", NVRTC %s to PTX", i.nvrtcVersion)
	}
	return s
}

// nvrtcCandidates are the names tried for libnvrtc: the loader's path
// first, then the toolkit's own lib64 (CUDA_HOME, CUDA_PATH,
// /usr/local/cuda), which a toolkit install often leaves off that path.
func nvrtcCandidates(getenv func(string) string) []string {
	names := []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}
	out := slices.Clone(names)
	for _, dir := range []string{getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if dir == "" {
			continue
		}
		for _, n := range names {
			out = append(out, filepath.Join(dir, "lib64", n))
		}
	}
	return out
}

func dlopenFirst(names ...string) (uintptr, error) {
	var err error
	for _, n := range names {
		var h uintptr
		if h, err = purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			return h, nil
		}
	}
	return 0, err
}

var cudaProbe = sync.OnceValues(func() (*cudaInfo, error) {
	lib, err := dlopenFirst("libcuda.so.1", "libcuda.so")
	if err != nil {
		return nil, errors.New("libcuda.so.1 not found (no NVIDIA driver)")
	}
	api := &cudaAPI{fns: map[string]uintptr{}}
	for _, n := range cudaFuncNames {
		if api.fns[n], err = purego.Dlsym(lib, n); err != nil {
			return nil, fmt.Errorf("libcuda.so.1 lacks %s (driver too old?)", n)
		}
	}
	clang, cubin, rtcVersion := "", false, ""
	rtc, err := dlopenFirst(nvrtcCandidates(os.Getenv)...)
	if err == nil {
		for _, n := range nvrtcFuncNames {
			if api.fns[n], err = purego.Dlsym(rtc, n); err != nil {
				return nil, fmt.Errorf("libnvrtc lacks %s", n)
			}
		}
		purego.RegisterLibFunc(&api.nvrtcErr, rtc, "nvrtcGetErrorString")
		cubin = true
		for _, n := range []string{"nvrtcGetCUBINSize", "nvrtcGetCUBIN"} {
			if api.fns[n], err = purego.Dlsym(rtc, n); err != nil {
				cubin = false
			}
		}
		if api.fns["nvrtcVersion"], err = purego.Dlsym(rtc, "nvrtcVersion"); err == nil {
			var major, minor int32
			if api.call("nvrtcVersion", uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor))) == nil {
				rtcVersion = fmt.Sprintf("%d.%d", major, minor)
			}
		}
	} else if clang = findClang(); clang == "" {
		return nil, errors.New("libnvrtc.so not found and no clang-15 or clang to compile CUDA to PTX (install the CUDA toolkit's NVRTC, e.g. Debian's libnvrtc12, or clang-15)")
	}
	if err := api.call("cuInit", 0); err != nil {
		return nil, err
	}
	var count int32
	if err := api.call("cuDeviceGetCount", uintptr(unsafe.Pointer(&count))); err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, errors.New("no CUDA GPU")
	}
	info := &cudaInfo{api: api, clang: clang, cubin: cubin, nvrtcVersion: rtcVersion}
	if err := api.call("cuDeviceGet", uintptr(unsafe.Pointer(&info.dev)), 0); err != nil {
		return nil, err
	}
	name := make([]byte, 256)
	if err := api.call("cuDeviceGetName", uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(info.dev)); err != nil {
		return nil, err
	}
	info.name = cString(&name[0])
	attr := func(a int) int64 {
		var v int32
		_ = api.call("cuDeviceGetAttribute", uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(info.dev))
		return int64(v)
	}
	info.major, info.minor = int32(attr(cuAttrCCMajor)), int32(attr(cuAttrCCMinor))
	var total uintptr
	_ = api.call("cuDeviceTotalMem_v2", uintptr(unsafe.Pointer(&total)), uintptr(info.dev))
	info.totalMem = uint64(total)
	lim := render.Limits{MaxWorkGroup: attr(cuAttrMaxThreads), LocalMem: attr(cuAttrMaxSharedPerBlok), Half: true}
	for d := 0; d < 3; d++ {
		lim.MaxLocal[d] = attr(cuAttrMaxBlockDimX + d)
		lim.MaxGroups[d] = attr(cuAttrMaxGridDimX + d)
	}
	lim.MaxWorkGroup = max(1, min(lim.MaxWorkGroup, render.DefaultLimits.MaxWorkGroup))
	info.limits = lim
	return info, nil
})

// nvrtcOptions are the compile options for a compute capability: machine
// code for it (sm_XY) when NVRTC can return that, else PTX for its
// virtual architecture (compute_XY), which the driver compiles at load.
func nvrtcOptions(major, minor int32, cubin bool) []string {
	arch := "compute"
	if cubin {
		arch = "sm"
	}
	return []string{fmt.Sprintf("--gpu-architecture=%s_%d%d", arch, major, minor), "-default-device"}
}

// cudaWorker runs functions on one goroutine locked to its OS thread,
// where the context is current.
type cudaWorker struct{ ch chan func() }

func newCUDAWorker() *cudaWorker {
	w := &cudaWorker{ch: make(chan func())}
	go func() {
		runtime.LockOSThread()
		for f := range w.ch {
			f()
		}
	}()
	return w
}

func (w *cudaWorker) do(f func()) {
	done := make(chan struct{})
	w.ch <- func() { f(); close(done) }
	<-done
}

type cudaDevice struct {
	info   *cudaInfo
	api    *cudaAPI
	w      *cudaWorker
	ctx    uintptr
	lang   *render.Lang
	mu     sync.Mutex
	progs  map[string]*cudaProgram
	archs  []string  // clang only: architectures to try, the working one once known
	events []uintptr // timing events, reused; touched on the context's thread only
	clean  sync.Once // the kernel cache's build folders of killed runs, removed once

	compileCounter
}

func openCUDA() (Device, error) {
	info, err := cudaProbe()
	if err != nil {
		return nil, err
	}
	d := &cudaDevice{info: info, api: info.api, w: newCUDAWorker(), lang: render.CUDAFor(info.limits), progs: map[string]*cudaProgram{}}
	d.w.do(func() { err = d.api.call("cuCtxCreate_v2", uintptr(unsafe.Pointer(&d.ctx)), 0, uintptr(info.dev)) })
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *cudaDevice) Name() string               { return "CUDA" }
func (d *cudaDevice) Source(k *ir.Kernel) string { return render.Render(d.lang, k) }

// Target: the grid passes (GROUP, vector accesses) within the device's limits.
func (d *cudaDevice) Target() ir.Target { return d.lang.Target() }

// Fingerprint identifies what a kernel's speed depends on (the key of
// BEAM's stored results): the device, its compiler and its limits.
func (d *cudaDevice) Fingerprint() string {
	return fmt.Sprintf("CUDA\x00%s\x00%+v", d.info, d.info.limits)
}

func (d *cudaDevice) Owns(b Buffer) bool { c, ok := b.(*cudaBuffer); return ok && c.d == d }

type cudaBuffer struct {
	d    *cudaDevice
	ptr  uint64
	size int
	free func()
}

// oomError explains a failed allocation: what was asked and what is free.
func oomError(asked int, free, total uint64, err error) error {
	return fmt.Errorf("CUDA: cannot allocate %d bytes (%.1f MiB): %.1f MiB free of %.1f MiB: %w",
		asked, float64(asked)/(1<<20), float64(free)/(1<<20), float64(total)/(1<<20), err)
}

func (d *cudaDevice) Alloc(dt ir.DType, n int) (Buffer, error) {
	size := n * dt.Size()
	var ptr uint64
	var err error
	d.w.do(func() {
		err = d.api.call("cuMemAlloc_v2", uintptr(unsafe.Pointer(&ptr)), uintptr(max(size, 1)))
		var ce *cudaError
		if errors.As(err, &ce) && ce.code == cuErrorOutOfMemory {
			var free, total uintptr
			_ = d.api.call("cuMemGetInfo_v2", uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total)))
			err = oomError(size, uint64(free), uint64(total), err)
		}
	})
	if err != nil {
		return nil, err
	}
	b := &cudaBuffer{d: d, ptr: ptr, size: size}
	var once sync.Once
	api, w := d.api, d.w
	free := func() { once.Do(func() { w.do(func() { _ = api.call("cuMemFree_v2", uintptr(ptr)) }) }) }
	b.free = free
	runtime.AddCleanup(b, func(f func()) { f() }, free)
	return b, nil
}

func (b *cudaBuffer) CopyIn(data []byte) (err error) {
	if len(data) != b.size {
		return fmt.Errorf("copy in: %d bytes into a buffer of %d", len(data), b.size)
	}
	if b.size > 0 {
		b.d.w.do(func() {
			err = b.d.api.call("cuMemcpyHtoD_v2", uintptr(b.ptr), uintptr(unsafe.Pointer(&data[0])), uintptr(b.size))
		})
	}
	return err
}

func (b *cudaBuffer) CopyOut(data []byte) (err error) {
	if len(data) != b.size {
		return fmt.Errorf("copy out: %d bytes from a buffer of %d", len(data), b.size)
	}
	if b.size > 0 {
		b.d.w.do(func() {
			err = b.d.api.call("cuMemcpyDtoH_v2", uintptr(unsafe.Pointer(&data[0])), uintptr(b.ptr), uintptr(b.size))
		})
	}
	return err
}

func (b *cudaBuffer) Free() {
	if b.free != nil {
		b.free()
		b.free = nil
	}
}

type cudaProgram struct {
	d      *cudaDevice
	name   string
	ptx    string
	fn     uintptr
	launch render.Launch
}

// CUDABuildError is a kernel NVRTC rejected: its name and the log.
type CUDABuildError struct {
	Kernel, Log, Source string
	Err                 error
}

func (e *CUDABuildError) Error() string {
	return fmt.Sprintf("CUDA: compiling kernel %s failed (%v):\n%s", e.Kernel, e.Err, strings.TrimSpace(e.Log))
}

// clangSupports refuses kernels the clang fallback cannot compile: without
// NVRTC there is no libdevice, and float64 exp2, log2 and sin have no PTX
// instruction to stand in for them (float32 ones do, approximately; see
// render.CUDAClangPrelude).
func clangSupports(k *ir.Kernel) error {
	var bad ir.Op
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.DType == ir.Float64 && (e.Op == ir.OpExp2 || e.Op == ir.OpLog2 || e.Op == ir.OpSin) {
			bad = e.Op
		}
	})
	if bad != ir.OpInvalid {
		return fmt.Errorf("CUDA: kernel %s needs float64 %s, which needs NVRTC (libnvrtc; kernels are compiled by clang without libdevice here): cast to float32 first", k.Name, strings.ToLower(bad.String()))
	}
	return nil
}

func (d *cudaDevice) Compile(ks []*ir.Kernel) ([]Program, error) {
	progs, _, err := d.compileCounted(ks)
	return progs, err
}

func (d *cudaDevice) compileCounted(ks []*ir.Kernel) ([]Program, CompileCounts, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.during(func() ([]Program, error) { return d.compileLocked(ks) })
}

func (d *cudaDevice) compileLocked(ks []*ir.Kernel) ([]Program, error) {
	srcs := make([]string, len(ks))
	var todo []int // the first kernel of each source not compiled yet
	queued := map[string]bool{}
	for i, k := range ks {
		srcs[i] = render.Render(d.lang, k)
		if _, ok := d.progs[srcs[i]]; !ok && !queued[srcs[i]] {
			queued[srcs[i]] = true
			todo = append(todo, i)
		}
	}
	objs, err := d.objectsFor(ks, srcs, todo)
	if err != nil {
		return nil, err
	}
	for j, i := range todo {
		name := ks[i].Name
		p := &cudaProgram{d: d, name: name, ptx: objs[j].ptx}
		image := objs[j].image
		cname := append([]byte(name), 0)
		var mod uintptr
		d.w.do(func() {
			if err = d.api.call("cuModuleLoadData", uintptr(unsafe.Pointer(&mod)), uintptr(unsafe.Pointer(&image[0]))); err == nil {
				err = d.api.call("cuModuleGetFunction", uintptr(unsafe.Pointer(&p.fn)), mod, uintptr(unsafe.Pointer(&cname[0])))
			}
		})
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", name, err)
		}
		d.progs[srcs[i]] = p
	}
	out := make([]Program, len(ks))
	for i, k := range ks {
		p := d.progs[srcs[i]]
		c := *p
		c.launch = render.GPULaunch(d.lang, k)
		out[i] = &c
	}
	return out, nil
}

// cudaObject is a compiled kernel: the image the driver loads (CUBIN, or
// NUL-terminated PTX) and its PTX for DEBUG=4 ("" if NVRTC kept none).
type cudaObject struct {
	image []byte
	ptx   string
}

// objectsFor compiles the kernels ks[todo[j]] (sources srcs), or loads
// them from the kernel cache (kcache, folder "cuda": verified before use,
// written atomically). NVRTC compiles concurrently, one program each, on
// every core (a training step's first run compiles a hundred kernels);
// clang runs one at a time, as it learns which architecture it knows.
func (d *cudaDevice) objectsFor(ks []*ir.Kernel, srcs []string, todo []int) ([]cudaObject, error) {
	objs := make([]cudaObject, len(todo))
	dir := filepath.Join(CacheDir(), "cuda")
	var build []int // positions in todo the cache does not hold
	for j, i := range todo {
		// a damaged entry is an error here: it is rebuilt and replaced
		if image, _ := kcache.Load(dir, d.cacheKey(srcs[i])); image != nil {
			objs[j] = cudaObject{image: image}
			d.hit()
			continue
		}
		build = append(build, j)
	}
	if err := d.compileObjects(ks, srcs, todo, build, objs); err != nil {
		return nil, err
	}
	if len(build) > 0 {
		d.clean.Do(func() { kcache.CleanStale(dir) })
	}
	for _, j := range build {
		// a cache that cannot be written compiles again next run
		_ = kcache.Store(dir, d.cacheKey(srcs[todo[j]]), objs[j].image)
	}
	return objs, nil
}

// cacheKey addresses a kernel's image in the cache: its source, the
// compiler and what it was asked for.
func (d *cudaDevice) cacheKey(src string) string {
	h := sha256.New()
	i := d.info
	fmt.Fprintf(h, "cuda kcache v1\x00%s\x00nvrtc %s, clang %q, cubin %v\x00%q\x00", src, i.nvrtcVersion, i.clang, i.cubin, nvrtcOptions(i.major, i.minor, i.cubin))
	return hex.EncodeToString(h.Sum(nil))
}

// compileObjects compiles the kernels at positions build of todo into objs.
func (d *cudaDevice) compileObjects(ks []*ir.Kernel, srcs []string, todo, build []int, objs []cudaObject) error {
	if d.info.clang != "" {
		for _, j := range build {
			i := todo[j]
			if err := clangSupports(ks[i]); err != nil {
				return err
			}
			if d.archs == nil {
				d.archs = clangArchs(d.info.major, d.info.minor)
			}
			start := time.Now()
			ptx, arch, err := clangPTX(d.info.clang, d.archs, srcs[i], ks[i].Name)
			if err != nil {
				return err
			}
			d.archs = []string{arch}
			d.built(start)
			objs[j] = cudaObject{image: append([]byte(ptx), 0), ptx: ptx}
		}
		return nil
	}
	errs := make([]error, len(build))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(build), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := int(next.Add(1) - 1); b < len(build); b = int(next.Add(1) - 1) {
				i := todo[build[b]]
				objs[build[b]], errs[b] = d.nvrtc(ks[i].Name, srcs[i])
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nvrtc compiles CUDA C to CUBIN where NVRTC can (the machine code is
// made here, in parallel, instead of by the driver, one module at a time,
// at load), else to PTX.
func (d *cudaDevice) nvrtc(name, src string) (cudaObject, error) {
	api := d.api
	start := time.Now()
	csrc, cname := append([]byte(src), 0), append([]byte(name+".cu"), 0)
	var prog uintptr
	if err := api.call("nvrtcCreateProgram", uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0); err != nil {
		return cudaObject{}, err
	}
	defer api.call("nvrtcDestroyProgram", uintptr(unsafe.Pointer(&prog)))
	var pin runtime.Pinner
	defer pin.Unpin()
	var optPtrs []uintptr
	for _, o := range nvrtcOptions(d.info.major, d.info.minor, d.info.cubin) {
		b := append([]byte(o), 0)
		pin.Pin(&b[0])
		optPtrs = append(optPtrs, uintptr(unsafe.Pointer(&b[0])))
	}
	cerr := api.call("nvrtcCompileProgram", prog, uintptr(len(optPtrs)), uintptr(unsafe.Pointer(&optPtrs[0])))
	var logSize uintptr
	log := ""
	if api.call("nvrtcGetProgramLogSize", prog, uintptr(unsafe.Pointer(&logSize))) == nil && logSize > 1 {
		buf := make([]byte, logSize)
		if api.call("nvrtcGetProgramLog", prog, uintptr(unsafe.Pointer(&buf[0]))) == nil {
			log = strings.TrimRight(string(buf), "\x00")
		}
	}
	if cerr != nil {
		return cudaObject{}, &CUDABuildError{Kernel: name, Log: log, Source: src, Err: cerr}
	}
	ptx, perr := nvrtcBytes(api, prog, "nvrtcGetPTXSize", "nvrtcGetPTX")
	obj := cudaObject{ptx: strings.TrimRight(string(ptx), "\x00")}
	if d.info.cubin {
		cubin, err := nvrtcBytes(api, prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
		if err != nil {
			return cudaObject{}, err
		}
		obj.image = cubin
	} else if perr != nil {
		return cudaObject{}, perr
	} else {
		obj.image = ptx // NUL-terminated, as NVRTC writes it
	}
	d.built(start)
	return obj, nil
}

// nvrtcBytes reads one of a program's outputs (PTX, CUBIN) with its size
// and copy calls.
func nvrtcBytes(api *cudaAPI, prog uintptr, sizeCall, getCall string) ([]byte, error) {
	var size uintptr
	if err := api.call(sizeCall, prog, uintptr(unsafe.Pointer(&size))); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, fmt.Errorf("%s: empty", getCall)
	}
	b := make([]byte, size)
	if err := api.call(getCall, prog, uintptr(unsafe.Pointer(&b[0]))); err != nil {
		return nil, err
	}
	return b, nil
}

// packArgs lays out cuLaunchKernel's kernelParams: one 8-byte slot per
// argument (device pointers, then the vars as long long) in vals, and
// params[i] pointing at slot i. The caller pins vals.
func packArgs(ptrs []uint64, vars []int64) (vals []uint64, params []uintptr) {
	vals = make([]uint64, 0, len(ptrs)+len(vars))
	vals = append(vals, ptrs...)
	for _, v := range vars {
		vals = append(vals, uint64(v))
	}
	params = make([]uintptr, len(vals))
	for i := range vals {
		params[i] = uintptr(unsafe.Pointer(&vals[i]))
	}
	return vals, params
}

// Run launches the kernel (grid = global/local blocks of local threads)
// between two events and waits; the time is the events' elapsed time.
func (p *cudaProgram) Run(bufs []Buffer, vars []int64) (time.Duration, error) {
	return runOne(p.d.launch, p, bufs, vars)
}

// RunBatch launches ls in order on the context's stream with an event
// after each and waits once for the last: a TinyJit replay pays one
// hand-off to the context's thread and one synchronization, not one per
// kernel (a decode step is ~200 launches of a few microseconds each).
// times[i] is the time between launch i's event and the one before.
func (d *cudaDevice) RunBatch(ls []Launch, times []time.Duration) error {
	return runNamed(d.launch, ls, times)
}

// launch is RunBatch without the kernel's name on an error: it returns
// the index of the launch that failed (the last for a failed
// synchronization, where an earlier kernel's fault shows too).
func (d *cudaDevice) launch(ls []Launch, times []time.Duration) (int, error) {
	if len(ls) == 0 {
		return 0, nil
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	params := make([][]uintptr, len(ls))
	for i, l := range ls {
		ptrs := make([]uint64, len(l.Bufs))
		for j, b := range l.Bufs {
			ptrs[j] = b.(*cudaBuffer).ptr
		}
		vals, ps := packArgs(ptrs, l.Vars)
		if len(vals) == 0 {
			return i, errors.New("no arguments")
		}
		pin.Pin(&vals[0])
		pin.Pin(&ps[0])
		params[i] = ps
	}
	var err error
	failed := 0
	d.w.do(func() {
		api := d.api
		var ev []uintptr
		if ev, err = d.eventsOnWorker(len(ls) + 1); err != nil {
			return
		}
		if err = api.call("cuEventRecord", ev[0], 0); err != nil {
			return
		}
		for i, l := range ls {
			lt := l.Prog.(*cudaProgram).launch
			failed = i
			if err = api.call("cuLaunchKernel", l.Prog.(*cudaProgram).fn,
				uintptr(lt.Global[0]/lt.Local[0]), uintptr(lt.Global[1]/lt.Local[1]), uintptr(lt.Global[2]/lt.Local[2]),
				uintptr(lt.Local[0]), uintptr(lt.Local[1]), uintptr(lt.Local[2]),
				0, 0, uintptr(unsafe.Pointer(&params[i][0])), 0); err != nil {
				return
			}
			if err = api.call("cuEventRecord", ev[i+1], 0); err != nil {
				return
			}
		}
		if err = api.call("cuEventSynchronize", ev[len(ls)]); err != nil {
			return
		}
		for i := range ls {
			var ms float32
			failed = i
			if err = api.call("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), ev[i], ev[i+1]); err != nil {
				return
			}
			times[i] = time.Duration(float64(ms) * 1e6)
		}
	})
	return failed, err
}

// Wake: the context's thread waits on a channel; nothing sleeps.
func (d *cudaDevice) Wake() {}

// eventsOnWorker returns n timing events, created once and reused (only
// the context's thread touches d.events).
func (d *cudaDevice) eventsOnWorker(n int) ([]uintptr, error) {
	for len(d.events) < n {
		var e uintptr
		if err := d.api.call("cuEventCreate", uintptr(unsafe.Pointer(&e)), 0); err != nil {
			return nil, err
		}
		d.events = append(d.events, e)
	}
	return d.events[:n], nil
}

func (p *cudaProgram) Name() string { return p.name }
func (p *cudaProgram) Disassembly() (string, error) {
	if p.ptx == "" {
		return "", fmt.Errorf("kernel %s: no PTX (NVRTC compiled it to CUBIN, or it came from the kernel cache)", p.name)
	}
	return p.ptx, nil
}

// findClang finds a clang that compiles CUDA to PTX, or "".
func findClang() string {
	for _, n := range []string{"clang-15", "clang"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// clangArchs are the architectures to try for compute capability
// major.minor: the device's own first, then older ones, newest first.
func clangArchs(major, minor int32) []string {
	cc := int(major)*10 + int(minor)
	archs := []string{fmt.Sprintf("sm_%d%d", major, minor)}
	for _, a := range render.ClangCUDAArchs {
		if n, err := strconv.Atoi(strings.TrimPrefix(a, "sm_")); err == nil && n < cc {
			archs = append(archs, a)
		}
	}
	return archs
}

// clangPTX compiles CUDA C defining the named kernels to PTX with clang
// and render.CUDAClangPrelude, trying archs in order while clang does not
// know one; it returns the PTX and the architecture used.
func clangPTX(clang string, archs []string, src string, names ...string) (ptx, arch string, err error) {
	name := names[0]
	dir, err := os.MkdirTemp("", "tgc-ptx-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, name+".cu"), filepath.Join(dir, name+".ptx")
	if err := os.WriteFile(in, []byte(render.CUDAClangPrelude+src), 0o644); err != nil {
		return "", "", err
	}
	var log []byte
	for _, arch = range archs {
		log, err = exec.Command(clang, render.ClangPTXArgs(arch, in, out)...).CombinedOutput()
		if err == nil || !strings.Contains(string(log), "unsupported CUDA gpu architecture") {
			break
		}
	}
	if err != nil {
		return "", "", &CUDABuildError{Kernel: name, Log: string(log), Source: src, Err: fmt.Errorf("%s: %w", filepath.Base(clang), err)}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return "", "", err
	}
	ptx = string(b)
	for _, n := range names {
		if err := checkPTX(ptx, n); err != nil {
			return "", "", &CUDABuildError{Kernel: n, Log: ptx, Source: src, Err: err}
		}
	}
	return ptx, arch, nil
}

// checkPTX says whether PTX text defines the kernel's entry and calls no
// external function (which the driver could not resolve without libdevice).
func checkPTX(ptx, name string) error {
	entry := false
	for _, line := range strings.Split(ptx, "\n") {
		f := strings.Fields(line)
		for i, w := range f {
			if w == ".entry" && i+1 < len(f) && strings.TrimSuffix(f[i+1], "(") == name {
				entry = true
			}
			if w == ".extern" && i+1 < len(f) && f[i+1] == ".func" {
				return fmt.Errorf("PTX calls an external function: %s", strings.TrimSpace(line))
			}
		}
	}
	if !entry {
		return fmt.Errorf("PTX has no .entry %s", name)
	}
	return nil
}
