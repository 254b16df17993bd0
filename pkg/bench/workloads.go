// Package bench defines tgc's benchmark suite: the workloads `tgc bench`
// runs and `go test -bench ./pkg/bench` measures, each with the work it
// does so results read as GFLOP/s and GB/s.
package bench

import (
	"fmt"
	"runtime"
	"sort"
	"syscall"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// Workload is one benchmark: Build makes the lazy graph to time, with its
// inputs already realized (so only the computation is timed).
type Workload struct {
	Name  string
	FLOPs float64 // floating-point operations of one run
	Bytes float64 // minimum memory traffic of one run
	Build func(ctx *tensor.Context) *tensor.Tensor
	// Setup, for training-step workloads instead of Build, returns one
	// whole step, timed by the wall clock (see train.go).
	Setup func(ctx *tensor.Context) (func() error, error)
	// Cold: the caches are emptied of its data before each timed run
	// (an evictor, untimed), so that it reads from memory as the STREAM
	// triad it is compared with does: the memory-bound workloads.
	Cold bool
}

// Result is one measured workload.
type Result struct {
	Name    string  `json:"name"`
	Device  string  `json:"device"`
	Seconds float64 `json:"seconds"` // median device time
	GFLOPS  float64 `json:"gflops"`
	GBPS    float64 `json:"gbps"`
	Kernels int     `json:"kernels"`
	// CPUSeconds is the process's CPU time per run divided by the cores
	// the device spreads work on: equal to Seconds on an idle machine
	// with every core busy, but unlike it not stretched by other
	// processes taking turns on the cores (`tgc bench --cpu`).
	CPUSeconds float64 `json:"cpu_seconds"`
	// Runs are the timed runs' clock times in the order they ran (a step
	// or Cold workload's: `tgc bench --ort` pairs them with onnxruntime's,
	// `--ref` with the bandwidth measured right before each).
	Runs []float64 `json:"-"`
	// Ratios are a memory-bound workload's rates over each reference
	// (stream_triad, stream_read), the median over its runs of each run's
	// ratio to the reference measured right before it (`tgc bench --ref`).
	Ratios map[string]float64 `json:"ratios,omitempty"`
}

// CPUView is r with its rates computed from CPUSeconds instead of
// Seconds (r itself when no CPU time was measured).
func (r Result) CPUView() Result {
	if r.CPUSeconds <= 0 || r.Seconds <= 0 {
		return r
	}
	f := r.Seconds / r.CPUSeconds
	r.GFLOPS, r.GBPS, r.Seconds = r.GFLOPS*f, r.GBPS*f, r.CPUSeconds
	return r
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perCore is CPU time spent over runs, per run and per core the Go
// runtime spreads work on (the CPU device runs one chunk per core).
func perCore(d time.Duration, runs int) float64 {
	return d.Seconds() / float64(max(runs, 1)) / float64(runtime.GOMAXPROCS(0))
}

func input(ctx *tensor.Context, shape ...int) *tensor.Tensor { return ctx.Rand(shape...).Realize() }

func matmul(n int) Workload {
	w := product(n, n, n)
	w.Name = fmt.Sprintf("matmul_%d", n)
	return w
}

// product is (m x k) @ (k x n), named matmul_MxKxN (`tgc bench --ref`
// pairs it with OpenBLAS's sgemm of that shape).
func product(m, k, n int) Workload {
	return Workload{
		Name: fmt.Sprintf("matmul_%dx%dx%d", m, k, n), FLOPs: 2 * float64(m*k*n), Bytes: 4 * float64(m*k+k*n+m*n),
		Build: func(ctx *tensor.Context) *tensor.Tensor { return input(ctx, m, k).Dot(input(ctx, k, n)) },
	}
}

// unary is an elementwise function of 16M floats (one read, one write).
func unary(name string, f func(*tensor.Tensor) *tensor.Tensor) Workload {
	const m16 = 16 << 20
	return Workload{Name: name, Bytes: 2 * 4 * m16, Cold: true,
		Build: func(ctx *tensor.Context) *tensor.Tensor { return f(input(ctx, m16)) }}
}

// rows is a function of 4096 rows of 4096 floats along the rows (one
// read, one write: the row fits in L1, so it is read from memory once),
// as softmax_4096.
func rows(name string, f func(*tensor.Tensor) *tensor.Tensor) Workload {
	return rowsOf(name, 4096, 4096, f)
}

// rowsOf is rows of n rows by cols.
func rowsOf(name string, n, cols int, f func(*tensor.Tensor) *tensor.Tensor) Workload {
	return Workload{Name: name, Bytes: 2 * 4 * float64(n*cols), Cold: true,
		Build: func(ctx *tensor.Context) *tensor.Tensor { return f(input(ctx, n, cols)) }}
}

// Suite is the fixed benchmark suite, in order.
func Suite() []Workload {
	const m16 = 16 << 20
	return []Workload{
		matmul(512), matmul(1024), matmul(2048),
		{Name: "elementwise_16M", Bytes: 3 * 4 * m16, FLOPs: 3 * m16, Cold: true,
			Build: func(ctx *tensor.Context) *tensor.Tensor {
				a, b := input(ctx, m16), input(ctx, m16)
				return a.Mul(b).Add(a).Relu()
			}},
		{Name: "sum_16M", Bytes: 4 * m16, FLOPs: m16, Cold: true,
			Build: func(ctx *tensor.Context) *tensor.Tensor { return input(ctx, m16).Sum(false) }},
		{Name: "softmax_4096", Bytes: 2 * 4 * 4096 * 4096, FLOPs: 5 * 4096 * 4096, Cold: true,
			Build: func(ctx *tensor.Context) *tensor.Tensor { return input(ctx, 4096, 4096).Softmax(-1) }},
		{Name: "conv2d_resnet", FLOPs: 2 * 32 * 64 * 56 * 56 * 64 * 9, Bytes: 4 * (2*32*64*56*56 + 64*64*9),
			Build: func(ctx *tensor.Context) *tensor.Tensor {
				x, w := input(ctx, 32, 64, 56, 56), input(ctx, 64, 64, 3, 3)
				return x.Conv2d(w, nil, tensor.ConvOpts{Padding: []int{1}})
			}},
	}
}

// Find returns the named workloads (all when names is empty).
func Find(names []string) ([]Workload, error) {
	// matmul_4096 is for GPUs, sigmoid_16M and gelu_16M time transcendental
	// elementwise kernels, the llama_ workloads write a random model file
	// first and the ONNX models need bench/onnx/gen.py: not in the default
	// suite, but runnable by name.
	suite := append(Suite(), StepWorkloads()...)
	if len(names) == 0 {
		return suite, nil
	}
	// matmul_1001 and GPT-2's classifier over 128 positions have output
	// axes no vector width divides (ir's PADTO), the _512x50257 rows too.
	all := append(suite, matmul(4096), matmul(1001), product(128, 768, 50257), unary("sigmoid_16M", (*tensor.Tensor).Sigmoid),
		unary("gelu_16M", (*tensor.Tensor).Gelu),
		rows("layernorm_4096", func(t *tensor.Tensor) *tensor.Tensor { return t.Layernorm(1e-5, -1) }),
		rows("log_softmax_4096", func(t *tensor.Tensor) *tensor.Tensor { return t.LogSoftmax(-1) }),
		// GPT-2's 50257 classes over 512 positions (ir's split_tails)
		rowsOf("softmax_512x50257", 512, 50257, func(t *tensor.Tensor) *tensor.Tensor { return t.Softmax(-1) }),
		rowsOf("log_softmax_512x50257", 512, 50257, func(t *tensor.Tensor) *tensor.Tensor { return t.LogSoftmax(-1) }))
	all = append(all, LlamaWorkloads()...)
	for _, o := range ONNXWorkloads() {
		all = append(all, o.workload())
	}
	var out []Workload
	for _, n := range names {
		found := false
		for _, w := range all {
			if w.Name == n {
				out = append(out, w)
				found = true
			}
		}
		if !found {
			var have []string
			for _, w := range all {
				have = append(have, w.Name)
			}
			return nil, fmt.Errorf("unknown workload %q (have %v)", n, have)
		}
	}
	return out, nil
}

// Run times a workload iters times on the engine's device (after one
// warm-up run that compiles it) and reports the median. The workload's
// tensors live in a context of their own on e. before, if not nil, runs
// right before each timed run (and the evictor's sweep, for a Cold
// workload): `tgc bench --ref` measures the memory's bandwidth there, so
// that each run has a reference taken under the same load.
func Run(e *realize.Engine, w Workload, iters int, before func() error) (Result, error) {
	if w.Setup != nil {
		return RunStep(e, w, iters, before)
	}
	out := w.Build(tensor.NewContext(e))
	if err := out.Err(); err != nil {
		return Result{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	n, flops := e.Stats.Kernels, e.Stats.FLOPs
	if _, err := e.Time(1, out.Node()); err != nil {
		return Result{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	kernels := e.Stats.Kernels - n
	if w.FLOPs == 0 {
		// a workload without a count of its own (sigmoid, gelu): its
		// kernels' operations as their code runs them
		w.FLOPs = float64(e.Stats.FLOPs - flops)
	}
	if w.Cold || before != nil {
		// One run at a time (for a Cold workload the caches emptied
		// before each); only the runs' CPU time counted.
		var ev *evictor
		if w.Cold {
			ev = newEvictor(backend.Host())
			defer ev.free()
		}
		var times []time.Duration
		var runs []float64
		var cpu time.Duration
		for range max(iters, 1) {
			if before != nil {
				if err := before(); err != nil {
					return Result{}, err
				}
			}
			if ev != nil {
				ev.run()
			}
			c0 := cpuTime()
			t, err := e.Time(1, out.Node())
			if err != nil {
				return Result{}, fmt.Errorf("%s: %w", w.Name, err)
			}
			cpu += cpuTime() - c0
			times = append(times, t...)
			for _, d := range t {
				runs = append(runs, d.Seconds())
			}
		}
		r := summarize(w, e.Dev.Name(), times, kernels)
		r.CPUSeconds = perCore(cpu, len(times))
		r.Runs = runs
		return r, nil
	}
	c0 := cpuTime()
	times, err := e.Time(max(iters, 1), out.Node())
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	r := summarize(w, e.Dev.Name(), times, kernels)
	r.CPUSeconds = perCore(cpuTime()-c0, len(times))
	return r, nil
}

func summarize(w Workload, device string, times []time.Duration, kernels int) Result {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	med := times[len(times)/2].Seconds()
	r := Result{Name: w.Name, Device: device, Seconds: med, Kernels: kernels}
	if med > 0 {
		r.GFLOPS = w.FLOPs / med / 1e9
		r.GBPS = w.Bytes / med / 1e9
	}
	return r
}
