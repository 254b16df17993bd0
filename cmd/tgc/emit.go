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
		Use:   "emit FILE.tg|FILE.py",
		Short: "Write a script's kernels and launch plan without running anything",
		Long: `Emit runs a script in trace mode: kernels are scheduled, optimized and
rendered exactly as for a device, but nothing is executed and the device
need not be present. It writes DIR/kernels/NAME.EXT (one file per kernel),
DIR/plan.json (buffers and launches in order; see docs/) and, when the
script has input data or weights, DIR/weights.safetensors.

Values the script reads (.item(), .tolist()) become outputs of the plan and
read as zeros, with a warning.`,
		Example: `  tgc emit models/matmul.tg
  tgc emit models/matmul.tg --device CPU --out build/matmul`,
		Args:              scriptArgs(-1),
		ValidArgsFunction: completeScripts,
		RunE:              emitScript,
	}
	addDeviceFlag(c, "device dialect to emit for (default CPU; see tgc devices)")
	addScriptFlags(c)
	c.Flags().StringP("out", "o", "", "output directory (default build/<script name>)")
	return c
}

func emitScript(c *cobra.Command, args []string) error {
	file := args[0]
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
		fmt.Fprintf(stderr, "wrote %s to %s\n", what, out)
		if tr.BeamMisses > 0 {
			fmt.Fprintf(stderr, "tgc: BEAM=%d: no stored search result for %s, the heuristic's choice is emitted (emit runs nothing; tgc run --beam %d searches and stores results)\n",
				cfg.Beam, plural(tr.BeamMisses, "kernel"), cfg.Beam)
		}
	}
	return nil
}
