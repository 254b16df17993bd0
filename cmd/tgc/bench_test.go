package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/bench"
)

// A stand-in for bench/ref/ref: fixed reference figures.
const fakeRef = `#!/bin/sh
echo "$@" >> "$(dirname "$0")/args"
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
	if len(lines) != 5 { // the host, the workload and the three reference figures
		t.Fatalf("want 5 JSON lines, got:\n%s", out)
	}
	var host, first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &host); err != nil || host["name"] != "host" || host["host"] != backend.Host().String() {
		t.Errorf("host line %q (%v)", lines[0], err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &first); err != nil {
		t.Fatalf("second line %q: %v", lines[1], err)
	}
	if first["name"] != "sum_16M" || first["device"] != "CPU" || first["seconds"].(float64) <= 0 || first["gbps"].(float64) <= 0 || first["cpu_seconds"].(float64) <= 0 {
		t.Errorf("bad result line %v", first)
	}
	for _, l := range lines[2:] {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil || r["device"] != "ref" {
			t.Errorf("reference line %q (%v)", l, err)
		}
	}
	if args, err := os.ReadFile(filepath.Join(dir, "args")); err != nil || strings.TrimSpace(string(args)) != "2 triad" {
		t.Errorf("reference run with %q (%v), want the triad part right before sum_16M", args, err)
	}
	if got := refParts("matmul_1024"); strings.Join(got, " ") != "sgemm1024 peak" {
		t.Errorf("matmul_1024's references: %v", got)
	}
	if got := refParts("softmax_4096"); strings.Join(got, " ") != "triad" {
		t.Errorf("softmax's references: %v", got)
	}

	row := benchRow(bench.Result{Name: "matmul_512", GFLOPS: 50}, map[string]bench.Result{
		"fma_peak": {GFLOPS: 400}, "openblas_sgemm_512": {GFLOPS: 200}})
	if row[5] != "0.12× peak" || row[6] != "0.25×" {
		t.Errorf("matmul ratios %v", row)
	}
	row = benchRow(bench.Result{Name: "sum_16M", GBPS: 20}, map[string]bench.Result{"stream_triad": {GBPS: 40}})
	if row[5] != "0.50× triad" {
		t.Errorf("bandwidth ratio %v", row)
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
