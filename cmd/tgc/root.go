package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"tgc/pkg/backend"
	"tgc/pkg/config"
	"tgc/pkg/fileaccess"
	"tgc/pkg/realize"
	"tgc/pkg/script"
)

// newRoot builds the command tree; stdout and stderr are where every
// command writes (tests pass buffers).
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "tgc",
		Short: "tgc compiles tensor scripts (.tg) into fused kernels and runs them",
		Long: `tgc is a tensor compiler: a .tg script (tinygrad-style Python, run on
Starlark; plain .py files of tinygrad code run too) builds a lazy graph that
tgc fuses into kernels, renders as source, compiles and runs on a device.

Settings come from flags, then TGC_* environment variables (TGC_DEVICE,
TGC_DEBUG, TGC_BEAM, TGC_SEED, TGC_MAX_STEPS, TGC_CACHE, TGC_ALLOW_PATH), then tinygrad's
(DEVICE, DEV, DEBUG, BEAM), then tgc.yaml in the current directory (or
--config FILE), then defaults. NO_COLOR turns colours off.`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err: err, cmd: c}
	})
	pf := root.PersistentFlags()
	pf.String("config", "", "config file (default ./"+config.FileName+" when present)")
	config.AddFlags(pf, "no_color", "cache")
	root.AddCommand(newRunCmd(), newEmitCmd(), newInfoCmd(), newDevicesCmd(), newVersionCmd(), newBenchCmd(), newTrainCmd(), newGenerateCmd())
	return root
}

// execute runs tgc with args and returns the exit status: 0 ok, 1 error,
// 2 usage error. Errors are printed here, once, without Go stack traces.
func execute(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "tgc: internal error: %v\n", r)
			if debugEnv() {
				fmt.Fprintf(stderr, "%s", debug.Stack())
			} else {
				fmt.Fprintln(stderr, "(this is a bug in tgc; run with DEBUG=1 for the Go stack and please report it)")
			}
			status = 1
		}
	}()
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var se *script.Error
	var ue *usageError
	switch {
	case errors.As(err, &se):
		// file.tg:LINE:COL: message, and the call stack.
		fmt.Fprintln(stderr, se.Error())
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "tgc: %v\nRun '%s --help' for usage.\n", ue.err, ue.cmd.CommandPath())
		return 2
	case strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "unknown shorthand flag"):
		fmt.Fprintf(stderr, "tgc: %v\nRun '%s --help' for usage.\n", strings.TrimRight(err.Error(), "\n"), cmd.CommandPath())
		return 2
	}
	fmt.Fprintf(stderr, "tgc: %v\n", err)
	return 1
}

// debugEnv reports whether DEBUG or TGC_DEBUG asks for detail.
func debugEnv() bool {
	for _, k := range []string{"TGC_DEBUG", "DEBUG"} {
		if v := os.Getenv(k); v != "" && v != "0" {
			return true
		}
	}
	return false
}

// usageError is a mistake on the command line (exit status 2).
type usageError struct {
	err error
	cmd *cobra.Command
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// scriptArgs accepts a script followed by arguments for it.
func scriptArgs(max int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return &usageError{err: fmt.Errorf("missing the script file (usage: %s)", c.UseLine()), cmd: c}
		case max >= 0 && len(args) > max:
			return &usageError{err: fmt.Errorf("unexpected arguments after %s: %s", args[0], strings.Join(args[1:], " ")), cmd: c}
		}
		return nil
	}
}

// completeScripts completes .tg, .py and .onnx file names.
func completeScripts(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return []string{"tg", "py", "onnx"}, cobra.ShellCompDirectiveFilterFileExt
}

// knownDevices are the device names a setting may hold: devices that run
// and dialects tgc can only emit.
func knownDevices() []string {
	names := backend.Names()
	for _, d := range realize.EmitDevices() {
		if !slices.Contains(names, d) {
			names = append(names, d)
		}
	}
	return names
}

// addDeviceFlag adds --device with completion of the device names.
func addDeviceFlag(c *cobra.Command, usage string) {
	config.AddFlags(c.Flags(), "device")
	c.Flags().Lookup("device").Usage = usage
	_ = c.RegisterFlagCompletionFunc("device", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return knownDevices(), cobra.ShellCompDirectiveNoFileComp
	})
}

// addScriptFlags adds the flags of commands that run a script.
func addScriptFlags(c *cobra.Command) {
	config.AddFlags(c.Flags(), "debug", "seed", "max_steps", "quiet", "allow_path")
	addBeamFlags(c)
}

// scriptFiles is the file access of a script: its folder, the current
// folder and the allowed paths of the config.
func scriptFiles(cfg *config.Config, file string) (*fileaccess.Policy, error) {
	p := fileaccess.ForScript(file)
	for _, dir := range cfg.AllowPath {
		if err := p.Allow(dir, "allowed "+cfg.From["allow_path"]); err != nil {
			return nil, fmt.Errorf("allow_path (%s): %v", cfg.From["allow_path"], err)
		}
	}
	return p, nil
}

// addBeamFlags adds the kernel-search flags.
func addBeamFlags(c *cobra.Command) { config.AddFlags(c.Flags(), "beam", "beam_budget") }

// engineOptions are the realize options a config asks for.
func engineOptions(cfg *config.Config, out io.Writer, color bool) realize.Options {
	return realize.Options{Debug: cfg.Debug, Out: out, Color: color, Beam: cfg.Beam, BeamBudget: cfg.BeamBudget, CacheDir: cfg.Cache}
}

// loadConfig loads the settings for a command. With DEBUG=1 it lists what
// tgc.yaml set: a config file in the current folder can redirect the
// kernel cache or widen what scripts may access, which should not go
// unnoticed.
func loadConfig(c *cobra.Command) (*config.Config, error) {
	cfg, err := config.Load(config.Options{Flags: c.Flags(), Devices: knownDevices()})
	if err != nil {
		return nil, err
	}
	if cfg.Debug >= 1 {
		for _, s := range cfg.FileSettings() {
			fmt.Fprintf(c.ErrOrStderr(), "tgc: %s sets %s\n", cfg.File, s)
		}
	}
	return cfg, nil
}

// checkScript reports a missing or unreadable script clearly, before any
// device is opened.
func checkScript(file string) error {
	st, err := os.Stat(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("script %s does not exist", file)
	case err != nil:
		return fmt.Errorf("cannot read script: %v", err)
	case st.IsDir():
		return fmt.Errorf("%s is a directory, not a script (.tg or .py)", file)
	}
	f, err := fileaccess.Open(file) // a FIFO or device is refused, not waited on
	if err != nil {
		return fmt.Errorf("cannot read script: %v", err)
	}
	defer f.Close()
	// a model file given where a script goes: say which command takes it
	// (its bytes would otherwise be read as a script: "61 MB is too long")
	switch checkpointKind(f, file) {
	case "gguf":
		return fmt.Errorf("%s is a GGUF model, not a script: tgc generate %s runs it, tgc info %s describes it", file, file, file)
	case "llama2c":
		return fmt.Errorf("%s is not a script (.tg or .py); a llama2.c checkpoint runs with tgc generate %s", file, file)
	}
	return nil
}
