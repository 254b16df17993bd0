package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"tgc/pkg/backend"
)

var envVars = []string{"TGC_DEVICE", "DEVICE", "DEV", "TGC_DEBUG", "DEBUG", "TGC_BEAM", "BEAM",
	"TGC_BEAM_BUDGET", "TGC_SEED", "TGC_MAX_STEPS", "TGC_CACHE", "TGC_ALLOW_PATH", "NO_COLOR"}

// clearEnv unsets every variable Load reads (restored after the test).
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range envVars {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func flagSet() *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.String("device", "", "")
	fs.Int("debug", 0, "")
	fs.Uint64("seed", 0, "")
	fs.String("beam-budget", "", "")
	fs.Uint64("max-steps", 0, "")
	fs.String("cache", "", "")
	fs.Bool("quiet", false, "")
	fs.Bool("no-color", false, "")
	fs.String("config", "", "")
	fs.StringArray("allow-path", nil, "")
	return fs
}

type setup struct {
	env   map[string]string
	flags []string
	yaml  string // tgc.yaml in the directory ("" = none)
}

func load(t *testing.T, s setup) (*Config, error) {
	t.Helper()
	clearEnv(t)
	for k, v := range s.env {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	if s.yaml != "" {
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(s.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := flagSet()
	if err := fs.Parse(s.flags); err != nil {
		t.Fatal(err)
	}
	return Load(Options{Flags: fs, Dir: dir, Devices: []string{"CPU", "GO"}})
}

func TestPrecedence(t *testing.T) {
	tests := []struct {
		name string
		setup
		device   string
		debug    int
		beam     int
		seed     uint64
		seedSet  bool
		maxSteps uint64
		from     map[string]string
	}{
		{name: "defaults"},
		{name: "yaml", setup: setup{yaml: "device: go\ndebug: 2\nbeam: 4\nseed: 7\nmax_steps: 1000\n"},
			device: "GO", debug: 2, beam: 4, seed: 7, seedSet: true, maxSteps: 1000},
		{name: "tinygrad env over yaml", setup: setup{env: map[string]string{"DEVICE": "cpu", "DEBUG": "3", "BEAM": "2"}, yaml: "device: GO\ndebug: 1\nbeam: 4\n"},
			device: "CPU", debug: 3, beam: 2, from: map[string]string{"device": "DEVICE", "debug": "DEBUG", "beam": "BEAM"}},
		{name: "DEV", setup: setup{env: map[string]string{"DEV": "GO"}}, device: "GO"},
		{name: "DEVICE over DEV", setup: setup{env: map[string]string{"DEV": "GO", "DEVICE": "CPU"}}, device: "CPU"},
		{name: "TGC_ over tinygrad", setup: setup{env: map[string]string{"TGC_DEVICE": "GO", "DEVICE": "CPU", "DEV": "CPU", "TGC_DEBUG": "4", "DEBUG": "1", "TGC_BEAM": "3", "BEAM": "1"}},
			device: "GO", debug: 4, beam: 3, from: map[string]string{"device": "TGC_DEVICE", "debug": "TGC_DEBUG"}},
		{name: "flag over everything", setup: setup{env: map[string]string{"TGC_DEVICE": "CPU", "DEBUG": "3", "TGC_SEED": "5", "TGC_MAX_STEPS": "9"}, flags: []string{"--device=go", "--debug=5", "--seed=11", "--max-steps=99"}, yaml: "device: CPU\ndebug: 1\nseed: 1\n"},
			device: "GO", debug: 5, seed: 11, seedSet: true, maxSteps: 99, from: map[string]string{"device": "--device", "debug": "--debug", "seed": "--seed"}},
		{name: "flag at zero still wins", setup: setup{env: map[string]string{"DEBUG": "3"}, flags: []string{"--debug=0"}}, debug: 0},
		{name: "empty env is unset", setup: setup{env: map[string]string{"TGC_DEBUG": "", "DEBUG": "2"}}, debug: 2},
		{name: "env seed", setup: setup{env: map[string]string{"TGC_SEED": "18446744073709551615"}}, seed: 1<<64 - 1, seedSet: true},
		{name: "yaml seed zero is a seed", setup: setup{yaml: "seed: 0\n"}, seedSet: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.setup)
			if err != nil {
				t.Fatal(err)
			}
			if c.Device != tc.device || c.Debug != tc.debug || c.Beam != tc.beam || c.Seed != tc.seed || c.SeedSet != tc.seedSet || c.MaxSteps != tc.maxSteps {
				t.Errorf("got device=%q debug=%d beam=%d seed=%d/%v max_steps=%d, want %q %d %d %d/%v %d",
					c.Device, c.Debug, c.Beam, c.Seed, c.SeedSet, c.MaxSteps, tc.device, tc.debug, tc.beam, tc.seed, tc.seedSet, tc.maxSteps)
			}
			for k, want := range tc.from {
				if c.From[k] != want {
					t.Errorf("From[%s] = %q, want %q", k, c.From[k], want)
				}
			}
		})
	}
}

func TestBoolsAndCache(t *testing.T) {
	c, err := load(t, setup{yaml: "quiet: true\nno_color: yes\ncache: rel/dir\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Quiet || !c.NoColor || !filepath.IsAbs(c.Cache) || !strings.HasSuffix(c.Cache, "rel/dir") {
		t.Errorf("got quiet=%v no_color=%v cache=%q", c.Quiet, c.NoColor, c.Cache)
	}
	c, err = load(t, setup{env: map[string]string{"NO_COLOR": "1"}, flags: []string{"--quiet"}})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Quiet || !c.NoColor {
		t.Errorf("--quiet and NO_COLOR=1: quiet=%v no_color=%v", c.Quiet, c.NoColor)
	}
	c, err = load(t, setup{yaml: "quiet: true\n", flags: []string{"--quiet=false"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Quiet {
		t.Error("--quiet=false should override quiet: true in tgc.yaml")
	}
}

// TestCacheNotExported: the cache directory is a value of the Config,
// which tgc hands to the backend; loading changes no environment variable.
func TestCacheNotExported(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	fs := flagSet()
	if err := fs.Parse([]string{"--cache", dir}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Options{Flags: fs, Dir: t.TempDir(), Devices: []string{"GO"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Cache != dir || c.From["cache"] != "--cache" {
		t.Errorf("cache %q from %q, want %q from --cache", c.Cache, c.From["cache"], dir)
	}
	if v, set := os.LookupEnv("TGC_CACHE"); set || backend.CacheDir() == dir {
		t.Errorf("Load exported the cache: TGC_CACHE=%q (set %v), backend.CacheDir()=%q", v, set, backend.CacheDir())
	}
}

// TestTableDrivesFlags: the flags AddFlags declares have the key's type,
// and Load reads them with the precedence of every key.
func TestTableDrivesFlags(t *testing.T) {
	clearEnv(t)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs, Keys()...)
	for _, k := range keys {
		f := fs.Lookup(strings.ReplaceAll(k.name, "_", "-"))
		if f == nil || f.Usage == "" {
			t.Fatalf("key %s: no flag with a usage", k.name)
		}
	}
	if fs.ShorthandLookup("q") == nil {
		t.Error("--quiet has no -q")
	}
	t.Setenv("TGC_BEAM", "3")
	t.Setenv("DEBUG", "4")
	if err := fs.Parse([]string{"--debug=2", "-q", "--seed", "9", "--max-steps=100", "--beam-budget", "1m", "--device", "go", "--no-color"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Options{Flags: fs, Dir: t.TempDir(), Devices: []string{"CPU", "GO"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Debug != 2 || !c.Quiet || c.Seed != 9 || !c.SeedSet || c.MaxSteps != 100 || c.BeamBudget != time.Minute ||
		c.Device != "GO" || !c.NoColor || c.Beam != 3 {
		t.Errorf("got %+v", c)
	}
	if err := fs.Parse([]string{"--debug=x"}); err == nil {
		t.Error("an int flag accepted text")
	}
}

// TestNoColor: NO_COLOR with any non-empty value turns colours off unless
// a flag says otherwise (https://no-color.org); tgc.yaml is below it.
func TestNoColor(t *testing.T) {
	for _, tc := range []struct {
		setup
		want bool
	}{
		{setup{env: map[string]string{"NO_COLOR": "0"}}, true},
		{setup{env: map[string]string{"NO_COLOR": "anything"}}, true},
		{setup{env: map[string]string{"NO_COLOR": "1"}, flags: []string{"--no-color=false"}}, false},
		{setup{env: map[string]string{"NO_COLOR": "1"}, yaml: "no_color: false\n"}, true},
		{setup{yaml: "no_color: true\n"}, true},
		{setup{}, false},
	} {
		c, err := load(t, tc.setup)
		if err != nil {
			t.Fatalf("%+v: %v", tc.setup, err)
		}
		if c.NoColor != tc.want {
			t.Errorf("%+v: no_color %v, want %v", tc.setup, c.NoColor, tc.want)
		}
	}
}

func TestBadValues(t *testing.T) {
	tests := []struct {
		name string
		setup
		want string
	}{
		{"DEBUG text", setup{env: map[string]string{"DEBUG": "abc"}}, `invalid DEBUG value "abc": want an integer 0..7`},
		{"DEBUG too high", setup{env: map[string]string{"DEBUG": "8"}}, `invalid DEBUG value "8": want an integer 0..7`},
		{"DEBUG negative", setup{env: map[string]string{"DEBUG": "-1"}}, `invalid DEBUG value "-1": want an integer 0..7`},
		{"DEBUG fraction", setup{env: map[string]string{"DEBUG": "1.5"}}, `invalid DEBUG value "1.5"`},
		{"TGC_DEBUG shadows DEBUG but is checked", setup{env: map[string]string{"TGC_DEBUG": "x", "DEBUG": "1"}}, `invalid TGC_DEBUG value "x"`},
		{"--debug range", setup{flags: []string{"--debug=9"}}, `invalid --debug value 9: want an integer 0..7`},
		{"BEAM", setup{env: map[string]string{"BEAM": "wide"}}, `invalid BEAM value "wide": want a non-negative integer`},
		{"TGC_BEAM negative", setup{env: map[string]string{"TGC_BEAM": "-2"}}, `invalid TGC_BEAM value "-2"`},
		{"TGC_BEAM_BUDGET text", setup{env: map[string]string{"TGC_BEAM_BUDGET": "soon"}}, `invalid TGC_BEAM_BUDGET value "soon": want a positive duration`},
		{"TGC_BEAM_BUDGET zero", setup{env: map[string]string{"TGC_BEAM_BUDGET": "0s"}}, `invalid TGC_BEAM_BUDGET value "0s"`},
		{"--beam-budget negative", setup{flags: []string{"--beam-budget=-3s"}}, `invalid --beam-budget value "-3s"`},
		{"yaml beam_budget list", setup{yaml: "beam_budget: [1]\n"}, `invalid beam_budget value`},
		{"TGC_SEED", setup{env: map[string]string{"TGC_SEED": "-1"}}, `invalid TGC_SEED value "-1": want an integer`},
		{"TGC_SEED overflow", setup{env: map[string]string{"TGC_SEED": "18446744073709551616"}}, `invalid TGC_SEED value`},
		{"TGC_MAX_STEPS", setup{env: map[string]string{"TGC_MAX_STEPS": "lots"}}, `invalid TGC_MAX_STEPS value "lots"`},
		{"unknown device env", setup{env: map[string]string{"DEVICE": "WEBGPU"}}, `invalid DEVICE value "WEBGPU": unknown device; known devices: CPU, GO`},
		{"device typo", setup{env: map[string]string{"DEV": "CPUU"}}, `invalid DEV value "CPUU": unknown device (did you mean CPU?)`},
		{"unknown device flag", setup{flags: []string{"--device=metal"}}, `invalid --device value "metal": unknown device`},
		{"yaml debug text", setup{yaml: "debug: high\n"}, `tgc.yaml: invalid debug value "high": want an integer 0..7`},
		{"yaml debug range", setup{yaml: "debug: 12\n"}, `invalid debug value 12`},
		{"yaml debug bool", setup{yaml: "debug: true\n"}, `invalid debug value true`},
		{"yaml device", setup{yaml: "device: QPU\n"}, `tgc.yaml: invalid device value "QPU": unknown device`},
		{"yaml device number", setup{yaml: "device: 3\n"}, `invalid device value 3: want a device name`},
		{"yaml quiet", setup{yaml: "quiet: maybe\n"}, `invalid quiet value "maybe": want true or false`},
		{"yaml unknown key", setup{yaml: "devcie: CPU\n"}, `tgc.yaml: unknown key "devcie" (did you mean "device"?); known keys: device, debug`},
		{"yaml unknown keys", setup{yaml: "max-steps: 3\ncolour: no\n"}, `unknown key "colour", unknown key "max-steps" (did you mean "max_steps"?)`},
		{"yaml nested", setup{yaml: "device:\n  name: CPU\n"}, `unknown key "device.name"`},
		{"yaml syntax", setup{yaml: "debug: [1\n"}, `tgc.yaml:`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.setup)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestBeamBudget(t *testing.T) {
	for _, tc := range []struct {
		setup
		want time.Duration
	}{
		{setup{}, 0},
		{setup{env: map[string]string{"TGC_BEAM_BUDGET": "90s"}}, 90 * time.Second},
		{setup{env: map[string]string{"TGC_BEAM_BUDGET": "2.5"}}, 2500 * time.Millisecond},
		{setup{yaml: "beam_budget: 2m\n"}, 2 * time.Minute},
		{setup{yaml: "beam_budget: 45\n"}, 45 * time.Second},
		{setup{yaml: "beam_budget: 2m\n", flags: []string{"--beam-budget=10s"}}, 10 * time.Second},
	} {
		c, err := load(t, tc.setup)
		if err != nil {
			t.Fatalf("%+v: %v", tc.setup, err)
		}
		if c.BeamBudget != tc.want {
			t.Errorf("%+v: budget %v, want %v", tc.setup, c.BeamBudget, tc.want)
		}
	}
}

func TestConfigFile(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "other.conf")
	if err := os.WriteFile(file, []byte("debug: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flagSet()
	if err := fs.Parse([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Options{Flags: fs, Dir: t.TempDir(), Devices: []string{"GO"}})
	if err != nil || c.Debug != 2 || c.File != file {
		t.Fatalf("--config %s: debug=%v file=%q err=%v", file, c.Debug, c.File, err)
	}
	_, err = Load(Options{ConfigFile: filepath.Join(t.TempDir(), "missing.yaml"), Devices: []string{"GO"}})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing explicit config file: err = %v", err)
	}
}

func TestDefaultDevices(t *testing.T) {
	clearEnv(t)
	t.Setenv("DEVICE", "go")
	c, err := Load(Options{Dir: t.TempDir()})
	if err != nil || c.Device != "GO" {
		t.Fatalf("DEVICE=go: %v %v", c, err)
	}
	if !slices.Contains(backend.Names(), c.RunDevice()) {
		t.Errorf("RunDevice %q not in %v", c.RunDevice(), backend.Names())
	}
	os.Unsetenv("DEVICE")
	c, err = Load(Options{Dir: t.TempDir()})
	if err != nil || c.RunDevice() != backend.Default() {
		t.Errorf("no device: RunDevice %q, want %q (err %v)", c.RunDevice(), backend.Default(), err)
	}
}

// TestAllowPath: allow_path comes from a repeated flag (paths with commas
// intact), TGC_ALLOW_PATH (separated like PATH) or tgc.yaml (a path or a
// list); paths are made absolute and must exist; DEBUG=1's list of what
// tgc.yaml set includes it.
func TestAllowPath(t *testing.T) {
	a, b := t.TempDir(), filepath.Join(t.TempDir(), "with,comma")
	if err := os.Mkdir(b, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		setup
		want []string
		err  string
	}{
		{name: "flags", setup: setup{flags: []string{"--allow-path", a, "--allow-path", b}}, want: []string{a, b}},
		{name: "env", setup: setup{env: map[string]string{"TGC_ALLOW_PATH": a + string(os.PathListSeparator) + b}}, want: []string{a, b}},
		{name: "yaml list", setup: setup{yaml: "allow_path: [" + a + ", '" + b + "']\n"}, want: []string{a, b}},
		{name: "yaml string", setup: setup{yaml: "allow_path: " + a + "\n"}, want: []string{a}},
		{name: "flag over yaml", setup: setup{yaml: "allow_path: " + a + "\n", flags: []string{"--allow-path", b}}, want: []string{b}},
		{name: "missing", setup: setup{flags: []string{"--allow-path", filepath.Join(a, "nope")}}, err: `invalid --allow-path value "` + filepath.Join(a, "nope") + `": no such file or directory`},
		{name: "empty", setup: setup{yaml: "allow_path: ['']\n"}, err: "invalid allow_path value"},
		{name: "number", setup: setup{yaml: "allow_path: 3\n"}, err: "want a folder path or a list of them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := load(t, tc.setup)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.AllowPath, tc.want) {
				t.Errorf("AllowPath %q, want %q", cfg.AllowPath, tc.want)
			}
			fromFile := strings.HasPrefix(cfg.From["allow_path"], cfg.File+": ") && cfg.File != ""
			listed := slices.ContainsFunc(cfg.FileSettings(), func(s string) bool { return strings.HasPrefix(s, "allow_path = ") })
			if listed != fromFile {
				t.Errorf("FileSettings %q (allow_path from %q)", cfg.FileSettings(), cfg.From["allow_path"])
			}
		})
	}
}

// TestFileSettings: what tgc.yaml set is listed (DEBUG=1 prints it), what
// came from elsewhere is not.
func TestFileSettings(t *testing.T) {
	cache := t.TempDir()
	cfg, err := load(t, setup{yaml: "cache: " + cache + "\nbeam: 2\ndebug: 1\n", env: map[string]string{"DEBUG": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cfg.FileSettings(), "; ")
	if want := "beam = 2; cache = " + cache; got != want {
		t.Errorf("FileSettings %q, want %q", got, want)
	}
}
