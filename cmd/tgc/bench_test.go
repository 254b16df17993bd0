package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/bench"
)

// A stand-in for bench/ref/ref: fixed reference figures; serve answers
// each request with the triad and the read bandwidth.
const fakeRef = `#!/bin/sh
echo "$@" >> "$(dirname "$0")/args"
if [ "$2" = serve ]; then
  while read parts; do
    echo "$parts" >> "$(dirname "$0")/requests"
    echo '{"name": "stream_triad", "seconds": 0.01, "gflops": 5, "gbps": 40}'
    echo '{"name": "stream_read", "seconds": 0.01, "gflops": 0, "gbps": 25}'
    echo '{"name": "end"}'
  done
  exit 0
fi
echo '{"name": "openblas_sgemm_512", "seconds": 0.001, "gflops": 200, "gbps": 1}'
echo '{"name": "stream_triad", "seconds": 0.01, "gflops": 5, "gbps": 40}'
echo '{"name": "fma_peak", "seconds": 0.1, "gflops": 400, "gbps": 0}'
`

func TestBenchJSONAndRatios(t *testing.T) {
	dir := setup(t)
	if _, err := backend.Open("CPU"); err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	ref := filepath.Join(dir, "ref.sh")
	if err := os.WriteFile(ref, []byte(fakeRef), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TGC_BENCH_REF", ref)
	out, errs, status := tgc(t, "bench", "sum_16M", "--json", "--ref", "--iters", "2", "--device", "CPU")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 { // the host, the workload and the two reference figures
		t.Fatalf("want 4 JSON lines, got:\n%s", out)
	}
	var host, first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &host); err != nil || host["name"] != "host" || host["host"] != backend.Host().String() || host["device"] != nil {
		t.Errorf("host line %q (%v), want the host and no device (the host is the CPU device)", lines[0], err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &first); err != nil {
		t.Fatalf("second line %q: %v", lines[1], err)
	}
	if first["name"] != "sum_16M" || first["device"] != "CPU" || first["seconds"].(float64) <= 0 || first["gbps"].(float64) <= 0 || first["cpu_seconds"].(float64) <= 0 {
		t.Errorf("bad result line %v", first)
	}
	// the paired ratios: each run's rate over the fake references (40 and
	// 25 GB/s), within its fastest and slowest run's
	ratios, _ := first["ratios"].(map[string]any)
	triad, _ := ratios["stream_triad"].(float64)
	read, _ := ratios["stream_read"].(float64)
	if triad <= 0 || math.Abs(read/triad-40.0/25) > 1e-9 {
		t.Errorf("ratios %v, want the triad's and the read's, in the references' proportion", first["ratios"])
	}
	for _, l := range lines[2:] {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil || r["device"] != "ref" {
			t.Errorf("reference line %q (%v)", l, err)
		}
	}
	// sum_16M is memory-bound: the reference measured before each run.
	if args, err := os.ReadFile(filepath.Join(dir, "args")); err != nil || strings.TrimSpace(string(args)) != "2 serve" {
		t.Errorf("reference run with %q (%v), want one server", args, err)
	}
	if reqs, err := os.ReadFile(filepath.Join(dir, "requests")); err != nil || string(reqs) != "triad read\ntriad read\n" {
		t.Errorf("requests %q (%v), want the triad and read parts before each of the 2 runs", reqs, err)
	}
	os.Remove(filepath.Join(dir, "args"))
	if _, errs, status := tgc(t, "bench", "matmul_512", "--json", "--ref", "--iters", "1", "--device", "CPU"); status != 0 {
		t.Fatalf("status %d: %s", status, errs)
	}
	if args, err := os.ReadFile(filepath.Join(dir, "args")); err != nil || strings.TrimSpace(string(args)) != "2 sgemm512 peak" {
		t.Errorf("reference run with %q (%v), want sgemm 512 and the peak right before matmul_512", args, err)
	}
	if got := refParts("matmul_1024"); strings.Join(got, " ") != "sgemm1024 peak" {
		t.Errorf("matmul_1024's references: %v", got)
	}
	if got := refParts("softmax_4096"); strings.Join(got, " ") != "triad" {
		t.Errorf("softmax's references: %v", got)
	}

	row := benchRow(bench.Result{Name: "matmul_512", GFLOPS: 50}, map[string]bench.Result{
		"fma_peak": {GFLOPS: 400}, "openblas_sgemm_512": {GFLOPS: 200}}, nil)
	if row[5] != "0.12× peak" || row[6] != "0.25×" {
		t.Errorf("matmul ratios %v", row)
	}
	row = benchRow(bench.Result{Name: "sum_16M", GBPS: 20}, map[string]bench.Result{"stream_triad": {GBPS: 40}}, nil)
	if row[5] != "0.50× triad" {
		t.Errorf("bandwidth ratio %v", row)
	}
	row = benchRow(bench.Result{Name: "sum_16M", GBPS: 20}, map[string]bench.Result{"stream_triad": {GBPS: 40}, "stream_read": {GBPS: 25}}, nil)
	if row[5] != "0.50× triad, 0.80× read" {
		t.Errorf("a sum's ratios %v", row)
	}
	row = benchRow(bench.Result{Name: "sum_16M", GBPS: 20}, map[string]bench.Result{"stream_triad": {GBPS: 40}, "stream_read": {GBPS: 25}},
		map[string]float64{"stream_triad": 0.7, "stream_read": 0.9})
	if row[5] != "0.70× triad, 0.90× read" {
		t.Errorf("a sum's paired ratios %v, want the pairs' medians", row)
	}
}

// TestRefServerError: a reference server that answers nonsense stops the
// benchmark with its command, its answer and what it wrote to stderr.
func TestRefServerError(t *testing.T) {
	dir := setup(t)
	if _, err := backend.Open("CPU"); err != nil {
		t.Skipf("CPU unavailable: %v", err)
	}
	ref := filepath.Join(dir, "ref.sh")
	script := "#!/bin/sh\nread parts\necho 'no triad here' >&2\necho 'oops'\n"
	if err := os.WriteFile(ref, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TGC_BENCH_REF", ref)
	_, errs, status := tgc(t, "bench", "sum_16M", "--ref", "--iters", "1", "--device", "CPU")
	if status == 0 || !strings.Contains(errs, ref+" 2 serve printed \"oops\"") {
		t.Errorf("status %d, stderr %q: want the server's command and its answer", status, errs)
	}
	s := &refServer{}
	p, err := startLine(exec.Command(ref, "2", "serve"), ref)
	if err != nil {
		t.Fatal(err)
	}
	s.lineProc = p
	if err := s.measure([]string{"triad"}); err == nil || !strings.Contains(err.Error(), "oops") {
		t.Errorf("measure: %v, want the answer named", err)
	}
	p, err = startLine(exec.Command("/bin/sh", "-c", "echo 'no triad here' >&2"), "sh")
	if err != nil {
		t.Fatal(err)
	}
	s.lineProc = p
	if err := s.measure([]string{"triad"}); err == nil || !strings.Contains(err.Error(), "no triad here") {
		t.Errorf("measure: %v, want the server's stderr", err)
	}
}

// TestRefPairs: each run is compared with the reference measured right
// before it, and the ratio is the median of those. The bus here halves
// and recovers with the runs' times: paired, every run reads at 0.8× the
// triad; the median run against the best reference would say 0.4×.
func TestRefPairs(t *testing.T) {
	w := bench.Workload{Name: "softmax_4096", Bytes: 8e9}
	tgc := bench.Result{Runs: []float64{0.1, 0.2, 0.1, 0.2, 0.2}} // 80 and 40 GB/s
	s := &refServer{}
	for _, gbps := range []float64{100, 50, 100, 50, 50} {
		s.runs = append(s.runs, map[string]bench.Result{"stream_triad": {Name: "stream_triad", Seconds: 1 / gbps, GBPS: gbps}})
	}
	ref, pairs := s.paired(w, tgc)
	if math.Abs(pairs["stream_triad"]-0.8) > 1e-9 {
		t.Errorf("paired ratio %v, want 0.8", pairs["stream_triad"])
	}
	if ref["stream_triad"].GBPS != 50 {
		t.Errorf("reference %v, want the median request's (50 GB/s)", ref["stream_triad"])
	}
	if _, ok := pairs["stream_read"]; ok {
		t.Errorf("a ratio for a reference never measured: %v", pairs)
	}
}

// TestBenchNamesDevice: on a device other than the CPU the table and the
// JSON host line name it as tgc devices does (a GPU's figures mean
// nothing without its model).
func TestBenchNamesDevice(t *testing.T) {
	setup(t)
	detail := backend.Describe("CL")
	if detail == "" {
		t.Skip("CL unavailable")
	}
	out, errs, status := tgc(t, "bench", "elementwise_16M", "--iters", "1", "--device", "CL")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs)
	}
	if !strings.Contains(out, "\ndevice: CL, "+detail+"\n") {
		t.Errorf("no device line naming %q in:\n%s", detail, out)
	}
	out, errs, status = tgc(t, "bench", "elementwise_16M", "--iters", "1", "--device", "CL", "--json")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs)
	}
	var host map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &host); err != nil || host["device"] != "CL, "+detail {
		t.Errorf("host line %v (%v), want device %q", host, err, "CL, "+detail)
	}
}

func TestBenchRefMissing(t *testing.T) {
	setup(t)
	t.Setenv("TGC_BENCH_REF", filepath.Join(t.TempDir(), "missing"))
	_, errs, status := tgc(t, "bench", "sum_16M", "--ref")
	if status != 1 || !strings.Contains(errs, "make bench/ref/ref") {
		t.Errorf("status %d, stderr %q", status, errs)
	}
	_, errs, status = tgc(t, "bench", "no_such_workload")
	if status != 1 || !strings.Contains(errs, `unknown workload "no_such_workload"`) {
		t.Errorf("status %d, stderr %q", status, errs)
	}
}

// A stand-in for bench/onnx/ort.js serve: its nth run takes n ms.
const fakeORT = `const readline = require("readline");
if (process.argv[2] !== "serve") process.exit(2);
console.log("ready");
let n = 0;
readline.createInterface({ input: process.stdin }).on("line", (l) => {
  if (l !== "run") process.exit(0);
  n++;
  console.log(JSON.stringify({ seconds: n / 1000, cpu_seconds: n / 2000 }));
});
`

// TestORTServerPairsRuns: onnxruntime's runs come one per request, and
// tgc/ort is the median of each tgc run over the onnxruntime run right
// before it.
func TestORTServerPairsRuns(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bench", "onnx"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bench", "onnx", "ort.js"), []byte(fakeORT), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	o, _ := onnxWorkload("bert_base")
	s, err := startORT(o, 2)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.run(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	// onnxruntime 1, 2, 3 ms; tgc 3, 2, 9 ms: ratios 3, 1, 3.
	w := bench.Workload{Name: "bert_base", FLOPs: 1e9}
	r, ratio := s.result(w, bench.Result{Runs: []float64{0.003, 0.002, 0.009}})
	if r.Name != "ort_bert_base" || r.Seconds != 0.002 || math.Abs(r.CPUSeconds-0.001) > 1e-12 || math.Abs(ratio-3) > 1e-9 {
		t.Errorf("got %+v, ratio %v; want the median 2 ms, 1 ms of CPU time, ratio 3", r, ratio)
	}
}

// TestORTServerError: ort.js failing to start names the command and what
// it printed on stderr.
func TestORTServerError(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bench", "onnx"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bench", "onnx", "ort.js"), []byte(`console.error("no model here"); process.exit(1);`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	o, _ := onnxWorkload("resnet50_b1")
	if _, err := startORT(o, 2); err == nil || !strings.Contains(err.Error(), "no model here") || !strings.Contains(err.Error(), "ort.js serve") {
		t.Errorf("got %v, want the command and its stderr", err)
	}
}

// The reference's OpenBLAS kernels follow tgc's vector width.
func TestOpenBLASCore(t *testing.T) {
	zen5 := backend.HostCPU{Flags: []string{"avx", "avx2", "fma", "avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl"}}
	avx2 := backend.HostCPU{Flags: []string{"avx", "avx2", "fma"}}
	for _, tc := range []struct {
		width int
		h     backend.HostCPU
		want  string
	}{{16, zen5, "SkylakeX"}, {8, zen5, "Haswell"}, {8, avx2, "Haswell"}, {16, avx2, ""}, {4, backend.HostCPU{}, ""}} {
		if got := openblasCore(tc.width, tc.h); got != tc.want {
			t.Errorf("width %d flags %v: %q, want %q", tc.width, tc.h.Flags, got, tc.want)
		}
	}
}
