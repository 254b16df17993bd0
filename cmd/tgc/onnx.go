package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"tgc/pkg/fileaccess"
	"tgc/pkg/onnx"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// ONNX models run, emit and inspect like scripts: `tgc run model.onnx
// --input x.npy`, `tgc emit model.onnx --input-shape x=1,3,224,224`,
// `tgc info model.onnx`.

func isONNX(file string) bool { return strings.EqualFold(filepath.Ext(file), ".onnx") }

// addModelFlags adds the flags that bind a model's inputs.
func addModelFlags(c *cobra.Command, emit bool) {
	f := c.Flags()
	if emit {
		f.StringArray("input-shape", nil, "ONNX: an input's shape, NAME=D1,D2,... (repeatable; inputs with a static declared shape need none)")
	} else {
		f.StringArray("input", nil, "ONNX: an input file, [NAME=]FILE.npy|.pb|.safetensors (repeatable; unnamed files bind in the graph's input order)")
	}
	f.StringArray("dim", nil, "ONNX: bind a symbolic dimension, NAME=SIZE (repeatable)")
}

// checkModelFlags refuses the ONNX flags for a script.
func checkModelFlags(c *cobra.Command, file string) error {
	if isONNX(file) {
		return nil
	}
	for _, name := range []string{"input", "input-shape", "dim"} {
		if f := c.Flags().Lookup(name); f != nil && f.Changed {
			return &usageError{err: fmt.Errorf("--%s is for ONNX models; %s is a script", name, file), cmd: c}
		}
	}
	return nil
}

// checkModel reports a missing model file clearly.
func checkModel(file string) error {
	st, err := os.Stat(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("model %s does not exist", file)
	case err != nil:
		return err
	case st.IsDir():
		return fmt.Errorf("%s is a directory, not a model file", file)
	}
	return nil
}

func runModel(c *cobra.Command, args []string) error {
	file := args[0]
	if len(args) > 1 {
		return &usageError{err: fmt.Errorf("unexpected arguments after %s: %s (inputs are given with --input)", file, strings.Join(args[1:], " ")), cmd: c}
	}
	if err := checkModel(file); err != nil {
		return err
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	specs, _ := c.Flags().GetStringArray("input")
	dimSpecs, _ := c.Flags().GetStringArray("dim")
	out, _ := c.Flags().GetString("out")
	dims, err := onnx.ParseDims(dimSpecs)
	if err != nil {
		return &usageError{err: err, cmd: c}
	}
	m, err := onnx.Load(file)
	if err != nil {
		return err
	}
	inputs, err := m.ReadInputs(specs)
	if err != nil {
		return err
	}
	device := cfg.RunDevice()
	ctx, eng, err := realize.NewContext(device, engineOptions(cfg, stderr, useColor(stderr, cfg.NoColor)))
	if err != nil {
		return err
	}
	before := compileStats(eng)
	outs, err := m.Run(ctx, inputs, onnx.RunOptions{Dims: dims})
	if err != nil {
		return err
	}
	arrs, err := onnx.RealizeOutputs(outs)
	if err != nil {
		return err
	}
	names := make([]string, len(m.Outputs))
	for i, o := range m.Outputs {
		names[i] = o.Name
		fmt.Fprintf(stdout, "%s: %s %s %s\n", o.Name, arrs[i].Type.Name(), tensor.FormatShape(arrs[i].Shape), leading(arrs[i], 8))
	}
	if out != "" {
		if err := onnx.WriteOutputs(out, names, arrs); err != nil {
			return err
		}
	}
	if !cfg.Quiet {
		after := compileStats(eng)
		summary(stderr, eng.Dev.Name(), eng.Stats, after.builds-before.builds, after.hits-before.hits)
	}
	return nil
}

// leading formats the first k values: [0.1, 2, ...].
func leading(a *onnx.Array, k int) string {
	n := a.Numel()
	var parts []string
	for i := range min(n, k) {
		if a.Type.IsFloat() {
			parts = append(parts, fmt.Sprintf("%.6g", a.Float(i)))
		} else {
			parts = append(parts, fmt.Sprint(a.Int(i)))
		}
	}
	if n > k {
		parts = append(parts, "...")
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func emitModel(c *cobra.Command, args []string) error {
	file := args[0]
	if len(args) > 1 {
		return &usageError{err: fmt.Errorf("unexpected arguments after %s: %s", file, strings.Join(args[1:], " ")), cmd: c}
	}
	if err := checkModel(file); err != nil {
		return err
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	stderr := c.ErrOrStderr()
	shapeSpecs, _ := c.Flags().GetStringArray("input-shape")
	dimSpecs, _ := c.Flags().GetStringArray("dim")
	shapes, err := onnx.ParseShapes(shapeSpecs)
	if err != nil {
		return &usageError{err: err, cmd: c}
	}
	dims, err := onnx.ParseDims(dimSpecs)
	if err != nil {
		return &usageError{err: err, cmd: c}
	}
	device := cfg.Device
	if device == "" {
		device = "CPU"
	}
	out, _ := c.Flags().GetString("out")
	if out == "" {
		out = filepath.Join("build", strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
	}
	m, err := onnx.Load(file)
	if err != nil {
		return err
	}
	tr, err := realize.NewTracer(device, engineOptions(cfg, stderr, useColor(stderr, cfg.NoColor)))
	if err != nil {
		return err
	}
	ctx := tensor.NewContext(tr)
	inputs, err := m.Placeholders(ctx, shapes, dims)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	outs, err := m.Run(ctx, inputs, onnx.RunOptions{Dims: dims})
	if err != nil {
		return err
	}
	var nonEmpty []*tensor.Tensor
	for _, t := range outs {
		if t.Numel() > 0 {
			nonEmpty = append(nonEmpty, t)
		}
	}
	if err := tensor.RealizeAll(nonEmpty...); err != nil {
		return err
	}
	for _, t := range nonEmpty {
		if _, err := tr.Read(t.Node()); err != nil { // marks them outputs of the plan
			return err
		}
	}
	if err := tr.WritePlan(out); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	if !cfg.Quiet {
		reportPlan(stderr, tr, out, cfg.Beam)
	}
	return nil
}

// reportPlan prints what tgc emit wrote.
func reportPlan(w io.Writer, tr *realize.Tracer, out string, beam int) {
	plan := tr.Plan()
	files := map[string]bool{}
	for _, k := range plan.Kernels {
		files[k.Source] = true
	}
	what := plural(len(files), "kernel")
	if len(plan.Kernels) != len(files) {
		what += fmt.Sprintf(" (%s)", plural(len(plan.Kernels), "launch"))
	}
	what += " and plan.json"
	if plan.Weights != "" {
		what = strings.Replace(what, " and plan.json", ", plan.json and "+plan.Weights, 1)
	}
	fmt.Fprintf(w, "wrote %s to %s\n", what, out)
	if tr.BeamMisses > 0 {
		fmt.Fprintf(w, "tgc: BEAM=%d: no stored search result for %s, the heuristic's choice is emitted (emit runs nothing; tgc run --beam %d searches and stores results)\n",
			beam, plural(tr.BeamMisses, "kernel"), beam)
	}
}

func newInfoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "info MODEL",
		Short: "Describe an ONNX model or a LLaMA checkpoint (GGUF, llama2.c): its inputs or architecture, weights, what tgc cannot run",
		Long: `Info describes a model file without running it.

An ONNX model (.onnx): its opsets, inputs, outputs, weights and operators, and
every node tgc cannot run. A GGUF file or a llama2.c checkpoint (.bin): its
format, the architecture's hyperparameters, its weights by tensor type, its
tokenizer, the KV cache tgc generate allocates, and whether tgc generate runs
it (if not, why).`,
		Example: `  tgc info resnet50.onnx
  tgc info model.onnx | grep unsupported
  tgc info Llama-3.2-1B-Instruct-Q4_K_M.gguf
  tgc info stories15M.bin`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{err: fmt.Errorf("expected one model file (usage: %s)", c.UseLine()), cmd: c}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkModel(args[0]); err != nil {
				return err
			}
			f, err := fileaccess.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if checkpointKind(f, args[0]) != "" {
				return printLlamaInfo(c.OutOrStdout(), f, args[0])
			}
			m, err := onnx.Inspect(args[0])
			if err != nil {
				return err
			}
			printInfo(c.OutOrStdout(), m)
			return nil
		},
	}
}

func printInfo(w io.Writer, m *onnx.Model) {
	fmt.Fprintf(w, "model:     %s (IR version %d", m.Name, m.IRVersion)
	if m.Producer != "" {
		fmt.Fprintf(w, ", produced by %s", m.Producer)
	}
	fmt.Fprintln(w, ")")
	var domains []string
	for d, v := range m.Opsets {
		if d == "" {
			d = "ai.onnx"
		}
		domains = append(domains, fmt.Sprintf("%s %d", d, v))
	}
	sort.Strings(domains)
	fmt.Fprintf(w, "opsets:    %s\n", strings.Join(domains, ", "))
	fmt.Fprintln(w, "inputs:")
	for _, vi := range m.Inputs {
		fmt.Fprintf(w, "  %s\n", vi.Describe())
	}
	if len(m.Optional) > 0 {
		fmt.Fprintf(w, "inputs with a default (an initializer): %d\n", len(m.Optional))
	}
	fmt.Fprintln(w, "outputs:")
	for _, vi := range m.Outputs {
		fmt.Fprintf(w, "  %s\n", vi.Describe())
	}
	bytes := 0
	for _, a := range m.Init {
		bytes += len(a.Data)
	}
	fmt.Fprintf(w, "weights:   %d initializers, %s\n", len(m.Init), fmtBytes(bytes))
	counts := map[string]int{}
	for _, n := range m.Nodes {
		op := n.GetOpType()
		if d := n.GetDomain(); d != "" && d != "ai.onnx" {
			op = d + "." + op
		}
		counts[op]++
	}
	var ops []string
	for op := range counts {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool {
		if counts[ops[i]] != counts[ops[j]] {
			return counts[ops[i]] > counts[ops[j]]
		}
		return ops[i] < ops[j]
	})
	var parts []string
	for _, op := range ops {
		parts = append(parts, fmt.Sprintf("%s %d", op, counts[op]))
	}
	fmt.Fprintf(w, "operators: %d nodes: %s\n", len(m.Nodes), strings.Join(parts, ", "))
	if len(m.Refusals) == 0 {
		fmt.Fprintln(w, "unsupported: none (tgc runs every node)")
		return
	}
	fmt.Fprintf(w, "unsupported: %d\n", len(m.Refusals))
	for _, r := range m.Refusals {
		fmt.Fprintf(w, "  %s [%s]\n", r.Reason, r.Category)
	}
}

func fmtBytes(n int) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
