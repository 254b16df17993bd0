package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tgc/pkg/backend"
	"tgc/pkg/realize"
	"tgc/pkg/script"
)

func newRunCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "run FILE.tg|FILE.py|MODEL.onnx [-- ARGS...]",
		Short: "Run a script or an ONNX model on a device",
		Long: `Run executes a script (.tg, or tinygrad Python saved as .py) or an ONNX
model. Afterwards it prints one summary line to stderr (kernels run, device
time, compile time) unless --quiet. Arguments after
the file are visible to the script as the list argv.

An .onnx model runs on the inputs given with --input (.npy, .pb TensorProto
or .safetensors files; NAME=FILE or, unnamed, in the graph's input order)
and prints each output's name, dtype, shape and leading values; --out
writes them (.safetensors, or .npy for one output). Without inputs the
error lists every input the model needs.`,
		Example: `  tgc run models/matmul.tg
  DEBUG=2 tgc run models/matmul.tg --device GO
  tgc run train.tg --seed 42 -- --epochs 3
  tgc run resnet.onnx --input data=cat.npy
  tgc run model.onnx --input input_0.pb --input input_1.pb --out out.safetensors
  tgc run model.onnx --input x=x.npy --dim batch=8`,
		Args:              scriptArgs(-1),
		ValidArgsFunction: completeScripts,
		RunE:              runScript,
	}
	addDeviceFlag(c, "device to run on (default: the best available, see tgc devices)")
	addScriptFlags(c)
	addModelFlags(c, false)
	c.Flags().StringP("out", "o", "", "ONNX: write the outputs to this .safetensors (or .npy) file")
	return c
}

func runScript(c *cobra.Command, args []string) error {
	file := args[0]
	if err := checkModelFlags(c, file); err != nil {
		return err
	}
	if isONNX(file) {
		return runModel(c, args)
	}
	if out, _ := c.Flags().GetString("out"); out != "" {
		return &usageError{err: fmt.Errorf("--out is for ONNX models; %s is a script", file), cmd: c}
	}
	if err := checkScript(file); err != nil {
		return err
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	files, err := scriptFiles(cfg, file)
	if err != nil {
		return err
	}
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	device := cfg.RunDevice()
	if !slices.Contains(backend.Names(), device) {
		return fmt.Errorf("device %s can only be emitted (tgc emit --device %s), not run; devices that run: %s",
			device, device, strings.Join(backend.Names(), ", "))
	}
	ctx, eng, err := realize.NewContext(device, engineOptions(cfg, stderr, useColor(stderr, cfg.NoColor)))
	if err != nil {
		return err
	}
	if cfg.SeedSet {
		ctx.ManualSeed(cfg.Seed)
	}
	before := compileStats(eng)
	err = script.Run(script.Options{File: file, Stdout: stdout, Stderr: stderr, MaxSteps: cfg.MaxSteps, Argv: args[1:], Files: files, Context: ctx})
	if err != nil {
		return err
	}
	if !cfg.Quiet {
		after := compileStats(eng)
		summary(stderr, eng.Dev.Name(), eng.Stats, after.builds-before.builds, after.hits-before.hits)
	}
	return nil
}

type ccStats struct{ builds, hits int }

// compileStats reads the engine's compiler runs and kernel-cache loads.
func compileStats(eng *realize.Engine) ccStats {
	return ccStats{eng.Stats.Builds, eng.Stats.KernelLoads}
}

// summary prints the run's one line, e.g.
// "ran 3 kernels on CPU in 12.3 ms (compile 250 ms, 1 built, 2 cache hits)".
func summary(w io.Writer, device string, s realize.Stats, builds, hits int) {
	line := fmt.Sprintf("ran %s on %s in %s", plural(s.Kernels, "kernel"), device, fmtDuration(s.DeviceTime))
	var parts []string
	if builds > 0 || hits > 0 {
		parts = append(parts, "compile "+fmtDuration(s.CompileTime))
		if builds > 0 {
			parts = append(parts, fmt.Sprintf("%d built", builds))
		}
		if hits > 0 {
			parts = append(parts, plural(hits, "cache hit"))
		}
	}
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintln(w, line)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "ch") || strings.HasSuffix(what, "sh") || strings.HasSuffix(what, "s") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// fmtDuration writes a duration with three significant digits: 0.0123 ms,
// 12.3 ms, 250 ms, 1.23 s.
func fmtDuration(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 1000:
		return fmt.Sprintf("%.3g ms", ms)
	case ms < 100_000:
		return fmt.Sprintf("%.3g s", ms/1000)
	}
	return fmt.Sprintf("%.0f s", ms/1000)
}
