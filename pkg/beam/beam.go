// Package beam is BEAM search: it picks a kernel's optimizations (ir.Opt
// lists) by compiling and timing candidates on the device instead of
// trusting the heuristic. Every candidate's output is checked against the
// unoptimized kernel on the same random inputs before it may win, and the
// winner is stored on disk keyed by the kernel, the device and its
// compiler, so a later run reuses it without searching.
package beam

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/fileaccess"
	"tgc/pkg/ir"
)

// DefaultBudget bounds the search of one kernel when Options.Budget is 0.
const DefaultBudget = 20 * time.Second

// Options configure a Searcher.
type Options struct {
	Width  int           // candidates kept per round (BEAM=N)
	Budget time.Duration // wall clock for one kernel's search after its reference run (0: DefaultBudget)
	Debug  int           // 1: one line per search, 2: per cache hit and rejected candidate, 3: every candidate
	Out    io.Writer     // where the lines go (nil: nowhere)
	Dir    string        // where results are stored ("" = backend.CacheDir()/beam)
}

// Stats count what the searcher did.
type Stats struct {
	Searched   int           // kernels searched
	Reused     int           // kernels whose result came from the store
	Candidates int           // candidates compiled and timed
	Rejected   int           // candidates whose output differed from the unoptimized kernel
	Time       time.Duration // spent searching
}

// Searcher searches kernels for one device.
type Searcher struct {
	dev   backend.Device
	tgt   ir.Target // the device's target: its vector width sizes the heuristic and the actions
	opts  Options
	mu    sync.Mutex
	mem   map[string][]ir.Opt
	Stats Stats
}

// New makes a searcher for a device.
func New(dev backend.Device, opts Options) *Searcher {
	if opts.Width < 1 {
		opts.Width = 1
	}
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Join(backend.CacheDir(), "beam")
	}
	s := &Searcher{dev: dev, opts: opts, mem: map[string][]ir.Opt{}}
	if t, ok := dev.(interface{ Target() ir.Target }); ok {
		s.tgt = t.Target()
	}
	return s
}

// Entry is one stored result.
type Entry struct {
	Kernel     string   `json:"kernel"`
	Opts       []ir.Opt `json:"opts"`
	Seconds    float64  `json:"seconds"`
	Heuristic  float64  `json:"heuristic_seconds"`
	Base       float64  `json:"base_seconds"`
	Candidates int      `json:"candidates"`
	Width      int      `json:"width"`
}

// Choose is the ir.Target hook: the stored result for k, or a new search.
// A kernel that cannot be searched (or whose search fails) gets the
// heuristic's opts.
func (s *Searcher) Choose(k *ir.Kernel) []ir.Opt {
	if !ir.Searchable(k) || dataDependentIndex(k) {
		return s.tgt.HeuristicOpts(k)
	}
	key := s.key(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if opts, ok := s.mem[key]; ok {
		return opts
	}
	if e, ok := s.load(key, k); ok {
		s.Stats.Reused++
		s.logf(2, "beam %s: stored %s (%.3f ms, heuristic %.3f ms)\n", k.Name, ir.FormatOpts(e.Opts), e.Seconds*1e3, e.Heuristic*1e3)
		s.mem[key] = e.Opts
		return e.Opts
	}
	e, err := s.search(k)
	if err != nil {
		s.logf(1, "beam %s: search failed, using the heuristic: %v\n", k.Name, err)
		opts := s.tgt.HeuristicOpts(k)
		s.mem[key] = opts
		return opts
	}
	s.store(key, e)
	s.mem[key] = e.Opts
	return e.Opts
}

// Lookup returns the stored result for k without searching (tgc emit uses
// it: emitting runs nothing, so it cannot time candidates).
func (s *Searcher) Lookup(k *ir.Kernel) ([]ir.Opt, bool) {
	if !ir.Searchable(k) {
		return nil, false
	}
	key := s.key(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if opts, ok := s.mem[key]; ok {
		return opts, true
	}
	if e, ok := s.load(key, k); ok {
		s.Stats.Reused++
		s.mem[key] = e.Opts
		return e.Opts, true
	}
	return nil, false
}

// key addresses a kernel's result: its structure (not its name), the
// device's fingerprint, and the search width.
func (s *Searcher) key(k *ir.Kernel) string {
	dump := k.Dump()
	if i := strings.IndexByte(dump, '\n'); i >= 0 {
		dump = dump[i+1:] // "kernel NAME"
	}
	fp := s.dev.Name()
	if f, ok := s.dev.(interface{ Fingerprint() string }); ok {
		fp = f.Fingerprint()
	}
	h := sha256.New()
	fmt.Fprintf(h, "beam v1\x00%s\x00%d\x00%s", fp, s.opts.Width, dump)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Searcher) path(key string) string { return filepath.Join(s.opts.Dir, key+".json") }

// maxEntrySize bounds a stored entry (they are a few hundred bytes).
const maxEntrySize = 1 << 16

// maxOpts bounds a stored opts list (a search adds one per round).
const maxOpts = 32

// load reads a stored entry. One that is not a regular file, does not
// parse, or whose opts are not a list ApplyOpts accepts for k is ignored
// with a warning (and overwritten by the new search): a stored file is
// input like any other, never trusted.
func (s *Searcher) load(key string, k *ir.Kernel) (Entry, bool) {
	path := s.path(key)
	data, err := fileaccess.ReadFile(path, maxEntrySize)
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{}, false
	}
	var e Entry
	if err == nil {
		err = json.Unmarshal(data, &e)
	}
	if err == nil {
		err = validate(e, k, s.tgt)
	}
	if err != nil {
		s.logf(0, "tgc: warning: BEAM: ignoring the stored result %s: %v\n", path, err)
		return Entry{}, false
	}
	return e, true
}

// validate checks a stored entry against the kernel it is for: the opts
// kinds and amounts (checked before any arithmetic on them), then the whole
// list through the target's ApplyOpts, and the timings (printed) are
// finite.
func validate(e Entry, k *ir.Kernel, t ir.Target) error {
	if len(e.Opts) > maxOpts {
		return fmt.Errorf("%d opts, more than %d", len(e.Opts), maxOpts)
	}
	for _, o := range e.Opts {
		switch o.Kind {
		case ir.OptUpcast, ir.OptUnroll, ir.OptPad:
			if o.Amt < 2 || o.Amt > ir.MaxLanes {
				return fmt.Errorf("%s: amount out of range 2..%d", o, ir.MaxLanes)
			}
		case ir.OptOuter:
			if o.Amt != 0 {
				return fmt.Errorf("%s: an amount (%d) where none belongs", o, o.Amt)
			}
		case ir.OptKBlock, ir.OptGroup, ir.OptTile:
			if o.Amt < 2 {
				return fmt.Errorf("%s: amount out of range", o)
			}
		default:
			return fmt.Errorf("unknown opt kind %q", o.Kind)
		}
	}
	if _, err := t.ApplyOpts(k, e.Opts); err != nil {
		return err
	}
	for _, v := range []float64{e.Seconds, e.Heuristic, e.Base} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("timing %v is not a duration", v)
		}
	}
	return nil
}

// store writes an entry atomically (temp file, then rename), so concurrent
// tgc processes never see half an entry.
func (s *Searcher) store(key string, e Entry) {
	if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
		s.logf(1, "beam: cannot store results: %v\n", err)
		return
	}
	data, _ := json.MarshalIndent(e, "", "  ")
	tmp, err := os.CreateTemp(s.opts.Dir, "entry-*")
	if err != nil {
		s.logf(1, "beam: cannot store results: %v\n", err)
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return
	}
	if err := os.Rename(tmp.Name(), s.path(key)); err != nil {
		os.Remove(tmp.Name())
	}
}

func (s *Searcher) logf(level int, format string, args ...any) {
	if s.opts.Out != nil && s.opts.Debug >= level {
		fmt.Fprintf(s.opts.Out, format, args...)
	}
}

// dataDependentIndex reports a load whose address depends on loaded data:
// random inputs could send it out of bounds, so such kernels are not run
// on made-up data.
func dataDependentIndex(k *ir.Kernel) bool {
	found := false
	ir.Walk(k.Stores, func(e *ir.Expr) {
		if e.Op == ir.OpLoad && !found {
			ir.Walk([]*ir.Expr{e.Src[0]}, func(x *ir.Expr) {
				if x.Op == ir.OpLoad {
					found = true
				}
			})
		}
	})
	return found
}

// candidate is one opts list and its measurement.
type candidate struct {
	opts []ir.Opt
	key  string
	secs float64
	must bool // measured even past the deadline (the heuristic: the fallback)
}

// canonical sorts an opts list into one form per resulting kernel: a
// PADTO or a GROUP, one upcast per axis (amounts multiplied), then the outer axis,
// the tiled axis, then the blocked reduce axis.
func canonical(opts []ir.Opt) []ir.Opt {
	amts := map[ir.OptKind]map[int]int64{ir.OptUpcast: {}, ir.OptUnroll: {}}
	outer := -1
	var kblock, tile *ir.Opt
	for _, o := range opts {
		if m, ok := amts[o.Kind]; ok {
			m[o.Axis] = max(m[o.Axis], 1) * o.Amt
		} else if o.Kind == ir.OptOuter {
			outer = o.Axis
		} else if o.Kind == ir.OptKBlock {
			kblock = &o
		} else if o.Kind == ir.OptTile {
			tile = &o
		}
	}
	var out []ir.Opt
	for _, o := range opts {
		if o.Kind == ir.OptPad || o.Kind == ir.OptGroup { // PADTO first (the others see its sizes)
			out = append(out, o)
		}
	}
	for _, kind := range []ir.OptKind{ir.OptUpcast, ir.OptUnroll} {
		axes := make([]int, 0, len(amts[kind]))
		for a := range amts[kind] {
			axes = append(axes, a)
		}
		sort.Ints(axes)
		for _, a := range axes {
			out = append(out, ir.Opt{Kind: kind, Axis: a, Amt: amts[kind][a]})
		}
	}
	if outer >= 0 {
		out = append(out, ir.Opt{Kind: ir.OptOuter, Axis: outer})
	}
	if tile != nil {
		out = append(out, *tile)
	}
	if kblock != nil {
		out = append(out, *kblock)
	}
	return out
}

// search runs the beam: start from no opts and the heuristic's, extend the
// best Width candidates by one action per round, stop when a round brings
// no improvement or the budget is spent.
func (s *Searcher) search(k *ir.Kernel) (Entry, error) {
	start := time.Now()
	tgt := s.tgt
	tgt.Choose = nil
	b, err := newBench(s.dev, tgt, k)
	if err != nil {
		return Entry{}, err
	}
	defer b.free()
	// The budget is for the search: the unoptimized kernel's one reference
	// run (seconds, for a big convolution) does not count.
	deadline := time.Now().Add(s.opts.Budget)
	seen := map[string]bool{}
	var all []candidate
	heur := canonical(s.tgt.HeuristicOpts(k))
	measure := func(lists [][]ir.Opt) []candidate {
		var fresh []candidate
		for _, l := range lists {
			l = canonical(l)
			key := ir.FormatOpts(l)
			if seen[key] {
				continue
			}
			seen[key] = true
			fresh = append(fresh, candidate{opts: l, key: key, must: key == ir.FormatOpts(heur)})
		}
		res := b.measure(fresh, deadline, s)
		all = append(all, res...)
		return res
	}
	// The heuristic first: it is the one to beat and the fallback. Then
	// every single decision on the plain kernel.
	first := measure([][]ir.Opt{heur})
	if len(first) == 0 {
		return Entry{}, fmt.Errorf("the heuristic's kernel failed its check")
	}
	// With them, the heuristic plus cache blocks (TILE and KBLOCK
	// together: either alone is no step forward).
	singles := s.tgt.BlockSeeds(k, heur)
	for _, a := range s.tgt.Actions(k, nil) {
		singles = append(singles, []ir.Opt{a})
	}
	first = append(first, measure(singles)...)
	e := Entry{Kernel: k.Name, Width: s.opts.Width, Base: b.baseSecs, Heuristic: math.NaN()}
	for _, c := range first {
		if c.key == ir.FormatOpts(heur) {
			e.Heuristic = c.secs
		}
	}
	beam := best(first, s.opts.Width)
	bestSecs := beam[0].secs
	for time.Now().Before(deadline) {
		var next [][]ir.Opt
		for _, c := range beam {
			for _, a := range s.tgt.Actions(k, c.opts) {
				next = append(next, append(append([]ir.Opt{}, c.opts...), a))
			}
		}
		res := measure(next)
		if len(res) == 0 {
			break
		}
		beam = best(append(res, beam...), s.opts.Width)
		if beam[0].secs >= bestSecs*0.99 { // no real improvement: done
			break
		}
		bestSecs = beam[0].secs
	}
	win := best(all, 1)[0]
	e.Opts, e.Seconds, e.Candidates = win.opts, win.secs, len(all)
	if math.IsNaN(e.Heuristic) {
		e.Heuristic = 0
	}
	took := time.Since(start)
	s.Stats.Searched++
	s.Stats.Candidates += len(all)
	s.Stats.Time += took
	s.logf(1, "beam %s: %.3f ms -> %.3f ms %s (heuristic %.3f ms, unoptimized %.3f ms), %d candidates in %.1f s\n",
		k.Name, e.Base*1e3, e.Seconds*1e3, ir.FormatOpts(e.Opts), e.Heuristic*1e3, e.Base*1e3, len(all), took.Seconds())
	return e, nil
}

// best returns the n fastest candidates (ties: the shorter opts list).
func best(cs []candidate, n int) []candidate {
	cs = append([]candidate{}, cs...)
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].secs != cs[j].secs {
			return cs[i].secs < cs[j].secs
		}
		return len(cs[i].opts) < len(cs[j].opts)
	})
	return cs[:min(n, len(cs))]
}
