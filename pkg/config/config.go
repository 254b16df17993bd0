// Package config loads tgc's settings with a fixed precedence:
//
//	command-line flag > TGC_* environment variable > tinygrad-style
//	environment variable (DEVICE, DEV, DEBUG, BEAM) > tgc.yaml > default
//
// Every value is validated from its raw text before use, and a bad one is
// an error that names where it came from (`invalid DEBUG value "abc": want
// an integer 0..7`), never a silent zero. Unknown keys in tgc.yaml are
// errors too, so a typo does not quietly fall back to a default.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"tgc/pkg/backend"
)

// FileName is the configuration file looked for in the current directory.
const FileName = "tgc.yaml"

// MaxDebug is the highest DEBUG level.
const MaxDebug = 7

// Config is tgc's configuration. Each field is one key of the table below.
type Config struct {
	Device     string        // "" = best available (backend.Default)
	Debug      int           // tinygrad's DEBUG 0..7
	Beam       int           // kernel search width (0 = heuristics)
	BeamBudget time.Duration // bounds the search of one kernel (wall clock)
	Seed       uint64        // random seed, used when SeedSet
	MaxSteps   uint64        // script step limit, 0 = the script default
	Cache      string        // kernel cache directory ("" = backend default), absolute
	Quiet      bool          // no summary line
	NoColor    bool          // no ANSI colours (also NO_COLOR)

	SeedSet bool   // a seed was given somewhere
	File    string // the config file read, "" if none
	// From names the source of each key that did not come from the
	// defaults: "--debug", "DEBUG", "tgc.yaml: debug", ...
	From map[string]string
}

// key is one setting: its name in tgc.yaml (the flag is the name with -
// for _), the environment variables that set it (highest precedence
// first: TGC_*, then tinygrad's), how its flag is declared, and set, which
// checks a raw value (flag: typed; environment: text; tgc.yaml: a YAML
// value) and stores it. set's error says what was wrong ("want an integer
// 0..7"); Load adds where the value came from.
type key struct {
	name string
	env  []string
	flag flagSpec
	set  func(c *Config, raw any, o *Options) error
	// envTrue: any non-empty value of the environment variables means
	// true (NO_COLOR).
	envTrue bool
}

// flagSpec declares a key's command-line flag.
type flagSpec struct {
	kind  flagKind
	short string
	usage string
}

type flagKind int

const (
	stringFlag flagKind = iota
	intFlag
	uintFlag
	boolFlag
)

// keys is every setting, in the order tgc.yaml's keys are listed.
var keys = []key{
	{name: "device", env: []string{"TGC_DEVICE", "DEVICE", "DEV"}, set: setDevice,
		flag: flagSpec{stringFlag, "", "device (default: the best available; see tgc devices)"}},
	{name: "debug", env: []string{"TGC_DEBUG", "DEBUG"},
		set:  intIn(0, MaxDebug, fmt.Sprintf("an integer 0..%d", MaxDebug), func(c *Config) *int { return &c.Debug }),
		flag: flagSpec{intFlag, "", "debug output 0..7 like tinygrad's DEBUG: 1 schedule, 2 kernel launches, 3 sources, 4 machine code, 5 IR after each pass"}},
	{name: "beam", env: []string{"TGC_BEAM", "BEAM"},
		set:  intIn(0, math.MaxInt32, "a non-negative integer", func(c *Config) *int { return &c.Beam }),
		flag: flagSpec{intFlag, "", "search each kernel's optimizations with this beam width, timing candidates on the device (like tinygrad's BEAM); results are stored and reused"}},
	{name: "beam_budget", env: []string{"TGC_BEAM_BUDGET"}, set: setBeamBudget,
		flag: flagSpec{stringFlag, "", "wall-clock limit of one kernel's search, e.g. 30s (default 20s)"}},
	{name: "seed", env: []string{"TGC_SEED"}, set: setSeed,
		flag: flagSpec{uintFlag, "", "random seed (as Tensor.manual_seed)"}},
	{name: "max_steps", env: []string{"TGC_MAX_STEPS"}, set: setMaxSteps,
		flag: flagSpec{uintFlag, "", "stop the script after this many execution steps (0 = default limit)"}},
	{name: "cache", env: []string{"TGC_CACHE"}, set: setCache,
		flag: flagSpec{stringFlag, "", "compiled-kernel cache directory (default $TGC_CACHE or the user cache dir)"}},
	{name: "quiet", set: boolKey(func(c *Config) *bool { return &c.Quiet }),
		flag: flagSpec{boolFlag, "q", "no summary line"}},
	// https://no-color.org: NO_COLOR set to any non-empty value turns
	// colours off; a flag (or tgc.yaml below it) says otherwise.
	{name: "no_color", env: []string{"NO_COLOR"}, envTrue: true, set: boolKey(func(c *Config) *bool { return &c.NoColor }),
		flag: flagSpec{boolFlag, "", "no colours in the output (also NO_COLOR=1)"}},
}

// Keys lists the keys tgc.yaml may hold.
func Keys() []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.name)
	}
	return out
}

func lookupKey(name string) (key, bool) {
	for _, k := range keys {
		if k.name == name {
			return k, true
		}
	}
	return key{}, false
}

func flagName(name string) string { return strings.ReplaceAll(name, "_", "-") }

// AddFlags declares the flags of the named keys (tgc.yaml names, e.g.
// "max_steps" declares --max-steps) on fs, with their usage text. It
// panics on an unknown name: the command tree is fixed at build time.
func AddFlags(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		k, ok := lookupKey(n)
		if !ok {
			panic("config: no key " + n)
		}
		name, f := flagName(k.name), k.flag
		switch f.kind {
		case intFlag:
			fs.IntP(name, f.short, 0, f.usage)
		case uintFlag:
			fs.Uint64P(name, f.short, 0, f.usage)
		case boolFlag:
			fs.BoolP(name, f.short, false, f.usage)
		default:
			fs.StringP(name, f.short, "", f.usage)
		}
	}
}

// Options says where Load looks.
type Options struct {
	// Flags are the command's flags; those named like a key (device,
	// debug, beam, seed, max-steps, cache, quiet, no-color) are read
	// when set. A "config" flag names the config file.
	Flags *pflag.FlagSet
	// ConfigFile is an explicit config file (it must exist); "" looks for
	// tgc.yaml in Dir. A changed "config" flag overrides it.
	ConfigFile string
	// Dir is where tgc.yaml is looked for ("" = current directory).
	Dir string
	// Devices are the valid device names (nil = backend.Names()).
	Devices []string
}

// Load reads, merges and validates the configuration. It changes nothing
// outside the returned Config (the environment included).
func Load(opts Options) (*Config, error) {
	file, explicit := opts.ConfigFile, opts.ConfigFile != ""
	if opts.Flags != nil {
		if f := opts.Flags.Lookup("config"); f != nil && f.Changed {
			file, explicit = f.Value.String(), true
		}
	}
	if !explicit {
		file = filepath.Join(opts.Dir, FileName)
	}
	cfg := &Config{From: map[string]string{}}
	var yaml *viper.Viper
	if _, err := os.Stat(file); err == nil || explicit {
		v, err := readFile(file)
		if err != nil {
			return nil, err
		}
		yaml, cfg.File = v, file
	}
	for _, k := range keys {
		raw, from, ok := k.lookup(opts.Flags, yaml, cfg.File)
		if !ok {
			continue
		}
		cfg.From[k.name] = from
		if err := k.set(cfg, raw, &opts); err != nil {
			// from is "--flag", "ENV" or "FILE: key"; errors read
			// `invalid DEBUG value "abc": want ...` or
			// `tgc.yaml: invalid debug value ...`.
			prefix := ""
			if file, name, ok := strings.Cut(from, ": "); ok {
				prefix, from = file+": ", name
			}
			return nil, fmt.Errorf("%sinvalid %s value %s: %v", prefix, from, quote(raw), err)
		}
	}
	return cfg, nil
}

// lookup finds k's value by precedence: its flag when set, then its
// environment variables in order (an empty one counts as unset), then the
// config file. from names the source (see Config.From).
func (k key) lookup(flags *pflag.FlagSet, yaml *viper.Viper, file string) (raw any, from string, ok bool) {
	if flags != nil {
		if f := flags.Lookup(flagName(k.name)); f != nil && f.Changed {
			return flagValue(f), "--" + f.Name, true
		}
	}
	for _, e := range k.env {
		if v := os.Getenv(e); v != "" {
			if k.envTrue {
				return true, e, true
			}
			return v, e, true
		}
	}
	if yaml != nil && yaml.InConfig(k.name) {
		return yaml.Get(k.name), file + ": " + k.name, true
	}
	return nil, "", false
}

// flagValue is a set flag's value, typed as the flag is (so errors print
// --debug=9 as 9, --beam-budget=-3s as "-3s").
func flagValue(f *pflag.Flag) any {
	s := f.Value.String()
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64":
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return int(n)
		}
	case "uint", "uint8", "uint16", "uint32", "uint64":
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return n
		}
	case "bool":
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	}
	return s
}

// readFile reads a config file, rejecting unknown keys.
func readFile(file string) (*viper.Viper, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("config file %s does not exist", file)
		}
		return nil, fmt.Errorf("cannot read config file: %w", err)
	}
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(strings.NewReader(string(data))); err != nil {
		return nil, fmt.Errorf("%s: %v", file, unwrapAll(err))
	}
	// Typo protection: every key of the file must be one we know.
	known := Keys()
	var bad []string
	for _, k := range v.AllKeys() {
		if slices.Contains(known, k) {
			continue
		}
		msg := fmt.Sprintf("unknown key %q", k)
		if s := suggest(k, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		bad = append(bad, msg)
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, fmt.Errorf("%s: %s; known keys: %s", file, strings.Join(bad, ", "), strings.Join(known, ", "))
	}
	return v, nil
}

func unwrapAll(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// ---- checking and storing values ----

// want is the error of a value that is not what the key takes.
func want(what string) error { return errors.New("want " + what) }

func intIn(lo, hi int64, what string, field func(*Config) *int) func(*Config, any, *Options) error {
	return func(c *Config, raw any, _ *Options) error {
		n, ok := integer(raw, lo, hi)
		if !ok {
			return want(what)
		}
		*field(c) = int(n)
		return nil
	}
}

func boolKey(field func(*Config) *bool) func(*Config, any, *Options) error {
	return func(c *Config, raw any, _ *Options) error {
		b, ok := boolean(raw)
		if !ok {
			return want("true or false")
		}
		*field(c) = b
		return nil
	}
}

func setDevice(c *Config, raw any, o *Options) error {
	s, ok := raw.(string)
	if !ok {
		return want("a device name")
	}
	devices := o.Devices
	if devices == nil {
		devices = backend.Names()
	}
	d := strings.ToUpper(strings.TrimSpace(s))
	if !slices.Contains(devices, d) {
		msg := "unknown device"
		if sug := suggest(d, devices); sug != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", sug)
		}
		return fmt.Errorf("%s; known devices: %s", msg, strings.Join(devices, ", "))
	}
	c.Device = d
	return nil
}

func setBeamBudget(c *Config, raw any, _ *Options) error {
	d, ok := duration(raw)
	if !ok {
		return want("a positive duration such as 30s or 2m")
	}
	c.BeamBudget = d
	return nil
}

func setSeed(c *Config, raw any, _ *Options) error {
	n, ok := unsigned(raw)
	if !ok {
		return want("an integer 0..18446744073709551615")
	}
	c.Seed, c.SeedSet = n, true
	return nil
}

func setMaxSteps(c *Config, raw any, _ *Options) error {
	n, ok := unsigned(raw)
	if !ok {
		return want("a non-negative integer (0 = default limit)")
	}
	c.MaxSteps = n
	return nil
}

func setCache(c *Config, raw any, _ *Options) error {
	s, ok := raw.(string)
	if !ok || strings.TrimSpace(s) == "" {
		return want("a directory path")
	}
	p, err := expandPath(s)
	if err != nil {
		return err
	}
	c.Cache = p
	return nil
}

// duration accepts "30s"-style strings and plain numbers of seconds.
func duration(raw any) (time.Duration, bool) {
	var d time.Duration
	switch v := raw.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(strings.TrimSpace(v)); err != nil {
			f, ferr := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if ferr != nil || math.IsNaN(f) || f > 1e6 {
				return 0, false
			}
			d = time.Duration(f * float64(time.Second))
		}
	case int:
		d = time.Duration(v) * time.Second
	case float64:
		if math.IsNaN(v) || v > 1e6 {
			return 0, false
		}
		d = time.Duration(v * float64(time.Second))
	default:
		return 0, false
	}
	return d, d > 0
}

func quote(raw any) string {
	if s, ok := raw.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%v", raw)
}

// integer accepts an integer in [lo, hi] from a string (env, flag text) or
// a YAML number; anything else (text, fractions, booleans) is rejected.
func integer(raw any, lo, hi int64) (int64, bool) {
	var n int64
	switch x := raw.(type) {
	case string:
		v, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, false
		}
		n = v
	case float64:
		if x != math.Trunc(x) || x < math.MinInt64 || x > math.MaxInt64 {
			return 0, false
		}
		n = int64(x)
	default:
		rv := reflect.ValueOf(raw)
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n = rv.Int()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if rv.Uint() > math.MaxInt64 {
				return 0, false
			}
			n = int64(rv.Uint())
		default:
			return 0, false
		}
	}
	return n, n >= lo && n <= hi
}

// unsigned accepts a uint64 from a string or a YAML number.
func unsigned(raw any) (uint64, bool) {
	switch x := raw.(type) {
	case string:
		v, err := strconv.ParseUint(strings.TrimSpace(x), 10, 64)
		return v, err == nil
	case float64:
		if x != math.Trunc(x) || x < 0 || x >= math.MaxUint64 {
			return 0, false
		}
		return uint64(x), true
	}
	rv := reflect.ValueOf(raw)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if rv.Int() < 0 {
			return 0, false
		}
		return uint64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint(), true
	}
	return 0, false
}

// boolean accepts a YAML boolean or the usual spellings in text.
func boolean(raw any) (bool, bool) {
	switch x := raw.(type) {
	case bool:
		return x, true
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "true", "yes", "on":
			return true, true
		case "0", "false", "no", "off":
			return false, true
		}
	}
	return false, false
}

// expandPath expands a leading ~ and makes a path absolute, so that the
// value exported to the environment means the same from any directory.
func expandPath(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, p[1:])
	}
	return filepath.Abs(p)
}

// suggest returns the candidate nearest to s when it is close enough to be
// a plausible typo, else "".
func suggest(s string, cands []string) string {
	best, bestD := "", 3
	for _, c := range cands {
		if d := distance(strings.ToLower(s), strings.ToLower(c)); d < bestD && d <= len(c)/2 {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein edit distance.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// RunDevice is the device `tgc run` uses: the configured one, else the
// best available.
func (c *Config) RunDevice() string {
	if c.Device != "" {
		return c.Device
	}
	return backend.Default()
}
