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
	// AllowPath are folders (or files) scripts may read and write besides
	// their own folder and the current one (absolute, existing).
	AllowPath []string

	SeedSet bool   // a seed was given somewhere
	File    string // the config file read, "" if none
	// From names the source of each key that did not come from the
	// defaults: "--debug", "DEBUG", "tgc.yaml: debug", ...
	From map[string]string
}

// key is one setting: its name in tgc.yaml (the flag is the name with -
// for _), the environment variables that set it (highest precedence
// first: TGC_*, then tinygrad's), how its flag is declared, the Config
// field it fills, and check, which turns a raw value (flag: typed;
// environment: text; tgc.yaml: a YAML value) into the field's type or
// says what was wrong ("want an integer 0..7"); Load adds where the value
// came from.
type key struct {
	name  string
	env   []string
	flag  flagSpec
	field func(c *Config) any // a pointer to the key's field
	check func(raw any, o *Options) (any, error)
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
	listFlag // repeatable: --allow-path A --allow-path B
)

// keys is every setting, in the order tgc.yaml's keys are listed.
var keys = []key{
	{name: "device", env: []string{"TGC_DEVICE", "DEVICE", "DEV"},
		field: func(c *Config) any { return &c.Device }, check: checkDevice,
		flag: flagSpec{stringFlag, "", "device (default: the best available; see tgc devices)"}},
	{name: "debug", env: []string{"TGC_DEBUG", "DEBUG"},
		field: func(c *Config) any { return &c.Debug }, check: intIn(0, MaxDebug, fmt.Sprintf("an integer 0..%d", MaxDebug)),
		flag: flagSpec{intFlag, "", "debug output 0..7 like tinygrad's DEBUG: 1 schedule, 2 kernel launches, 3 sources, 4 machine code, 5 IR after each pass"}},
	{name: "beam", env: []string{"TGC_BEAM", "BEAM"},
		field: func(c *Config) any { return &c.Beam }, check: intIn(0, math.MaxInt32, "a non-negative integer"),
		flag: flagSpec{intFlag, "", "search each kernel's optimizations with this beam width, timing candidates on the device (like tinygrad's BEAM); results are stored and reused"}},
	{name: "beam_budget", env: []string{"TGC_BEAM_BUDGET"},
		field: func(c *Config) any { return &c.BeamBudget }, check: checkDuration,
		flag: flagSpec{stringFlag, "", "wall-clock limit of one kernel's search, e.g. 30s (default 20s)"}},
	{name: "seed", env: []string{"TGC_SEED"},
		field: func(c *Config) any { return &c.Seed }, check: checkUnsigned("an integer 0..18446744073709551615"),
		flag: flagSpec{uintFlag, "", "random seed (as Tensor.manual_seed)"}},
	{name: "max_steps", env: []string{"TGC_MAX_STEPS"},
		field: func(c *Config) any { return &c.MaxSteps }, check: checkUnsigned("a non-negative integer (0 = default limit)"),
		flag: flagSpec{uintFlag, "", "stop the script after this many execution steps (0 = default limit)"}},
	{name: "cache", env: []string{"TGC_CACHE"},
		field: func(c *Config) any { return &c.Cache }, check: checkDir,
		flag: flagSpec{stringFlag, "", "compiled-kernel cache directory (default $TGC_CACHE or the user cache dir)"}},
	{name: "quiet",
		field: func(c *Config) any { return &c.Quiet }, check: checkBool,
		flag: flagSpec{boolFlag, "q", "no summary line"}},
	// https://no-color.org: NO_COLOR set to any non-empty value turns
	// colours off; a flag (or tgc.yaml below it) says otherwise.
	{name: "no_color", env: []string{"NO_COLOR"}, envTrue: true,
		field: func(c *Config) any { return &c.NoColor }, check: checkBool,
		flag: flagSpec{boolFlag, "", "no colours in the output (also NO_COLOR=1)"}},
	{name: "allow_path", env: []string{"TGC_ALLOW_PATH"},
		field: func(c *Config) any { return &c.AllowPath }, check: checkPaths,
		flag: flagSpec{listFlag, "", "a folder (or file) the script may read and write besides its own folder and the current one (repeatable; see docs/language.md#file-access)"}},
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
		case listFlag:
			fs.StringArrayP(name, f.short, nil, f.usage)
		default:
			fs.StringP(name, f.short, "", f.usage)
		}
	}
}

// Options says where Load looks.
type Options struct {
	// Flags are the command's flags; those named like a key (device,
	// debug, beam, seed, max-steps, cache, quiet, no-color, allow-path)
	// are read when set. A "config" flag names the config file.
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
		v, err := k.check(raw, &opts)
		if err != nil {
			// from is "--flag", "ENV" or "FILE: key"; errors read
			// `invalid DEBUG value "abc": want ...` or
			// `tgc.yaml: invalid debug value ...`.
			prefix := ""
			if file, name, ok := strings.Cut(from, ": "); ok {
				prefix, from = file+": ", name
			}
			shown := quote(raw)
			var part *badPart
			if errors.As(err, &part) {
				shown, err = strconv.Quote(part.value), part.err
			}
			return nil, fmt.Errorf("%sinvalid %s value %s: %v", prefix, from, shown, err)
		}
		reflect.ValueOf(k.field(cfg)).Elem().Set(reflect.ValueOf(v))
	}
	_, cfg.SeedSet = cfg.From["seed"]
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
// --debug=9 as 9, --beam-budget=-3s as "-3s"; a repeated flag gives its
// values as given).
func flagValue(f *pflag.Flag) any {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
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
	data, err := fileaccess.ReadFile(file, MaxFileSize)
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

// FileSettings lists the settings the config file gave, as "key = value"
// (DEBUG=1 prints them: a tgc.yaml can redirect the kernel cache or widen
// what scripts may access).
func (c *Config) FileSettings() []string {
	if c.File == "" {
		return nil
	}
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(c.From[k.name], c.File+": ") {
			out = append(out, fmt.Sprintf("%s = %v", k.name, reflect.ValueOf(k.field(c)).Elem().Interface()))
		}
	}
	return out
}

// ---- checking values ----

// want is the error of a value that is not what the key takes.
func want(what string) error { return errors.New("want " + what) }

// badPart is an error about one element of a value (a path of a list):
// Load shows that element rather than the whole value.
type badPart struct {
	value string
	err   error
}

func (e *badPart) Error() string { return e.err.Error() }

func intIn(lo, hi int64, what string) func(any, *Options) (any, error) {
	return func(raw any, _ *Options) (any, error) {
		n, ok := integer(raw, lo, hi)
		if !ok {
			return nil, want(what)
		}
		return int(n), nil
	}
}

func checkUnsigned(what string) func(any, *Options) (any, error) {
	return func(raw any, _ *Options) (any, error) {
		n, ok := unsigned(raw)
		if !ok {
			return nil, want(what)
		}
		return n, nil
	}
}

func checkBool(raw any, _ *Options) (any, error) {
	b, ok := boolean(raw)
	if !ok {
		return nil, want("true or false")
	}
	return b, nil
}

func checkDuration(raw any, _ *Options) (any, error) {
	d, ok := duration(raw)
	if !ok {
		return nil, want("a positive duration such as 30s or 2m")
	}
	return d, nil
}

// checkDevice normalizes a device name and checks that it is known.
func checkDevice(raw any, o *Options) (any, error) {
	s, ok := raw.(string)
	if !ok {
		return nil, want("a device name")
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
		return nil, fmt.Errorf("%s; known devices: %s", msg, strings.Join(devices, ", "))
	}
	return d, nil
}

// checkDir makes a directory path absolute (~ expanded).
func checkDir(raw any, _ *Options) (any, error) {
	s, ok := raw.(string)
	if !ok || strings.TrimSpace(s) == "" {
		return nil, want("a directory path")
	}
	return expandPath(s)
}

// checkPaths takes existing paths, made absolute.
func checkPaths(raw any, _ *Options) (any, error) {
	paths, ok := pathList(raw)
	if !ok {
		return nil, want("a folder path or a list of them")
	}
	var out []string
	for _, s := range paths {
		p, err := expandPath(s)
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			return nil, &badPart{s, unwrapAll(err)}
		}
		out = append(out, p)
	}
	return out, nil
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
