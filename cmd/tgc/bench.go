package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tgc/pkg/backend"
	"tgc/pkg/bench"
	"tgc/pkg/realize"
	"tgc/pkg/report"
)

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench [WORKLOAD...]",
		Short: "Run the benchmark suite and compare with the machine's limits",
		Long: `Runs the fixed suite (matmul 512/1024/2048, elementwise and sum over 16M
floats, softmax 4096x4096, a ResNet conv2d, one MNIST cnn and one mlp training
step) and prints the median device time,
GFLOP/s and GB/s of each. --json prints one JSON object per line instead.
--ref also runs bench/ref/ref (OpenBLAS sgemm, im2col + sgemm for the conv,
STREAM triad, FMA peak; build it with make bench/ref/ref) right before each
workload and prints tgc's ratio to each. --cpu computes times, rates and
ratios from CPU time per core instead of the clock: on a machine other
processes share, their turns on the cores stretch the clock, not the CPU
time. --ort times onnxruntime's CPU provider on the ONNX workloads (node
bench/onnx/ort.js), one of its runs right before each of tgc's (which
starts once onnxruntime's threads have stopped spinning for more work):
tgc/ort is the median of the ratios of those back-to-back pairs, clock
times (so both saw the same load), and onnxruntime's column its median
clock time. The
host line names the processor, its caches (from sysfs) and vector flags:
figures mean little
without it. --beam N searches each kernel's optimizations first (stored;
later runs reuse them).`,
		Example: `  tgc bench
  tgc bench matmul_1024 --ref
  tgc bench --json > bench.jsonl`,
		RunE: runBench,
	}
	addDeviceFlag(c, "device to benchmark (default: the best available)")
	f := c.Flags()
	f.Bool("json", false, "one JSON object per workload per line")
	f.Bool("ref", false, "also run the reference program (OpenBLAS, STREAM, FMA peak) and print ratios")
	f.Bool("ort", false, "ONNX workloads: also time onnxruntime's CPU provider on the same model (node bench/onnx/ort.js), alternating with tgc's runs, and print tgc's time over it")
	f.Int("ort-threads", 2, "onnxruntime's intra-op threads for --ort")
	f.Int("iters", 5, "timed runs per workload (the median is reported)")
	f.Bool("cpu", false, "rates and ratios from CPU time per core instead of the clock (on a machine other processes share)")
	addBeamFlags(c)
	return c
}

func runBench(c *cobra.Command, args []string) error {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	asJSON, _ := c.Flags().GetBool("json")
	withRef, _ := c.Flags().GetBool("ref")
	withORT, _ := c.Flags().GetBool("ort")
	ortThreads, _ := c.Flags().GetInt("ort-threads")
	iters, _ := c.Flags().GetInt("iters")
	byCPU, _ := c.Flags().GetBool("cpu")
	workloads, err := bench.Find(args)
	if err != nil {
		return err
	}
	if withRef {
		if _, err := refProgram(); err != nil {
			return err
		}
	}
	ort := map[string]bench.Result{} // onnxruntime's times, ort_NAME
	ratios := map[string]float64{}   // tgc/ort, the median over back-to-back pairs of runs
	if withORT {
		if _, err := os.Stat(filepath.Join("bench", "onnx", "node_modules", "onnxruntime-node")); err != nil {
			return fmt.Errorf("onnxruntime-node is not installed: cd bench/onnx && ONNXRUNTIME_NODE_INSTALL=skip npm ci")
		}
	}
	eng, err := realize.Open(cfg.RunDevice(), engineOptions(cfg, stderr, false))
	if err != nil {
		return err
	}
	var rows [][]string
	enc := json.NewEncoder(stdout)
	device := "" // a device other than the host's cores, as tgc devices names it
	if dev := eng.Dev.Name(); dev != "CPU" {
		device = dev + ", " + backend.Describe(dev)
	}
	if asJSON {
		host := hostJSON(backend.Host())
		if device != "" {
			host["device"] = device
		}
		if err := enc.Encode(host); err != nil {
			return err
		}
	}
	var ref map[string]bench.Result
	limits := map[string][2]float64{} // fma_peak, stream_triad, the read bandwidths: the lowest and highest reading
	for _, w := range workloads {
		if !asJSON {
			fmt.Fprintf(stderr, "running %s...\n", w.Name)
		}
		if withRef && !(w.Cold && !byCPU) {
			// The reference right before the workload: on a shared machine
			// the load changes within a minute, and a ratio means something
			// only between measurements taken close together.
			if ref, err = runReference(refParts(w.Name)...); err != nil {
				return err
			}
			if strings.HasPrefix(w.Name, "llama_decode") {
				// A decode step reads every weight once: its limit is
				// the read bandwidth, measured by tgc itself.
				ref["read_bandwidth"] = bench.MeasureReadBandwidth()
			}
			if byCPU {
				for k, v := range ref {
					ref[k] = v.CPUView()
				}
			}
			noteLimits(limits, ref)
		}
		var pairs map[string]float64 // the median ratios of runs to the references right before them
		var r bench.Result
		if o, ok := onnxWorkload(w.Name); ok && withORT {
			// onnxruntime runs right before each of tgc's runs: on a
			// shared machine the load drifts within a minute, and the
			// ratio of two runs means something only when they ran
			// back to back.
			var srv *ortServer
			if srv, err = startORT(o, ortThreads); err != nil {
				return err
			}
			r, err = bench.RunStep(eng, w, iters, srv.run)
			if cerr := srv.close(); err == nil {
				err = cerr
			}
			ort["ort_"+w.Name], ratios[w.Name] = srv.result(w, r)
		} else if withRef && w.Cold && !byCPU {
			// A memory-bound workload: the bus moves with the other
			// guests' load within seconds, so each run is compared with
			// the bandwidth measured right before it.
			var srv *refServer
			if srv, err = startRefServer(); err != nil {
				return err
			}
			parts := refParts(w.Name)
			r, err = bench.Run(eng, w, iters, func() error { return srv.measure(parts) })
			if cerr := srv.close(); err == nil {
				err = cerr
			}
			if err == nil {
				ref, pairs = srv.paired(w, r)
				r.Ratios = pairs
				noteLimits(limits, ref)
			}
		} else {
			r, err = bench.Run(eng, w, iters, nil)
		}
		if err != nil {
			return err
		}
		if byCPU {
			r = r.CPUView()
		}
		if asJSON {
			if err := enc.Encode(r); err != nil {
				return err
			}
			for _, k := range report.SortedKeys(ref) {
				if err := enc.Encode(ref[k]); err != nil {
					return err
				}
			}
			continue
		}
		if withRef {
			rows = append(rows, benchRow(r, ref, pairs))
		} else {
			rows = append(rows, benchRow(r, nil, nil))
		}
	}
	if asJSON {
		for _, k := range report.SortedKeys(ort) {
			if err := enc.Encode(ort[k]); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(stdout, "host: %s\n", backend.Host())
	if device != "" {
		fmt.Fprintf(stdout, "device: %s\n", device)
	}
	headers := []string{"workload", "kernels", "time", "GFLOP/s", "GB/s"}
	if withRef {
		headers = append(headers, "vs limit", "vs OpenBLAS")
	}
	if withORT {
		headers = append(headers, "onnxruntime", "tgc/ort")
		for i, r := range rows {
			if o, ok := ort["ort_"+r[0]]; ok && o.Seconds > 0 {
				rows[i] = append(r, fmt.Sprintf("%.3f ms", o.Seconds*1e3), fmt.Sprintf("%.2f×", ratios[r[0]]))
			} else {
				rows[i] = append(r, "", "")
			}
		}
	}
	report.Table(stdout, headers, rows)
	if withRef {
		var parts []string
		if l, ok := limits["fma_peak"]; ok {
			parts = append(parts, fmt.Sprintf("FMA peak %.0f–%.0f GFLOP/s", l[0], l[1]))
		}
		if l, ok := limits["stream_triad"]; ok {
			parts = append(parts, fmt.Sprintf("STREAM triad %.1f–%.1f GB/s", l[0], l[1]))
		}
		if l, ok := limits["stream_read"]; ok {
			parts = append(parts, fmt.Sprintf("STREAM read %.1f–%.1f GB/s", l[0], l[1]))
		}
		if l, ok := limits["read_bandwidth"]; ok {
			parts = append(parts, fmt.Sprintf("read bandwidth (tgc, Go; llama_decode's limit) %.1f–%.1f GB/s", l[0], l[1]))
		}
		if core := openblasCore(backend.HostVecWidth(), backend.Host()); core != "" {
			parts = append(parts, fmt.Sprintf("OpenBLAS's %s kernels (%d lanes, as tgc's)", core, backend.HostVecWidth()))
		}
		fmt.Fprintf(stdout, "references measured before each workload: %s\n", strings.Join(parts, ", "))
		if !byCPU {
			fmt.Fprintln(stdout, "(memory-bound workloads: the median of each run's ratio to the bandwidth measured right before it)")
		}
	}
	if byCPU {
		fmt.Fprintln(stdout, "(times are CPU time per core, tgc's and the references' alike)")
	}
	return nil
}

// refParts names the reference measurements a workload is compared with
// (bench/ref/ref's parts).
func refParts(name string) []string {
	switch {
	case strings.HasPrefix(name, "matmul_"):
		return []string{"sgemm" + strings.TrimPrefix(name, "matmul_"), "peak"}
	case name == "conv2d_resnet":
		return []string{"conv", "peak"}
	case strings.HasSuffix(name, "_step"):
		return []string{"peak"}
	case strings.HasPrefix(name, "llama_prefill"):
		return []string{"prefill", "peak"}
	case strings.HasPrefix(name, "llama_decode"):
		return []string{"read"}
	case strings.HasPrefix(name, "sum_"):
		// A sum only reads: its limit is the read bandwidth, which on a
		// host whose cores' outstanding misses bound a read stream is
		// below the triad's (whose streamed writes add to its reads).
		return []string{"triad", "read"}
	}
	return []string{"triad"}
}

// hostJSON is the host line of `tgc bench --json`.
func hostJSON(h backend.HostCPU) map[string]any {
	return map[string]any{"name": "host", "host": h.String(), "model": h.Model, "family": h.Family,
		"model_number": h.Number, "cores": h.Cores, "l1d_bytes": h.L1d, "l2_bytes": h.L2, "l3_bytes": h.L3,
		"vector_flags": h.VectorFlags()}
}

// noteLimits widens the lowest and highest reading of each limit by the
// references in ref.
func noteLimits(limits map[string][2]float64, ref map[string]bench.Result) {
	for _, k := range []string{"fma_peak", "stream_triad", "stream_read", "read_bandwidth"} {
		if v, ok := ref[k]; ok {
			x := max(v.GFLOPS, v.GBPS)
			l, seen := limits[k]
			if !seen {
				l = [2]float64{x, x}
			}
			limits[k] = [2]float64{min(l[0], x), max(l[1], x)}
		}
	}
}

// benchRow formats one result; compute-bound workloads (matmul, conv) are
// compared with the FMA peak, memory-bound ones with STREAM triad: by
// pairs[name] where the runs were paired with references (the median
// ratio), else by the reference's rate.
func benchRow(r bench.Result, ref map[string]bench.Result, pairs map[string]float64) []string {
	row := []string{r.Name, fmt.Sprint(r.Kernels), fmt.Sprintf("%.3f ms", r.Seconds*1e3), fmt.Sprintf("%.1f", r.GFLOPS), fmt.Sprintf("%.1f", r.GBPS)}
	if ref == nil {
		return row
	}
	limit, blas := "", ""
	if strings.HasPrefix(r.Name, "matmul") || strings.HasPrefix(r.Name, "conv") || strings.HasSuffix(r.Name, "_step") || strings.HasPrefix(r.Name, "llama_prefill") {
		if p := ref["fma_peak"].GFLOPS; p > 0 {
			limit = fmt.Sprintf("%.2f× peak", r.GFLOPS/p)
		}
		b, ok := ref["openblas_sgemm_"+strings.TrimPrefix(r.Name, "matmul_")]
		if r.Name == "conv2d_resnet" {
			b, ok = ref["im2col_sgemm_conv2d"]
		}
		if ok && b.GFLOPS > 0 {
			blas = fmt.Sprintf("%.2f×", r.GFLOPS/b.GFLOPS)
		}
	} else if s := ref["read_bandwidth"].GBPS; s > 0 && strings.HasPrefix(r.Name, "llama_decode") {
		limit = fmt.Sprintf("%.2f× read", r.GBPS/s)
	} else if s := ref["stream_triad"].GBPS; s > 0 {
		ratio := func(k string) float64 {
			if p, ok := pairs[k]; ok {
				return p
			}
			return r.GBPS / ref[k].GBPS
		}
		limit = fmt.Sprintf("%.2f× triad", ratio("stream_triad"))
		if rd := ref["stream_read"].GBPS; rd > 0 && strings.HasPrefix(r.Name, "sum_") {
			limit += fmt.Sprintf(", %.2f× read", ratio("stream_read"))
		}
	}
	if b, ok := ref["openblas_"+r.Name]; ok && b.GFLOPS > 0 { // the same matmuls in OpenBLAS
		blas = fmt.Sprintf("%.2f×", r.GFLOPS/b.GFLOPS)
	}
	return append(row, limit, blas)
}

// refProgram finds the reference program: $TGC_BENCH_REF or bench/ref/ref.
func refProgram() (string, error) {
	path := os.Getenv("TGC_BENCH_REF")
	if path == "" {
		path = "bench/ref/ref"
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("reference program %s not found: build it with `make bench/ref/ref` (needs Debian's libopenblas-dev), or set TGC_BENCH_REF", path)
	}
	return path, nil
}

// openblasCore is the OpenBLAS kernel family the reference runs with
// (OPENBLAS_CORETYPE, replacing any in the environment): the one of the
// vector width tgc's kernels get, so that each is compared with OpenBLAS at
// the same width. OpenBLAS 0.3.21 takes a Zen 5 for a Haswell (AVX2: ~190
// GFLOP/s at 2048 on two cores, against ~380 with its AVX-512 kernels),
// and some machines set OPENBLAS_CORETYPE=Haswell for everything: either
// would flatter every 16-lane ratio. "" keeps OpenBLAS's own choice (a
// host with neither vector set).
func openblasCore(width int, h backend.HostCPU) string {
	has := map[string]bool{}
	for _, f := range h.Flags {
		has[f] = true
	}
	switch {
	case width >= 16 && has["avx512f"] && has["avx512bw"] && has["avx512vl"] && has["avx512dq"] && has["avx512cd"]:
		return "SkylakeX"
	case width == 8 && has["avx2"] && has["fma"]:
		return "Haswell"
	}
	return ""
}

// runReference runs the named parts of the reference program on two
// threads and parses its JSON lines.
func runReference(parts ...string) (map[string]bench.Result, error) {
	path, err := refProgram()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, append([]string{"2"}, parts...)...)
	if core := openblasCore(backend.HostVecWidth(), backend.Host()); core != "" {
		cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE="+core)
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("running %s: %w", path, err)
	}
	res := map[string]bench.Result{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var r bench.Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s printed %q: %w", path, sc.Text(), err)
		}
		r.Device = "ref"
		res[r.Name] = r
	}
	return res, nil
}

// lineProc is a helper process spoken to a line at a time: requests on
// its standard input, answers on its standard output, its standard error
// kept for the error messages.
type lineProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr strings.Builder
	closed bool
}

// startLine starts cmd; what names it in errors (and where to get it).
func startLine(cmd *exec.Cmd, what string) (*lineProc, error) {
	p := &lineProc{cmd: cmd}
	cmd.Stderr = &p.stderr
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewScanner(out)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("running %s: %w", what, err)
	}
	return p, nil
}

// send writes one request line.
func (p *lineProc) send(line string) error {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		return p.failed("", err)
	}
	return nil
}

// line reads one line of the answer.
func (p *lineProc) line() (string, error) {
	if !p.out.Scan() {
		err := p.out.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return "", p.failed("", err)
	}
	return p.out.Text(), nil
}

// failed is the error of a failed exchange (err) or an answer that makes
// no sense (line), with what the process wrote to its standard error: the
// process is ended first, so that all of it is there.
func (p *lineProc) failed(line string, err error) error {
	if !p.closed {
		p.closed = true
		p.in.Close()
		p.cmd.Wait()
	}
	name := strings.Join(p.cmd.Args, " ")
	if err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, strings.TrimSpace(p.stderr.String()))
	}
	return fmt.Errorf("%s printed %q", name, line)
}

// close ends the process (its input ends) and waits for it; once.
func (p *lineProc) close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		return p.failed("", err)
	}
	return nil
}

// refServer is bench/ref/ref serve: the memory measurements, one run
// each per request, its arrays made once.
type refServer struct {
	*lineProc
	runs []map[string]bench.Result // each request's measurements by name
}

func startRefServer() (*refServer, error) {
	path, err := refProgram()
	if err != nil {
		return nil, err
	}
	p, err := startLine(exec.Command(path, "2", "serve"), path)
	if err != nil {
		return nil, err
	}
	return &refServer{lineProc: p}, nil
}

// measure runs the parts once and keeps their results.
func (s *refServer) measure(parts []string) error {
	if err := s.send(strings.Join(parts, " ")); err != nil {
		return err
	}
	got := map[string]bench.Result{}
	for {
		line, err := s.line()
		if err != nil {
			return err
		}
		var r bench.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Name == "unknown" {
			return s.failed(line, nil)
		}
		if r.Name == "end" {
			break
		}
		r.Device = "ref"
		got[r.Name] = r
	}
	s.runs = append(s.runs, got)
	return nil
}

// paired is each reference's median over the requests, and the median
// over tgc's runs of each run's ratio to the reference measured right
// before it (rates: the workload's bytes over the run's clock time).
func (s *refServer) paired(w bench.Workload, tgc bench.Result) (map[string]bench.Result, map[string]float64) {
	ref, ratios := map[string]bench.Result{}, map[string]float64{}
	byName := map[string][]bench.Result{}
	for _, run := range s.runs {
		for k, v := range run {
			byName[k] = append(byName[k], v)
		}
	}
	for k, rs := range byName {
		var secs, rs2 []float64
		for i, v := range rs {
			secs = append(secs, v.Seconds)
			if i < len(tgc.Runs) && tgc.Runs[i] > 0 && v.GBPS > 0 {
				rs2 = append(rs2, w.Bytes/tgc.Runs[i]/1e9/v.GBPS)
			}
		}
		m := median(secs)
		for _, v := range rs { // the run of median time, as measured
			if v.Seconds == m {
				ref[k] = v
				break
			}
		}
		if len(rs2) > 0 {
			ratios[k] = median(rs2)
		}
	}
	return ref, ratios
}

// onnxWorkload finds the ONNX workload of a name.
func onnxWorkload(name string) (bench.ONNXWorkload, bool) {
	for _, o := range bench.ONNXWorkloads() {
		if o.Name == name {
			return o, true
		}
	}
	return bench.ONNXWorkload{}, false
}

// ortServer is onnxruntime (bench/onnx/ort.js serve) with one session on
// a workload's model and inputs, run once per request.
type ortServer struct {
	*lineProc
	runs []bench.Result // seconds, cpu_seconds of each run
}

// startORT starts onnxruntime on the workload's model and waits for its
// session (made and run once).
func startORT(o bench.ONNXWorkload, threads int) (*ortServer, error) {
	model, err := filepath.Abs(o.Path())
	if err != nil {
		return nil, err
	}
	args := []string{filepath.Join("bench", "onnx", "ort.js"), "serve", model, fmt.Sprint(threads)}
	names := make([]string, 0, len(o.Inputs))
	for n := range o.Inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		dims := make([]string, len(o.Inputs[n]))
		for i, d := range o.Inputs[n] {
			dims[i] = fmt.Sprint(d)
		}
		args = append(args, n+"="+strings.Join(dims, ","))
	}
	p, err := startLine(exec.Command("node", args...), "node (Debian: nodejs)")
	if err != nil {
		return nil, err
	}
	s := &ortServer{lineProc: p}
	line, err := s.line()
	if err != nil {
		return nil, err
	}
	if line != "ready" {
		return nil, s.failed(line, nil)
	}
	return s, nil
}

// run runs the session once.
func (s *ortServer) run() error {
	if err := s.send("run"); err != nil {
		return err
	}
	line, err := s.line()
	if err != nil {
		return err
	}
	var r bench.Result
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.Seconds <= 0 {
		return s.failed(line, nil)
	}
	s.runs = append(s.runs, r)
	s.waitIdle()
	return nil
}

// waitIdle returns once onnxruntime's threads have stopped running: after
// a run its pool's workers keep spinning for work (about 30 ms of one core
// on the Zen 4 host), and tgc's run right after would share the cores
// with them (ResNet-50 b1: 80–95 ms instead of 55). It polls the threads'
// CPU time (Linux's /proc/PID/task/*/schedstat) until it stands still for
// idleFor, a second at most; elsewhere it sleeps idleFor's bound.
func (s *ortServer) waitIdle() {
	const idleFor, poll, limit = 10 * time.Millisecond, time.Millisecond, time.Second
	last, ok := threadsCPU(s.cmd.Process.Pid)
	if !ok {
		time.Sleep(200 * time.Millisecond) // onnxruntime's spin lasts tens of ms
		return
	}
	still := time.Now()
	for start := time.Now(); time.Since(start) < limit; {
		time.Sleep(poll)
		now, ok := threadsCPU(s.cmd.Process.Pid)
		if !ok {
			return
		}
		if now != last {
			last, still = now, time.Now()
		} else if time.Since(still) >= idleFor {
			return
		}
	}
}

// threadsCPU is the CPU time of a process's threads so far, in
// nanoseconds (the first field of each thread's schedstat).
func threadsCPU(pid int) (int64, bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += ns
	}
	return sum, true
}

// result is onnxruntime's median run as ort_NAME, and tgc's ratio to it:
// the median of the ratios of tgc's runs to the onnxruntime runs right
// before them (clock times).
func (s *ortServer) result(w bench.Workload, tgc bench.Result) (bench.Result, float64) {
	var secs, ratios []float64
	cpu := 0.0
	for i, r := range s.runs {
		secs = append(secs, r.Seconds)
		cpu += r.CPUSeconds
		if i < len(tgc.Runs) {
			ratios = append(ratios, tgc.Runs[i]/r.Seconds)
		}
	}
	r := bench.Result{Name: "ort_" + w.Name, Device: "ort", Seconds: median(secs), CPUSeconds: cpu / float64(max(len(s.runs), 1))}
	if r.Seconds > 0 {
		r.GFLOPS = w.FLOPs / r.Seconds / 1e9
	}
	return r, median(ratios)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
