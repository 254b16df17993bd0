package backend

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"tgc/pkg/ir"
	"tgc/pkg/render"
)

// The CL device: kernels rendered as OpenCL C, built by the driver through
// the ICD loader (libOpenCL.so.1, loaded at run time with purego: no cgo),
// launched as NDRanges on one in-order queue with profiling for timing.
// The device's limits (work-group size, local memory, cl_khr_fp16) are
// queried at open and passed to the renderer.

func init() {
	register(entry{name: "CL", rank: 30,
		probe: func() (string, error) {
			info, err := clProbe()
			if err != nil {
				return "", err
			}
			return info.String(), nil
		},
		open: func(Options) (Device, error) { return openCL() }})
}

// OpenCL constants (cl.h).
const (
	clSuccess             = 0
	clDeviceTypeGPU       = 1 << 2
	clDeviceTypeAll       = 0xFFFFFFFF
	clPlatformName        = 0x0902
	clDeviceName          = 0x102B
	clDeviceMaxWorkGroup  = 0x1004
	clDeviceMaxItemSizes  = 0x1005
	clDeviceGlobalMemSize = 0x101F
	clDeviceLocalMemSize  = 0x1023
	clDeviceExtensions    = 0x1030
	clDeviceSingleFP      = 0x101B
	clFPCorrectlyRounded  = 1 << 7 // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT
	clQueueProfiling      = 1 << 1
	clMemReadWrite        = 1
	clProgramBuildLog     = 0x1183
	clProfilingStart      = 0x1282
	clProfilingEnd        = 0x1283
	clPlatformNotFound    = -1001
	clDeviceNotFound      = -1
)

var clErrors = map[int32]string{
	-1: "CL_DEVICE_NOT_FOUND", -2: "CL_DEVICE_NOT_AVAILABLE", -3: "CL_COMPILER_NOT_AVAILABLE",
	-4: "CL_MEM_OBJECT_ALLOCATION_FAILURE", -5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY",
	-7: "CL_PROFILING_INFO_NOT_AVAILABLE", -11: "CL_BUILD_PROGRAM_FAILURE", -30: "CL_INVALID_VALUE",
	-32: "CL_INVALID_PLATFORM", -33: "CL_INVALID_DEVICE", -34: "CL_INVALID_CONTEXT",
	-36: "CL_INVALID_COMMAND_QUEUE", -38: "CL_INVALID_MEM_OBJECT", -44: "CL_INVALID_PROGRAM",
	-45: "CL_INVALID_PROGRAM_EXECUTABLE", -46: "CL_INVALID_KERNEL_NAME", -48: "CL_INVALID_KERNEL",
	-49: "CL_INVALID_ARG_INDEX", -50: "CL_INVALID_ARG_VALUE", -51: "CL_INVALID_ARG_SIZE",
	-52: "CL_INVALID_KERNEL_ARGS", -53: "CL_INVALID_WORK_DIMENSION", -54: "CL_INVALID_WORK_GROUP_SIZE",
	-55: "CL_INVALID_WORK_ITEM_SIZE", -56: "CL_INVALID_GLOBAL_OFFSET", -58: "CL_INVALID_EVENT",
	-61: "CL_INVALID_BUFFER_SIZE", -63: "CL_INVALID_GLOBAL_WORK_SIZE", -1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

// clError is a failed OpenCL call: the call's name and the error code.
type clError struct {
	call string
	code int32
}

func (e *clError) Error() string {
	name, ok := clErrors[e.code]
	if !ok {
		name = "unknown error"
	}
	return fmt.Sprintf("CL: %s failed: %s (%d)", e.call, name, e.code)
}

// clAPI is the loaded library: its functions by name.
type clAPI struct {
	fns map[string]uintptr
}

var clFuncNames = []string{
	"clGetPlatformIDs", "clGetPlatformInfo", "clGetDeviceIDs", "clGetDeviceInfo",
	"clCreateContext", "clCreateCommandQueue", "clCreateProgramWithSource", "clBuildProgram",
	"clGetProgramBuildInfo", "clCreateKernel", "clSetKernelArg", "clEnqueueNDRangeKernel",
	"clCreateBuffer", "clEnqueueWriteBuffer", "clEnqueueReadBuffer", "clReleaseMemObject",
	"clWaitForEvents", "clGetEventProfilingInfo", "clReleaseEvent", "clFinish",
}

// call invokes an OpenCL function returning cl_int and turns failures
// into errors naming the call.
// Pointers converted to uintptr in the arguments must stay valid for the
// C call: a goroutine stack can move, so they are moved to the heap.
//
//go:uintptrescapes
func (a *clAPI) call(name string, args ...uintptr) error {
	r, _, _ := purego.SyscallN(a.fns[name], args...)
	if code := int32(r); code != clSuccess {
		return &clError{call: name, code: code}
	}
	return nil
}

// create invokes a function returning a handle and an errcode_ret
// (always its last parameter, passed here).
// Pointers converted to uintptr in the arguments must stay valid for the
// C call: a goroutine stack can move, so they are moved to the heap.
//
//go:uintptrescapes
func (a *clAPI) create(name string, args ...uintptr) (uintptr, error) {
	code := new(int32)
	var pin runtime.Pinner // on the heap and pinned: the C call writes it
	defer pin.Unpin()
	pin.Pin(code)
	args = append(args, uintptr(unsafe.Pointer(code)))
	r, _, _ := purego.SyscallN(a.fns[name], args...)
	if *code != clSuccess {
		return 0, &clError{call: name, code: *code}
	}
	return r, nil
}

// clInfo is what the probe found.
type clInfo struct {
	api              *clAPI
	platform, device uintptr
	platformName     string
	deviceName       string
	globalMem        uint64
	limits           render.Limits
	buildOptions     string
}

func (i *clInfo) String() string {
	half := ""
	if !i.limits.Half {
		half = ", no fp16"
	}
	if i.limits.NoFloat64 {
		half += ", no fp64"
	}
	return fmt.Sprintf("%s on %s, %d MiB, max work-group %d%s", i.deviceName, i.platformName, i.globalMem>>20, i.limits.MaxWorkGroup, half)
}

var clProbe = sync.OnceValues(func() (*clInfo, error) {
	var lib uintptr
	var err error
	for _, name := range []string{"libOpenCL.so.1", "libOpenCL.so"} {
		if lib, err = purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			break
		}
	}
	if err != nil {
		return nil, errors.New("libOpenCL.so.1 not found (install an OpenCL ICD loader and driver, e.g. Debian's ocl-icd-libopencl1 pocl-opencl-icd)")
	}
	api := &clAPI{fns: map[string]uintptr{}}
	for _, n := range clFuncNames {
		sym, err := purego.Dlsym(lib, n)
		if err != nil {
			return nil, fmt.Errorf("libOpenCL.so.1 lacks %s: %v", n, err)
		}
		api.fns[n] = sym
	}
	return clFind(api)
})

// clFind picks a device: the first GPU of any platform, else the first
// device of any kind.
func clFind(api *clAPI) (*clInfo, error) {
	var n uint32
	if err := api.call("clGetPlatformIDs", 0, 0, uintptr(unsafe.Pointer(&n))); err != nil || n == 0 {
		var ce *clError
		if n == 0 || errors.As(err, &ce) && ce.code == clPlatformNotFound {
			return nil, errors.New("no OpenCL platform (no driver registered in /etc/OpenCL/vendors; e.g. install pocl-opencl-icd)")
		}
		return nil, err
	}
	platforms := make([]uintptr, n)
	if err := api.call("clGetPlatformIDs", uintptr(n), uintptr(unsafe.Pointer(&platforms[0])), 0); err != nil {
		return nil, err
	}
	for _, kind := range []uint64{clDeviceTypeGPU, clDeviceTypeAll} {
		for _, p := range platforms {
			var dev uintptr
			var nd uint32
			if api.call("clGetDeviceIDs", p, uintptr(kind), 1, uintptr(unsafe.Pointer(&dev)), uintptr(unsafe.Pointer(&nd))) != nil || nd == 0 {
				continue
			}
			return clDescribe(api, p, dev)
		}
	}
	return nil, fmt.Errorf("no OpenCL device on %d platform(s)", n)
}

func clString(api *clAPI, fn string, obj uintptr, param uint32) string {
	var size uintptr
	if api.call(fn, obj, uintptr(param), 0, 0, uintptr(unsafe.Pointer(&size))) != nil || size == 0 {
		return ""
	}
	buf := make([]byte, size)
	if api.call(fn, obj, uintptr(param), size, uintptr(unsafe.Pointer(&buf[0])), 0) != nil {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00 ")
}

func clUint(api *clAPI, dev uintptr, param uint32) uint64 {
	var v uint64
	_ = api.call("clGetDeviceInfo", dev, uintptr(param), 8, uintptr(unsafe.Pointer(&v)), 0)
	return v
}

func clDescribe(api *clAPI, platform, dev uintptr) (*clInfo, error) {
	info := &clInfo{api: api, platform: platform, device: dev,
		platformName: clString(api, "clGetPlatformInfo", platform, clPlatformName),
		deviceName:   clString(api, "clGetDeviceInfo", dev, clDeviceName),
		globalMem:    clUint(api, dev, clDeviceGlobalMemSize)}
	var sizes [3]uint64
	_ = api.call("clGetDeviceInfo", dev, clDeviceMaxItemSizes, 24, uintptr(unsafe.Pointer(&sizes[0])), 0)
	ext := clString(api, "clGetDeviceInfo", dev, clDeviceExtensions)
	lim := render.Limits{
		MaxWorkGroup: int64(clUint(api, dev, clDeviceMaxWorkGroup)),
		LocalMem:     int64(clUint(api, dev, clDeviceLocalMemSize)),
		Half:         strings.Contains(ext, "cl_khr_fp16"),
		NoFloat64:    !strings.Contains(ext, "cl_khr_fp64"),
	}
	for d := range sizes {
		lim.MaxLocal[d] = int64(sizes[d])
	}
	// Large work-groups only pay on GPUs; the renderer's default is a
	// good cap everywhere.
	lim.MaxWorkGroup = max(1, min(lim.MaxWorkGroup, render.DefaultLimits.MaxWorkGroup))
	info.limits = lim
	info.buildOptions = clBuildOptions(clUint(api, dev, clDeviceSingleFP))
	return info, nil
}

// clBuildOptions asks for a correctly rounded float32 divide and sqrt
// where the device offers it: OpenCL's default allows 2.5 and 3 ulp
// (NVIDIA's driver uses that freedom), and the other devices round both
// exactly, as GO does.
func clBuildOptions(singleFPConfig uint64) string {
	if singleFPConfig&clFPCorrectlyRounded != 0 {
		return "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
	}
	return "-cl-std=CL1.2"
}

type clDevice struct {
	info       *clInfo
	api        *clAPI
	ctx, queue uintptr
	lang       *render.Lang
	mu         sync.Mutex
	progs      map[string]*clProgram

	compileCounter
}

func openCL() (Device, error) {
	info, err := clProbe()
	if err != nil {
		return nil, err
	}
	api := info.api
	dev := info.device
	ctx, err := api.create("clCreateContext", 0, 1, uintptr(unsafe.Pointer(&dev)), 0, 0)
	if err != nil {
		return nil, err
	}
	queue, err := api.create("clCreateCommandQueue", ctx, dev, clQueueProfiling)
	if err != nil {
		return nil, err
	}
	return &clDevice{info: info, api: api, ctx: ctx, queue: queue, lang: render.OpenCLFor(info.limits), progs: map[string]*clProgram{}}, nil
}

func (d *clDevice) Name() string               { return "CL" }
func (d *clDevice) Source(k *ir.Kernel) string { return render.Render(d.lang, k) }

// Target: the grid passes (GROUP, vector accesses) within the device's limits.
func (d *clDevice) Target() ir.Target { return d.lang.Target() }

// Fingerprint identifies what a kernel's speed depends on (the key of
// BEAM's stored results): the device, its compiler and its limits.
func (d *clDevice) Fingerprint() string { return fmt.Sprintf("CL\x00%s\x00%+v", d.info, d.info.limits) }

func (d *clDevice) Owns(b Buffer) bool { c, ok := b.(*clBuffer); return ok && c.d == d }

type clBuffer struct {
	d    *clDevice
	mem  uintptr
	size int
	free func()
}

func (d *clDevice) Alloc(dt ir.DType, n int) (Buffer, error) {
	size := n * dt.Size()
	mem, err := d.api.create("clCreateBuffer", d.ctx, clMemReadWrite, uintptr(max(size, 1)), 0)
	if err != nil {
		return nil, fmt.Errorf("CL: allocating %d bytes (device has %d MiB): %w", size, d.info.globalMem>>20, err)
	}
	b := &clBuffer{d: d, mem: mem, size: size}
	api := d.api
	var once sync.Once
	free := func() { once.Do(func() { _ = api.call("clReleaseMemObject", mem) }) }
	b.free = free
	runtime.AddCleanup(b, func(f func()) { f() }, free)
	return b, nil
}

func (b *clBuffer) CopyIn(data []byte) error {
	if len(data) != b.size {
		return fmt.Errorf("copy in: %d bytes into a buffer of %d", len(data), b.size)
	}
	if b.size == 0 {
		return nil
	}
	return b.d.api.call("clEnqueueWriteBuffer", b.d.queue, b.mem, 1, 0, uintptr(b.size), uintptr(unsafe.Pointer(&data[0])), 0, 0, 0)
}

func (b *clBuffer) CopyOut(data []byte) error {
	if len(data) != b.size {
		return fmt.Errorf("copy out: %d bytes from a buffer of %d", len(data), b.size)
	}
	if b.size == 0 {
		return nil
	}
	return b.d.api.call("clEnqueueReadBuffer", b.d.queue, b.mem, 1, 0, uintptr(b.size), uintptr(unsafe.Pointer(&data[0])), 0, 0, 0)
}

func (b *clBuffer) Free() {
	if b.free != nil {
		b.free()
		b.free = nil
	}
}

type clProgram struct {
	d      *clDevice
	name   string
	src    string
	kernel uintptr
	launch render.Launch
}

// Compile builds the kernels not built yet as one program (the driver's
// compiler has a large fixed cost per build), then creates each kernel.
func (d *clDevice) Compile(ks []*ir.Kernel) ([]Program, error) {
	progs, _, err := d.compileCounted(ks)
	return progs, err
}

func (d *clDevice) compileCounted(ks []*ir.Kernel) ([]Program, CompileCounts, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.during(func() ([]Program, error) { return d.compileLocked(ks) })
}

func (d *clDevice) compileLocked(ks []*ir.Kernel) ([]Program, error) {
	out := make([]Program, len(ks))
	srcs := make([]string, len(ks))
	var todo []int
	seen := map[string]bool{}
	for i, k := range ks {
		if err := d.lang.Supports(k); err != nil {
			return nil, err
		}
		srcs[i] = render.Render(d.lang, k)
		if _, ok := d.progs[srcs[i]]; !ok && !seen[srcs[i]] {
			seen[srcs[i]] = true
			todo = append(todo, i)
		}
	}
	if len(todo) > 0 {
		var unit strings.Builder
		var names []string
		for _, i := range todo {
			fmt.Fprintf(&unit, "/* ---- %s ---- */\n%s\n", ks[i].Name, srcs[i])
			names = append(names, ks[i].Name)
		}
		prog, err := d.build(strings.Join(names, ", "), unit.String())
		if err != nil {
			return nil, err
		}
		for _, i := range todo {
			name := append([]byte(ks[i].Name), 0)
			kern, err := d.api.create("clCreateKernel", prog, uintptr(unsafe.Pointer(&name[0])))
			if err != nil {
				return nil, fmt.Errorf("kernel %s: %w", ks[i].Name, err)
			}
			d.progs[srcs[i]] = &clProgram{d: d, name: ks[i].Name, src: srcs[i], kernel: kern}
		}
	}
	for i, k := range ks {
		p := *d.progs[srcs[i]]
		p.launch = render.GPULaunch(d.lang, k)
		out[i] = &p
	}
	return out, nil
}

// CLBuildError is a kernel the OpenCL compiler rejected: the kernel's
// name, the build log and the source.
type CLBuildError struct {
	Kernel, Log, Source string
	Err                 error
}

func (e *CLBuildError) Error() string {
	return fmt.Sprintf("CL: building kernel %s failed (%v):\n%s", e.Kernel, e.Err, strings.TrimSpace(e.Log))
}

// build compiles one OpenCL program from source; kernels names the
// kernels in it, for the error.
func (d *clDevice) build(kernels, src string) (uintptr, error) {
	api := d.api
	csrc := append([]byte(src), 0)
	srcPtr := uintptr(unsafe.Pointer(&csrc[0]))
	var pin runtime.Pinner
	pin.Pin(&csrc[0])
	defer pin.Unpin()
	length := uintptr(len(src))
	prog, err := api.create("clCreateProgramWithSource", d.ctx, 1, uintptr(unsafe.Pointer(&srcPtr)), uintptr(unsafe.Pointer(&length)))
	if err != nil {
		return 0, err
	}
	dev := d.info.device
	opts := []byte(d.info.buildOptions + "\x00")
	start := time.Now()
	if err := api.call("clBuildProgram", prog, 1, uintptr(unsafe.Pointer(&dev)), uintptr(unsafe.Pointer(&opts[0])), 0, 0); err != nil {
		return 0, &CLBuildError{Kernel: kernels, Log: clBuildLog(api, prog, dev), Source: src, Err: err}
	}
	d.built(start)
	return prog, nil
}

// clBuildLog reads a program's build log.
func clBuildLog(api *clAPI, prog, dev uintptr) string {
	var size uintptr
	if api.call("clGetProgramBuildInfo", prog, dev, clProgramBuildLog, 0, 0, uintptr(unsafe.Pointer(&size))) != nil || size == 0 {
		return ""
	}
	buf := make([]byte, size)
	if api.call("clGetProgramBuildInfo", prog, dev, clProgramBuildLog, size, uintptr(unsafe.Pointer(&buf[0])), 0) != nil {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00")
}

func (p *clProgram) Name() string { return p.name }

func (p *clProgram) Disassembly() (string, error) {
	return "", errors.New("CL: no disassembly (the driver compiles the source above)")
}

// Run sets the arguments (buffers, then each var as a long), enqueues the
// NDRange and waits for it; the time is the event's profiled duration.
func (p *clProgram) Run(bufs []Buffer, vars []int64) (time.Duration, error) {
	return runOne(p.d.enqueue, p, bufs, vars)
}

// RunBatch enqueues ls in order on the in-order queue (each launch's
// arguments are taken when it is enqueued) and waits once, for the last:
// a TinyJit replay pays one wait, not one per kernel. times[i] is launch
// i's profiled duration (0 where the driver does not profile).
func (d *clDevice) RunBatch(ls []Launch, times []time.Duration) error {
	return runNamed(d.enqueue, ls, times)
}

// enqueue is RunBatch without the kernel's name on an error: it returns
// the index of the launch that failed (the last for a failed wait, where
// an earlier kernel's error shows too).
func (d *clDevice) enqueue(ls []Launch, times []time.Duration) (int, error) {
	if len(ls) == 0 {
		return 0, nil
	}
	api := d.api
	d.mu.Lock()
	defer d.mu.Unlock()
	evs := make([]uintptr, 0, len(ls))
	defer func() {
		for _, ev := range evs {
			api.call("clReleaseEvent", ev)
		}
	}()
	for li, l := range ls {
		p := l.Prog.(*clProgram)
		if err := p.setArgs(l.Bufs, l.Vars); err != nil {
			return li, err
		}
		var global, local [3]uintptr
		for i := range 3 {
			global[i], local[i] = uintptr(p.launch.Global[i]), uintptr(p.launch.Local[i])
		}
		var ev uintptr
		if err := api.call("clEnqueueNDRangeKernel", d.queue, p.kernel, 3, 0, uintptr(unsafe.Pointer(&global[0])), uintptr(unsafe.Pointer(&local[0])), 0, 0, uintptr(unsafe.Pointer(&ev))); err != nil {
			return li, err
		}
		evs = append(evs, ev)
	}
	last := evs[len(evs)-1]
	if err := api.call("clWaitForEvents", 1, uintptr(unsafe.Pointer(&last))); err != nil {
		return len(ls) - 1, err
	}
	for i, ev := range evs {
		var t0, t1 uint64
		times[i] = 0
		if api.call("clGetEventProfilingInfo", ev, clProfilingStart, 8, uintptr(unsafe.Pointer(&t0)), 0) == nil &&
			api.call("clGetEventProfilingInfo", ev, clProfilingEnd, 8, uintptr(unsafe.Pointer(&t1)), 0) == nil {
			times[i] = time.Duration(t1 - t0)
		}
	}
	return 0, nil
}

// Wake: the queue needs no waking.
func (d *clDevice) Wake() {}

// setArgs sets the kernel's arguments: buffers, then each var as a long.
func (p *clProgram) setArgs(bufs []Buffer, vars []int64) error {
	api := p.d.api
	for i, b := range bufs {
		mem := b.(*clBuffer).mem
		if err := api.call("clSetKernelArg", p.kernel, uintptr(i), unsafe.Sizeof(mem), uintptr(unsafe.Pointer(&mem))); err != nil {
			return fmt.Errorf("argument %d: %w", i, err)
		}
	}
	for i, v := range vars {
		if err := api.call("clSetKernelArg", p.kernel, uintptr(len(bufs)+i), 8, uintptr(unsafe.Pointer(&v))); err != nil {
			return fmt.Errorf("var %d: %w", i, err)
		}
	}
	return nil
}
