package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"tgc/pkg/realize"
	"tgc/pkg/script"
	"tgc/pkg/tensor"
)

func newEmitCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "emit FILE.tg|FILE.py|MODEL.onnx",
		Short: "Write a script's or a model's kernels and launch plan without running anything",
		Long: `Emit runs a script in trace mode: kernels are scheduled, optimized and
rendered exactly as for a device, but nothing is executed and the device
need not be present. It writes DIR/kernels/NAME.EXT (one file per kernel),
DIR/plan.json (buffers and launches in order; see docs/) and, when the
script has input data or weights, DIR/weights.safetensors.

Values the script reads (.item(), .tolist()) become outputs of the plan and
read as zeros, with a warning.

For an .onnx model the inputs are placeholders of the shapes given with
--input-shape (or declared in the model); its initializers are the weights.`,
		Example: `  tgc emit models/matmul.tg
  tgc emit models/matmul.tg --device CPU --out build/matmul
  tgc emit resnet.onnx --input-shape data=1,3,224,224 --out build/resnet`,
		Args:              scriptArgs(-1),
		ValidArgsFunction: completeScripts,
		RunE:              emitScript,
	}
	addDeviceFlag(c, "device dialect to emit for (default CPU; see tgc devices)")
	addScriptFlags(c)
	c.Flags().StringP("out", "o", "", "output directory (default build/<script name>)")
	addModelFlags(c, true)
	return c
}

func emitScript(c *cobra.Command, args []string) error {
	file := args[0]
	if err := checkModelFlags(c, file); err != nil {
		return err
	}
	if isONNX(file) {
		return emitModel(c, args)
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
	device := cfg.Device
	if device == "" {
		device = "CPU"
	}
	out, _ := c.Flags().GetString("out")
	if out == "" {
		out = filepath.Join("build", strings.TrimSuffix(filepath.Base(file), ".tg"))
	}
	tr, err := realize.NewTracer(device, engineOptions(cfg, stderr, useColor(stderr, cfg.NoColor)))
	if err != nil {
		return err
	}
	ctx := tensor.NewContext(tr)
	if cfg.SeedSet {
		ctx.ManualSeed(cfg.Seed)
	}
	err = script.Run(script.Options{File: file, Stdout: stdout, Stderr: stderr, MaxSteps: cfg.MaxSteps, Argv: args[1:], Files: files, Context: ctx})
	if err != nil {
		return err
	}
	if err := tr.WritePlan(out); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	if !cfg.Quiet {
		reportPlan(stderr, tr, out, cfg.Beam)
	}
	return nil
}
