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
	"tgc/pkg/fileaccess"
)

// FileName is the configuration file looked for in the current directory.
const FileName = "tgc.yaml"

// MaxFileSize bounds a config file.
const MaxFileSize = 1 << 20

// MaxDebug is the highest DEBUG level.
const MaxDebug = 7

// Config is tgc's configuration.
type Config struct {
	Device string `mapstructure:"device"` // "" = best available (backend.Default)
	Debug  int    `mapstructure:"debug"`  // tinygrad's DEBUG 0..7
	Beam   int    `mapstructure:"beam"`   // kernel search width (0 = heuristics)
	// BeamBudget bounds the search of one kernel (wall clock).
	BeamBudget time.Duration `mapstructure:"beam_budget"`
	Seed       uint64        `mapstructure:"seed"`      // random seed, used when SeedSet
	MaxSteps   uint64        `mapstructure:"max_steps"` // script step limit, 0 = the script default
	Cache      string        `mapstructure:"cache"`     // kernel cache directory ("" = backend default)
	Quiet      bool          `mapstructure:"quiet"`     // no summary line
	NoColor    bool          `mapstructure:"no_color"`  // no ANSI colours (also NO_COLOR)
	// AllowPath are folders (or files) scripts may read and write besides
	// their own folder and the current one (absolute, existing).
	AllowPath []string `mapstructure:"allow_path"`

	SeedSet bool   `mapstructure:"-"` // a seed was given somewhere
	File    string `mapstructure:"-"` // the config file read, "" if none
	// From names the source of each key that did not come from the
	// defaults: "--debug", "DEBUG", "tgc.yaml: debug", ...
	From map[string]string `mapstructure:"-"`
}

// key describes one setting: its name in tgc.yaml and viper, its flag and
// the environment variables that set it, highest precedence first.
type key struct {
	name string
	flag string
	env  []string
}

var keys = []key{
	{"device", "device", []string{"TGC_DEVICE", "DEVICE", "DEV"}},
	{"debug", "debug", []string{"TGC_DEBUG", "DEBUG"}},
	{"beam", "beam", []string{"TGC_BEAM", "BEAM"}},
	{"beam_budget", "beam-budget", []string{"TGC_BEAM_BUDGET"}},
	{"seed", "seed", []string{"TGC_SEED"}},
	{"max_steps", "max-steps", []string{"TGC_MAX_STEPS"}},
	{"cache", "cache", []string{"TGC_CACHE"}},
	{"quiet", "quiet", nil},
	{"no_color", "no-color", nil},
	{"allow_path", "allow-path", []string{"TGC_ALLOW_PATH"}},
}

// Keys lists the keys tgc.yaml may hold.
func Keys() []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.name)
	}
	return out
}

// Options says where Load looks.
type Options struct {
	// Flags are the command's flags; those named like a key (device,
	// debug, beam, seed, max-steps, cache, quiet, no-color) are bound
	// when present. A "config" flag names the config file.
	Flags *pflag.FlagSet
	// ConfigFile is an explicit config file (it must exist); "" looks for
	// tgc.yaml in Dir. A changed "config" flag overrides it.
	ConfigFile string
	// Dir is where tgc.yaml is looked for ("" = current directory).
	Dir string
	// Devices are the valid device names (nil = backend.Names()).
	Devices []string
	// NoExport keeps Load from setting TGC_CACHE in the environment.
	NoExport bool
}

// Load reads, merges and validates the configuration.
func Load(opts Options) (*Config, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	for _, k := range keys {
		if err := v.BindEnv(append([]string{k.name}, k.env...)...); err != nil {
			return nil, err
		}
		if opts.Flags != nil {
			if f := opts.Flags.Lookup(k.flag); f != nil {
				if err := v.BindPFlag(k.name, f); err != nil {
					return nil, err
				}
			}
		}
	}

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
	if _, err := os.Stat(file); err == nil || explicit {
		if err := readFile(v, file); err != nil {
			return nil, err
		}
		cfg.File = file
	}

	for _, k := range keys {
		raw, from := v.Get(k.name), source(k, v, opts.Flags, cfg.File)
		if from == "" {
			continue
		}
		if from == "--"+k.flag {
			// A repeatable flag: its values as given (viper would split
			// them at commas).
			if vals, err := opts.Flags.GetStringArray(k.flag); err == nil {
				raw = vals
			}
		}
		cfg.From[k.name] = from
		if err := set(cfg, k.name, raw, from, opts.Devices); err != nil {
			return nil, err
		}
	}
	if os.Getenv("NO_COLOR") != "" { // https://no-color.org: any non-empty value
		cfg.NoColor = true
	}
	if cfg.Cache != "" && !opts.NoExport {
		// The backend reads the cache directory from the environment.
		if err := os.Setenv("TGC_CACHE", cfg.Cache); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// readFile reads a config file into v, rejecting unknown keys.
func readFile(v *viper.Viper, file string) error {
	data, err := fileaccess.ReadFile(file, MaxFileSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("config file %s does not exist", file)
		}
		return fmt.Errorf("cannot read config file: %w", err)
	}
	if err := v.ReadConfig(strings.NewReader(string(data))); err != nil {
		return fmt.Errorf("%s: %v", file, unwrapAll(err))
	}
	// Typo protection: every key of the file must be one we know.
	fv := viper.New()
	fv.SetConfigType("yaml")
	_ = fv.ReadConfig(strings.NewReader(string(data)))
	known := Keys()
	var bad []string
	for _, k := range fv.AllKeys() {
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
		return fmt.Errorf("%s: %s; known keys: %s", file, strings.Join(bad, ", "), strings.Join(known, ", "))
	}
	return nil
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

// source names where viper's value for k comes from ("" = default), by the
// same precedence viper applies.
func source(k key, v *viper.Viper, flags *pflag.FlagSet, file string) string {
	if flags != nil {
		if f := flags.Lookup(k.flag); f != nil && f.Changed {
			return "--" + k.flag
		}
	}
	for _, e := range k.env {
		if os.Getenv(e) != "" {
			return e
		}
	}
	if file != "" && v.InConfig(k.name) {
		return file + ": " + k.name
	}
	return ""
}

// set validates one raw value and stores it.
func set(cfg *Config, name string, raw any, from string, devices []string) error {
	// from is "--flag", "ENV" or "FILE: key"; errors read
	// `invalid DEBUG value "abc": want ...` or `tgc.yaml: invalid debug value ...`.
	prefix := ""
	if file, k, ok := strings.Cut(from, ": "); ok {
		prefix, from = file+": ", k
	}
	bad := func(want string) error {
		return fmt.Errorf("%sinvalid %s value %s: want %s", prefix, from, quote(raw), want)
	}
	switch name {
	case "device":
		s, ok := raw.(string)
		if !ok {
			return bad("a device name")
		}
		d, err := checkDevice(s, prefix, from, devices)
		if err != nil {
			return err
		}
		cfg.Device = d
	case "debug":
		n, ok := integer(raw, 0, MaxDebug)
		if !ok {
			return bad(fmt.Sprintf("an integer 0..%d", MaxDebug))
		}
		cfg.Debug = int(n)
	case "beam":
		n, ok := integer(raw, 0, math.MaxInt32)
		if !ok {
			return bad("a non-negative integer")
		}
		cfg.Beam = int(n)
	case "beam_budget":
		d, ok := duration(raw)
		if !ok {
			return bad("a positive duration such as 30s or 2m")
		}
		cfg.BeamBudget = d
	case "seed":
		n, ok := unsigned(raw)
		if !ok {
			return bad("an integer 0..18446744073709551615")
		}
		cfg.Seed, cfg.SeedSet = n, true
	case "max_steps":
		n, ok := unsigned(raw)
		if !ok {
			return bad("a non-negative integer (0 = default limit)")
		}
		cfg.MaxSteps = n
	case "cache":
		s, ok := raw.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return bad("a directory path")
		}
		p, err := expandPath(s)
		if err != nil {
			return fmt.Errorf("%sinvalid %s value %s: %v", prefix, from, quote(raw), err)
		}
		cfg.Cache = p
	case "allow_path":
		paths, ok := pathList(raw)
		if !ok {
			return bad("a folder path or a list of them")
		}
		cfg.AllowPath = cfg.AllowPath[:0]
		for _, s := range paths {
			p, err := expandPath(s)
			if err == nil {
				_, err = os.Stat(p)
			}
			if err != nil {
				return fmt.Errorf("%sinvalid %s value %s: %v", prefix, from, strconv.Quote(s), unwrapAll(err))
			}
			cfg.AllowPath = append(cfg.AllowPath, p)
		}
	case "quiet", "no_color":
		b, ok := boolean(raw)
		if !ok {
			return bad("true or false")
		}
		if name == "quiet" {
			cfg.Quiet = b
		} else {
			cfg.NoColor = b
		}
	}
	return nil
}

// pathList accepts a list of non-empty paths: a YAML list or string, a
// repeated flag, or an environment value separated like PATH.
func pathList(raw any) ([]string, bool) {
	var out []string
	switch x := raw.(type) {
	case string:
		out = filepath.SplitList(x)
	case []string:
		out = x
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
	default:
		return nil, false
	}
	for _, s := range out {
		if strings.TrimSpace(s) == "" {
			return nil, false
		}
	}
	return out, len(out) > 0
}

// FileSettings lists the settings the config file gave, as "key = value"
// (DEBUG=1 prints them: a tgc.yaml can redirect the kernel cache or widen
// what scripts may access).
func (c *Config) FileSettings() []string {
	if c.File == "" {
		return nil
	}
	rv := reflect.ValueOf(c).Elem()
	var out []string
	for _, k := range keys {
		if !strings.HasPrefix(c.From[k.name], c.File+": ") {
			continue
		}
		for i := range rv.NumField() {
			if rv.Type().Field(i).Tag.Get("mapstructure") == k.name {
				out = append(out, fmt.Sprintf("%s = %v", k.name, rv.Field(i).Interface()))
			}
		}
	}
	return out
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

// checkDevice normalizes a device name and checks that it is known.
func checkDevice(s, prefix, from string, devices []string) (string, error) {
	if devices == nil {
		devices = backend.Names()
	}
	d := strings.ToUpper(strings.TrimSpace(s))
	if slices.Contains(devices, d) {
		return d, nil
	}
	msg := fmt.Sprintf("%sinvalid %s value %q: unknown device", prefix, from, s)
	if sug := suggest(d, devices); sug != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", sug)
	}
	return "", fmt.Errorf("%s; known devices: %s", msg, strings.Join(devices, ", "))
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
