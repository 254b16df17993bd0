package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

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
STREAM triad, FMA peak; build it with make bench/ref/ref) in the same run and
prints tgc's ratio to each. --beam N searches each kernel's optimizations first
(stored; later runs reuse them).`,
		Example: `  tgc bench
  tgc bench matmul_1024 --ref
  tgc bench --json > bench.jsonl`,
		RunE: runBench,
	}
	addDeviceFlag(c, "device to benchmark (default: the best available)")
	f := c.Flags()
	f.Bool("json", false, "one JSON object per workload per line")
	f.Bool("ref", false, "also run the reference program (OpenBLAS, STREAM, FMA peak) and print ratios")
	f.Int("iters", 5, "timed runs per workload (the median is reported)")
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
	iters, _ := c.Flags().GetInt("iters")
	workloads, err := bench.Find(args)
	if err != nil {
		return err
	}
	var ref map[string]bench.Result
	if withRef {
		if ref, err = runReference(); err != nil {
			return err
		}
	}
	eng, err := realize.Open(cfg.RunDevice(), engineOptions(cfg, stderr, false))
	if err != nil {
		return err
	}
	var readBW float64 // bytes/s, for the workloads bound by reading memory
	for _, w := range workloads {
		if strings.HasPrefix(w.Name, "llama_decode") && readBW == 0 {
			readBW = bench.ReadBandwidth()
			if ref == nil {
				ref = map[string]bench.Result{}
			}
			ref["read_bandwidth"] = bench.Result{Name: "read_bandwidth", Device: "host", GBPS: readBW / 1e9}
		}
	}
	var rows [][]string
	enc := json.NewEncoder(stdout)
	for _, w := range workloads {
		if !asJSON {
			fmt.Fprintf(stderr, "running %s...\n", w.Name)
		}
		r, err := bench.Run(eng, w, iters)
		if err != nil {
			return err
		}
		if asJSON {
			if err := enc.Encode(r); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, benchRow(r, ref))
	}
	if asJSON {
		for _, k := range report.SortedKeys(ref) {
			if err := enc.Encode(ref[k]); err != nil {
				return err
			}
		}
		return nil
	}
	headers := []string{"workload", "kernels", "time", "GFLOP/s", "GB/s"}
	if ref != nil {
		headers = append(headers, "vs limit", "vs OpenBLAS")
	}
	report.Table(stdout, headers, rows)
	if r, ok := ref["fma_peak"]; ok {
		fmt.Fprintf(stdout, "limits measured now: FMA peak %.0f GFLOP/s, STREAM triad %.1f GB/s, read %.1f GB/s\n", r.GFLOPS, ref["stream_triad"].GBPS, ref["stream_read"].GBPS)
	}
	if r, ok := ref["read_bandwidth"]; ok {
		fmt.Fprintf(stdout, "read bandwidth measured now (tgc, Go): %.1f GB/s (llama_decode: weight bytes per token / time, against it)\n", r.GBPS)
	}
	return nil
}

// benchRow formats one result; compute-bound workloads (matmul, conv) are
// compared with the FMA peak, memory-bound ones with STREAM triad.
func benchRow(r bench.Result, ref map[string]bench.Result) []string {
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
		limit = fmt.Sprintf("%.2f× triad", r.GBPS/s)
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

// runReference runs the reference program and parses its JSON lines.
func runReference() (map[string]bench.Result, error) {
	path, err := refProgram()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(path).Output()
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
