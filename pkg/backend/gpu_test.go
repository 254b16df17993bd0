package backend

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"tgc/pkg/ir"
)

// TestCUDAProbe: without a driver the probe says why; with one it names
// the GPU.
func TestCUDAProbe(t *testing.T) {
	info, err := cudaProbe()
	if err != nil {
		msg := err.Error()
		if !strings.Contains(msg, "libcuda.so.1") && !strings.Contains(msg, "libnvrtc") && !strings.Contains(msg, "CUDA") {
			t.Errorf("unhelpful probe error: %q", msg)
		}
		return
	}
	if info.major == 0 || info.limits.MaxWorkGroup == 0 {
		t.Errorf("probe found %s with no limits", info)
	}
}

func TestCUDAErrors(t *testing.T) {
	e := &cudaError{call: "cuLaunchKernel", code: 700, msg: "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"}
	if got := e.Error(); got != "CUDA: cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered (700)" {
		t.Errorf("got %q", got)
	}
	oom := oomError(3<<30, 1<<30, 80<<30, &cudaError{call: "cuMemAlloc_v2", code: 2, msg: "CUDA_ERROR_OUT_OF_MEMORY"})
	for _, want := range []string{"3221225472 bytes", "1024.0 MiB free of 81920.0 MiB", "cuMemAlloc_v2"} {
		if !strings.Contains(oom.Error(), want) {
			t.Errorf("OOM error %q lacks %q", oom, want)
		}
	}
	var ce *cudaError
	if !errors.As(oom, &ce) || ce.code != 2 {
		t.Error("OOM error does not wrap the driver error")
	}
	be := &CUDABuildError{Kernel: "r_4_4096", Log: "error: identifier \"x\" is undefined\n", Err: e}
	if !strings.Contains(be.Error(), "r_4_4096") || !strings.Contains(be.Error(), "undefined") {
		t.Errorf("build error %q lacks the kernel or the log", be)
	}
	if got := nvrtcOptions(9, 0, false); got[0] != "--gpu-architecture=compute_90" {
		t.Errorf("nvrtc options for PTX %v", got)
	}
	if got := nvrtcOptions(9, 0, true); got[0] != "--gpu-architecture=sm_90" {
		t.Errorf("nvrtc options for CUBIN %v", got)
	}
	b := []byte("hello\x00world")
	if got := cString(&b[0]); got != "hello" {
		t.Errorf("cString: %q", got)
	}
}

// TestCUDAPackArgs: kernelParams point at one 8-byte slot per argument.
func TestCUDAPackArgs(t *testing.T) {
	vals, params := packArgs([]uint64{0x7f0000001000, 0x7f0000002000}, []int64{-5, 42})
	want := []uint64{0x7f0000001000, 0x7f0000002000, uint64(0xfffffffffffffffb), 42}
	if len(params) != 4 || len(vals) != 4 {
		t.Fatalf("%d params, %d values", len(params), len(vals))
	}
	for i, p := range params {
		if p != uintptr(unsafe.Pointer(&vals[i])) || vals[i] != want[i] {
			t.Errorf("param %d = %#x, want a pointer to %#x", i, vals[i], want[i])
		}
	}
}

func TestCLErrors(t *testing.T) {
	if got := (&clError{call: "clBuildProgram", code: -11}).Error(); got != "CL: clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11)" {
		t.Errorf("got %q", got)
	}
	be := &CLBuildError{Kernel: "E_4", Log: "<source>:3:5: error: use of undeclared identifier 'y'\n", Err: &clError{call: "clBuildProgram", code: -11}}
	if !strings.Contains(be.Error(), "E_4") || !strings.Contains(be.Error(), "undeclared identifier") {
		t.Errorf("build error %q", be)
	}
}

// TestCLBuildLog: a kernel the driver rejects reports its name and the
// compiler's log.
func TestCLBuildLog(t *testing.T) {
	dev, err := Open("CL")
	if err != nil {
		t.Skipf("CL unavailable: %v", err)
	}
	_, err = dev.(*clDevice).build("E_bad", "__kernel void E_bad(__global float *out0) { out0[0] = undefined_y; }\n")
	var be *CLBuildError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "E_bad") || !strings.Contains(err.Error(), "undefined_y") {
		t.Fatalf("want a build error naming E_bad with the log, got %v", err)
	}
}

// TestCLBuffers: bytes survive a round trip through device memory, and
// sizes are checked.
func TestCLBuffers(t *testing.T) {
	dev, err := Open("CL")
	if err != nil {
		t.Skipf("CL unavailable: %v", err)
	}
	b, err := dev.Alloc(ir.Float16, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	in := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if err := b.CopyIn(in); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 10)
	if err := b.CopyOut(out); err != nil || string(out) != string(in) {
		t.Fatalf("round trip: %v %v", out, err)
	}
	if err := b.CopyIn(in[:3]); err == nil {
		t.Error("short copy accepted")
	}
}

// TestNVRTCCandidates: the loader's names come first, then each toolkit
// directory's lib64 in order.
func TestNVRTCCandidates(t *testing.T) {
	env := map[string]string{"CUDA_HOME": "/opt/cuda"}
	got := nvrtcCandidates(func(k string) string { return env[k] })
	if got[0] != "libnvrtc.so" || len(got) != 12 {
		t.Fatalf("candidates %v", got)
	}
	if got[4] != "/opt/cuda/lib64/libnvrtc.so" || got[8] != "/usr/local/cuda/lib64/libnvrtc.so" || got[11] != "/usr/local/cuda/lib64/libnvrtc.so.11.2" {
		t.Errorf("candidates %v", got)
	}
}

// TestCLBuildOptions: the correctly rounded divide and sqrt are asked for
// only where CL_DEVICE_SINGLE_FP_CONFIG offers them (the option is invalid
// elsewhere).
func TestCLBuildOptions(t *testing.T) {
	if got := clBuildOptions(0x3e); got != "-cl-std=CL1.2" {
		t.Errorf("without the bit: %q", got)
	}
	if got := clBuildOptions(0xbe); got != "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt" {
		t.Errorf("with the bit: %q", got)
	}
}

// The CUDA device takes a TinyJit replay's launches as one batch.
var _ Batcher = (*cudaDevice)(nil)

// TestCUDAInfoString: `tgc devices` says which compiler makes the kernels
// and what it makes.
func TestCUDAInfoString(t *testing.T) {
	base := cudaInfo{name: "NVIDIA H200", major: 9, minor: 0, totalMem: 143155 << 20, nvrtcVersion: "13.0"}
	for _, c := range []struct {
		mod  func(*cudaInfo)
		want string
	}{
		{func(i *cudaInfo) { i.cubin = true }, "NVIDIA H200, compute 9.0, 143155 MiB, NVRTC 13.0 to sm_90"},
		{func(i *cudaInfo) {}, "NVIDIA H200, compute 9.0, 143155 MiB, NVRTC 13.0 to PTX"},
		{func(i *cudaInfo) { i.clang = "/usr/bin/clang-15" }, "NVIDIA H200, compute 9.0, 143155 MiB, PTX by clang-15 (no libnvrtc)"},
	} {
		i := base
		c.mod(&i)
		if got := i.String(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// The CL device takes a TinyJit replay's launches as one batch too.
var _ Batcher = (*clDevice)(nil)

// TestBatchRunnerErrors: a batch's error names the launch that failed, a
// single Run's is left for its caller to name.
func TestBatchRunnerErrors(t *testing.T) {
	boom := errors.New("boom")
	run := func(ls []Launch, times []time.Duration) (int, error) { return 1, boom }
	ls := []Launch{{Prog: &clProgram{name: "E_1"}}, {Prog: &clProgram{name: "E_2"}}}
	if err := runNamed(run, ls, make([]time.Duration, 2)); err == nil || err.Error() != "kernel E_2: boom" {
		t.Errorf("batch: %v", err)
	}
	if _, err := runOne(run, &clProgram{name: "E_1"}, nil, nil); err != boom {
		t.Errorf("one launch: %v", err)
	}
}
