package script

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"tgc/pkg/report"
	"tgc/pkg/script/nnlib"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tensor"
)

// TrainSession connects a run of a training script to the program that
// started it (tgc train): settings go in as the predeclared dict config,
// metrics recorded with report(...) and the progress of trange loops come
// out.
type TrainSession struct {
	// Config is visible to the script as the read-only dict config;
	// values are ints, floats, strings, bools or nil (None).
	Config map[string]any
	// Recorder receives report(...) metrics; nil: a new one.
	Recorder *report.Recorder
	// Every is the interval of plain progress lines when the output is
	// not a terminal (0: about ten lines per loop).
	Every int

	// Filled by the run: steps completed in trange loops, the time spent
	// in them, and the batch size given to trange (0 if none).
	Steps     int
	TrainTime time.Duration
	Batch     int
}

// RunTraining runs a script with a training session: config holds
// s.Config, report(...) records into s.Recorder, and trange loops count
// into s.Steps and s.TrainTime.
func RunTraining(opts Options, s *TrainSession) error {
	if s.Recorder == nil {
		s.Recorder = report.NewRecorder()
	}
	opts.Train = s
	return Run(opts)
}

// DataDir is the session's "data" setting (the MNIST folder), or "".
func (in *interp) DataDir() string {
	d, _ := in.train.sess.Config["data"].(string)
	return d
}

// configDict is the predeclared config: the session's settings as a
// frozen dict (empty outside tgc train).
func (in *interp) configDict() *starlark.Dict {
	d := starlark.NewDict(0)
	cfg := in.train.sess.Config
	for _, k := range report.SortedKeys(cfg) {
		_ = d.SetKey(starlark.String(k), configValue(cfg[k]))
	}
	d.Freeze()
	return d
}

// configValue is a setting as a Python value.
func configValue(x any) starlark.Value {
	switch x := x.(type) {
	case nil:
		return starlark.None
	case int:
		return starlark.MakeInt(x)
	case float64:
		return starlark.Float(x)
	case string:
		return starlark.String(x)
	case bool:
		return starlark.Bool(x)
	}
	return starlark.String(fmt.Sprint(x))
}

// trainState is the per-run state of report() and trange.
type trainState struct {
	sess     *TrainSession // the run's session (an empty one outside tgc train)
	nextStep int           // step of a report() without step=
}

func trainStateOf(c *pyrt.Call) *trainState { return &interpOf(c.Thread).train }

// metricValue converts a report() value: a number or a one-element tensor.
func metricValue(c *pyrt.Call, name string, v starlark.Value) (float64, error) {
	if t, ok := v.(*tensorlib.Tensor); ok {
		if t.Tensor().Numel() != 1 {
			return 0, fmt.Errorf("report: %s is a tensor of shape %s, want one element", name, tensor.FormatShape(t.Tensor().Shape()))
		}
		vals, err := tensorlib.ReadValues(c, t.Tensor())
		if err != nil {
			return 0, err
		}
		return vals[0], nil
	}
	f, err := tensorlib.ToFloat(v)
	if err != nil {
		return 0, fmt.Errorf("report: %s: got %s, want a number or a one-element Tensor", name, v.Type())
	}
	return f, nil
}

// reportFn is report(step=None, **metrics): records each metric (a number
// or a one-element tensor; None is skipped) at step (default: one past the
// last reported step). A loss that is NaN or infinite stops the script with
// an error naming the step.
func reportFn(c *pyrt.Call) (starlark.Value, error) {
	if len(c.Args) > 0 {
		return nil, fmt.Errorf("report: takes keyword arguments only, e.g. report(step=i, loss=loss)")
	}
	st := trainStateOf(c)
	step := st.nextStep
	type kv struct {
		name string
		val  starlark.Value
	}
	var metrics []kv
	for _, p := range c.Kwargs {
		name := string(p[0].(starlark.String))
		if name == "step" {
			n, err := tensorlib.ToInt(p[1])
			if err != nil {
				return nil, fmt.Errorf("report: step: %v", err)
			}
			step = n
			continue
		}
		metrics = append(metrics, kv{name, p[1]})
	}
	for _, m := range metrics {
		if m.val == starlark.None {
			continue
		}
		f, err := metricValue(c, m.name, m.val)
		if err != nil {
			return nil, err
		}
		if strings.Contains(m.name, "loss") && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, fmt.Errorf("%s is %v at step %d: training stopped (try a lower learning rate)", m.name, f, step)
		}
		st.sess.Recorder.Add(m.name, step, f)
	}
	st.nextStep = step + 1
	return starlark.None, nil
}

// trangeFn is trange(n, desc="", batch=0, every=0): range(n) that shows
// progress (see progress).
func trangeFn(c *pyrt.Call) (starlark.Value, error) {
	var n tensorlib.IntArg
	desc := ""
	batch, every := tensorlib.IntArg(0), tensorlib.IntArg(0)
	if err := c.Unpack("n", &n, "desc?", &desc, "batch?", &batch, "every?", &every); err != nil {
		return nil, err
	}
	if n < 0 || batch < 0 {
		return nil, fmt.Errorf("trange: n and batch must not be negative")
	}
	st := trainStateOf(c)
	if every == 0 {
		every = tensorlib.IntArg(st.sess.Every)
	}
	return &progress{total: int(n), desc: desc, batch: int(batch), every: int(every), st: st, w: interpOf(c.Thread).stdout, id: tensorlib.NextID()}, nil
}

// progress is the value of trange(n): iterating yields 0..n-1 and marks a
// step done each time the loop comes back (a progress bar on a terminal,
// plain lines otherwise, via report.NewBar).
type progress struct {
	total, batch, every int
	desc                string
	st                  *trainState
	w                   io.Writer
	bar                 *report.Bar
	start               time.Time
	done                int
	finished            bool
	id                  uint32
}

var (
	_ starlark.Iterable = (*progress)(nil)
	_ starlark.HasAttrs = (*progress)(nil)
)

func (p *progress) String() string        { return fmt.Sprintf("trange(%d)", p.total) }
func (p *progress) Type() string          { return "trange" }
func (p *progress) Freeze()               {}
func (p *progress) Truth() starlark.Bool  { return starlark.True }
func (p *progress) Hash() (uint32, error) { return p.id, nil }
func (p *progress) AttrNames() []string   { return []string{"n", "set_description", "total"} }

func (p *progress) Attr(name string) (starlark.Value, error) {
	switch name {
	case "total":
		return starlark.MakeInt(p.total), nil
	case "n":
		return starlark.MakeInt(p.done), nil
	case "set_description":
		return pyrt.Builtin("set_description", func(c *pyrt.Call) (starlark.Value, error) {
			var d string
			if err := c.Unpack("desc", &d); err != nil {
				return nil, err
			}
			p.desc = d
			if p.bar != nil {
				p.bar.SetDescription(p.describe())
			}
			return starlark.None, nil
		}), nil
	}
	return nil, fmt.Errorf("%s", pyrt.UnknownAttr("trange", "attribute", name, p.AttrNames()))
}

// describe is the description with the throughput in samples/s when the
// batch size is known.
func (p *progress) describe() string {
	if p.batch <= 0 || p.done == 0 {
		return p.desc
	}
	rate := float64(p.done*p.batch) / time.Since(p.start).Seconds()
	s := fmt.Sprintf("%.0f samples/s", rate)
	if p.desc == "" {
		return s
	}
	return p.desc + " " + s
}

func (p *progress) Iterate() starlark.Iterator {
	if p.bar != nil { // a second loop over the same trange starts again
		p.finish()
	}
	p.bar = report.NewBar(p.w, p.total, p.desc, p.every)
	p.start, p.done, p.finished = time.Now(), 0, false
	if p.batch > 0 {
		p.st.sess.Batch = p.batch
	}
	return &progressIter{p: p}
}

// step marks one loop iteration done.
func (p *progress) step() {
	p.done++
	p.st.sess.Steps++
	p.bar.SetDescription(p.describe())
	p.bar.Step()
}

func (p *progress) finish() {
	if p.finished {
		return
	}
	p.finished = true
	p.bar.Finish()
	p.st.sess.TrainTime += time.Since(p.start)
}

type progressIter struct {
	p *progress
	i int
}

func (it *progressIter) Next(v *starlark.Value) bool {
	p := it.p
	if it.i > 0 && !p.finished {
		p.step()
	}
	if it.i >= p.total {
		p.finish()
		return false
	}
	*v = starlark.MakeInt(it.i)
	it.i++
	return true
}

// Done runs when the loop ends, also by break, return or an error.
func (it *progressIter) Done() { it.p.finish() }

// MNISTDirEnv names the environment variable with the MNIST data folder.
const MNISTDirEnv = nnlib.MNISTDirEnv

// MNISTDir resolves the MNIST data folder of nn.datasets.mnist(): dir
// (tgc train --data) when given, else $TGC_MNIST_DIR, else the GoMNIST
// module in the Go module cache.
func MNISTDir(dir string) (string, error) { return nnlib.MNISTDir(dir, "") }
