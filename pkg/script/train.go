package script

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"go.starlark.net/starlark"

	"tgc/pkg/autograd"
	"tgc/pkg/nn"
	"tgc/pkg/report"
	"tgc/pkg/tensor"
)

// Training in .tg: the autograd methods of Tensor, the nn layers as
// callable objects with their tensors as attributes, the optimizers, and
// load_state_dict.

var trainMethods = map[string]methodFunc{
	"backward":       backwardMethod,
	"gradient":       gradientMethod,
	"detach":         unaryMethod((*tensor.Tensor).Detach),
	"assign":         assignMethod,
	"requires_grad_": requiresGradMethod,
}

func init() {
	for k, v := range trainMethods {
		methods[k] = v
	}
}

// backwardMethod is loss.backward(): gradients accumulate into .grad of
// every tensor that requires grad; it returns the loss.
func backwardMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	if err := c.noArgs(); err != nil {
		return nil, err
	}
	if err := autograd.Backward(t); err != nil {
		return nil, err
	}
	return c.self, nil
}

// gradientMethod is loss.gradient(*targets): the gradients as a list,
// without touching .grad.
func gradientMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	if len(c.kwargs) > 0 {
		return nil, fmt.Errorf("gradient: unexpected keyword argument %s", c.kwargs[0][0])
	}
	if len(c.args) == 0 {
		return nil, fmt.Errorf("gradient: needs at least one target tensor")
	}
	targets, err := tensorList(c, c.args)
	if err != nil {
		return nil, err
	}
	gs, err := autograd.Gradient(t, targets)
	if err != nil {
		return nil, err
	}
	out := make([]starlark.Value, len(gs))
	for i, g := range gs {
		out[i] = NewTensor(g)
	}
	return starlark.NewList(out), nil
}

// assignMethod is t.assign(x): t takes x's value (same shape and dtype; a
// number fills t). It returns t.
func assignMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	var x starlark.Value
	if err := c.unpack("x", &x); err != nil {
		return nil, err
	}
	var v *tensor.Tensor
	if xt, ok := x.(*Tensor); ok {
		v = xt.t
	} else {
		f, err := toFloat(x)
		if err != nil {
			return nil, fmt.Errorf("assign: got %s, want Tensor or number", x.Type())
		}
		v = t.Context().Full(t.Shape(), f, t.DType())
	}
	if r := t.Assign(v); r.Err() != nil {
		return nil, r.Err()
	}
	return c.self, nil
}

// requiresGradMethod is t.requires_grad_(requires_grad=True); returns t.
func requiresGradMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	b := true
	if err := c.unpack("requires_grad?", &b); err != nil {
		return nil, err
	}
	t.SetRequiresGrad(b)
	return c.self, nil
}

// ---- layers ----

// layerField is one tensor attribute of a layer.
type layerField struct {
	name string
	ptr  **tensor.Tensor
}

// layer is an nn layer as a Starlark value: callable, with its tensors as
// attributes (settable, e.g. to load weights).
type layer struct {
	kind    string
	fields  []layerField
	forward func(x *tensor.Tensor) *tensor.Tensor
	wrapped map[*tensor.Tensor]*Tensor // one Starlark value per tensor
	id      uint32
}

var (
	_ starlark.Callable    = (*layer)(nil)
	_ starlark.HasSetField = (*layer)(nil)
)

func newLayer(kind string, forward func(*tensor.Tensor) *tensor.Tensor, fields ...layerField) *layer {
	return &layer{kind: kind, fields: fields, forward: forward, wrapped: map[*tensor.Tensor]*Tensor{}, id: tensorIDs.Add(1)}
}

func (l *layer) String() string        { return "<nn." + l.kind + ">" }
func (l *layer) Type() string          { return l.kind }
func (l *layer) Name() string          { return l.kind }
func (l *layer) Freeze()               {}
func (l *layer) Truth() starlark.Bool  { return starlark.True }
func (l *layer) Hash() (uint32, error) { return l.id, nil }

func (l *layer) AttrNames() []string {
	names := make([]string, len(l.fields))
	for i, f := range l.fields {
		names[i] = f.name
	}
	sort.Strings(names)
	return names
}

// value wraps a field's tensor, the same Starlark value each time.
func (l *layer) value(t *tensor.Tensor) starlark.Value {
	if t == nil {
		return starlark.None
	}
	if v, ok := l.wrapped[t]; ok {
		return v
	}
	v := NewTensor(t)
	l.wrapped[t] = v
	return v
}

func (l *layer) Attr(name string) (starlark.Value, error) {
	for _, f := range l.fields {
		if f.name == name {
			return l.value(*f.ptr), nil
		}
	}
	return nil, fmt.Errorf("%s", unknownAttr("nn."+l.kind, name, l.AttrNames()))
}

func (l *layer) SetField(name string, v starlark.Value) error {
	for _, f := range l.fields {
		if f.name != name {
			continue
		}
		switch x := v.(type) {
		case *Tensor:
			*f.ptr = x.t
			l.wrapped[x.t] = x
			return nil
		case starlark.NoneType:
			*f.ptr = nil
			return nil
		}
		return fmt.Errorf("nn.%s.%s must be a Tensor or None, got %s", l.kind, name, v.Type())
	}
	return fmt.Errorf("%s", unknownAttr("nn."+l.kind, name, l.AttrNames()))
}

func (l *layer) CallInternal(th *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (v starlark.Value, err error) {
	c := &call{in: interpOf(th), name: l.kind, args: args, kwargs: kwargs}
	defer recoverPanic(c, &err)
	var x tensorArg
	if err := c.unpack("x", &x); err != nil {
		return nil, err
	}
	if x.t == nil {
		return nil, fmt.Errorf("%s: the input must be a Tensor", l.kind)
	}
	return wrap(l.forward(x.t))
}

// tensors lists the layer's non-nil tensors in attribute-name order.
func (l *layer) tensors() ([]string, []starlark.Value) {
	var names []string
	var vals []starlark.Value
	for _, n := range l.AttrNames() {
		v, _ := l.Attr(n)
		if v != starlark.None {
			names = append(names, n)
			vals = append(vals, v)
		}
	}
	return names, vals
}

func linearFn(c *call) (starlark.Value, error) {
	var in, out intArg
	bias := true
	if err := c.unpack("in_features", &in, "out_features", &out, "bias?", &bias); err != nil {
		return nil, err
	}
	if in <= 0 || out <= 0 {
		return nil, fmt.Errorf("Linear: in_features and out_features must be positive, got %d and %d", in, out)
	}
	l := nn.NewLinear(c.in.ctx, int(in), int(out), bias)
	return newLayer("Linear", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func conv2dFn(c *call) (starlark.Value, error) {
	var in, out intArg
	var kernel pairArg
	stride, padding, dilation := pairArg{[]int{1}}, pairArg{[]int{0}}, pairArg{[]int{1}}
	groups := intArg(1)
	bias := true
	if err := c.unpack("in_channels", &in, "out_channels", &out, "kernel_size", &kernel, "stride?", &stride,
		"padding?", &padding, "dilation?", &dilation, "groups?", &groups, "bias?", &bias); err != nil {
		return nil, err
	}
	l, err := nn.NewConv2d(c.in.ctx, int(in), int(out), kernel.v, tensor.ConvOpts{Groups: int(groups), Stride: stride.v, Padding: padding.v, Dilation: dilation.v}, bias)
	if err != nil {
		return nil, err
	}
	return newLayer("Conv2d", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func batchNormFn(c *call) (starlark.Value, error) {
	var sz intArg
	eps, momentum := floatArg(1e-5), floatArg(0.1)
	affine, track := true, true
	if err := c.unpack("sz", &sz, "eps?", &eps, "affine?", &affine, "track_running_stats?", &track, "momentum?", &momentum); err != nil {
		return nil, err
	}
	if sz <= 0 {
		return nil, fmt.Errorf("%s: sz must be positive, got %d", c.name, sz)
	}
	b := nn.NewBatchNormWith(c.in.ctx, int(sz), float64(eps), float64(momentum), affine, track)
	return newLayer("BatchNorm", b.Forward, layerField{"weight", &b.Weight}, layerField{"bias", &b.Bias},
		layerField{"running_mean", &b.RunningMean}, layerField{"running_var", &b.RunningVar},
		layerField{"num_batches_tracked", &b.NumBatchesTracked}), nil
}

func layerNormFn(c *call) (starlark.Value, error) {
	var shape pairArg
	eps := floatArg(1e-5)
	affine := true
	if err := c.unpack("normalized_shape", &shape, "eps?", &eps, "elementwise_affine?", &affine); err != nil {
		return nil, err
	}
	l := nn.NewLayerNorm(c.in.ctx, shape.v, float64(eps), affine)
	return newLayer("LayerNorm", l.Forward, layerField{"weight", &l.Weight}, layerField{"bias", &l.Bias}), nil
}

func rmsNormFn(c *call) (starlark.Value, error) {
	var dim intArg
	eps := floatArg(1e-6)
	affine := true
	if err := c.unpack("dim", &dim, "eps?", &eps, "elementwise_affine?", &affine); err != nil {
		return nil, err
	}
	r := nn.NewRMSNorm(c.in.ctx, int(dim), float64(eps), affine)
	return newLayer("RMSNorm", r.Forward, layerField{"weight", &r.Weight}), nil
}

func embeddingFn(c *call) (starlark.Value, error) {
	var vocab, size intArg
	if err := c.unpack("vocab_size", &vocab, "embed_size", &size); err != nil {
		return nil, err
	}
	if vocab <= 0 || size <= 0 {
		return nil, fmt.Errorf("Embedding: vocab_size and embed_size must be positive, got %d and %d", vocab, size)
	}
	e := nn.NewEmbedding(c.in.ctx, int(vocab), int(size))
	return newLayer("Embedding", e.Forward, layerField{"weight", &e.Weight}), nil
}

// ---- optimizers ----

// optimizer is an nn.optim optimizer as a Starlark value.
type optimizer struct {
	kind string
	opt  nn.Optimizer
	lr   *Tensor
}

func (o *optimizer) String() string        { return "<nn.optim." + o.kind + ">" }
func (o *optimizer) Type() string          { return o.kind }
func (o *optimizer) Freeze()               {}
func (o *optimizer) Truth() starlark.Bool  { return starlark.True }
func (o *optimizer) Hash() (uint32, error) { return o.lr.id, nil }
func (o *optimizer) AttrNames() []string   { return []string{"lr", "params", "step", "zero_grad"} }

func (o *optimizer) Attr(name string) (starlark.Value, error) {
	switch name {
	case "lr":
		return o.lr, nil
	case "params":
		ps := o.opt.Params()
		out := make([]starlark.Value, len(ps))
		for i, p := range ps {
			out[i] = NewTensor(p)
		}
		return starlark.NewList(out), nil
	case "zero_grad":
		return builtin("zero_grad", func(c *call) (starlark.Value, error) {
			if err := c.noArgs(); err != nil {
				return nil, err
			}
			o.opt.ZeroGrad()
			return starlark.None, nil
		}), nil
	case "step":
		return builtin("step", func(c *call) (starlark.Value, error) {
			if len(c.kwargs) > 0 {
				return nil, fmt.Errorf("step: unexpected keyword argument %s", c.kwargs[0][0])
			}
			// step(*tensors): also realize these (the loss) in the
			// step's schedule, sharing its forward pass.
			extra, err := tensorList(c, c.args)
			if err != nil {
				return nil, err
			}
			if tracing(c.in.ctx) {
				c.in.warnTraceRead()
			}
			return starlark.None, o.opt.Step(extra...)
		}), nil
	}
	return nil, fmt.Errorf("%s", unknownAttr("nn.optim."+o.kind, name, o.AttrNames()))
}

// paramList reads the params argument: a list or tuple of Tensors.
func paramList(name string, v starlark.Value) ([]*tensor.Tensor, error) {
	if !isSeq(v) {
		return nil, fmt.Errorf("%s: params must be a list of Tensors (nn.state.get_parameters(model)), got %s", name, v.Type())
	}
	var out []*tensor.Tensor
	for i, x := range seqElems(v) {
		t, ok := x.(*Tensor)
		if !ok {
			return nil, fmt.Errorf("%s: params[%d] is %s, want Tensor", name, i, x.Type())
		}
		out = append(out, t.t)
	}
	return out, nil
}

// optimFn binds nn.optim.SGD/Adam/AdamW. As in tinygrad, a parameter whose
// requires_grad was never set becomes trainable; one set to False (like
// BatchNorm's running statistics) is a buffer the step realizes.
func optimFn(kind string) builtinFunc {
	return func(c *call) (starlark.Value, error) {
		var params starlark.Value
		lr, b1, b2, eps, wd, momentum := floatArg(0.001), floatArg(0.9), floatArg(0.999), floatArg(1e-8), floatArg(0), floatArg(0)
		nesterov := false
		var err error
		switch kind {
		case "SGD":
			err = c.unpack("params", &params, "lr?", &lr, "momentum?", &momentum, "weight_decay?", &wd, "nesterov?", &nesterov)
		case "Adam":
			err = c.unpack("params", &params, "lr?", &lr, "b1?", &b1, "b2?", &b2, "eps?", &eps)
		case "AdamW":
			wd = 0.01
			err = c.unpack("params", &params, "lr?", &lr, "b1?", &b1, "b2?", &b2, "eps?", &eps, "weight_decay?", &wd)
		}
		if err != nil {
			return nil, err
		}
		ps, err := paramList(kind, params)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if !p.RequiresGradSet() {
				p.SetRequiresGrad(true)
			}
		}
		var opt nn.Optimizer
		switch kind {
		case "SGD":
			opt, err = nn.NewSGD(ps, float64(lr), float64(momentum), float64(wd), nesterov)
		default:
			opt, err = nn.NewAdamW(ps, float64(lr), float64(b1), float64(b2), float64(eps), float64(wd))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", kind, err)
		}
		return &optimizer{kind: kind, opt: opt, lr: NewTensor(opt.LR())}, nil
	}
}

// loadStateDict is nn.state.load_state_dict(model, state_dict, strict=True):
// every tensor of the model takes the value of the same name (shapes must
// match; dtypes are converted).
func loadStateDict(c *call) (starlark.Value, error) {
	var model starlark.Value
	var sd *starlark.Dict
	strict := true
	if err := c.unpack("model", &model, "state_dict", &sd, "strict?", &strict); err != nil {
		return nil, err
	}
	own := map[string]*Tensor{}
	if err := stateDict(model, "", own, map[starlark.Value]bool{}, 0); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(own))
	for n := range own {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, found, err := sd.Get(starlark.String(n))
		if err != nil {
			return nil, err
		}
		if !found {
			if strict {
				return nil, fmt.Errorf("load_state_dict: %q is missing from the state dict", n)
			}
			continue
		}
		src, ok := v.(*Tensor)
		if !ok {
			return nil, fmt.Errorf("load_state_dict: %q is %s, want Tensor", n, v.Type())
		}
		dst := own[n].t
		if fmt.Sprint(src.t.Shape()) != fmt.Sprint(dst.Shape()) {
			return nil, fmt.Errorf("load_state_dict: %q has shape %s, the model's tensor has shape %s", n, tensor.FormatShape(src.t.Shape()), tensor.FormatShape(dst.Shape()))
		}
		if r := dst.Assign(src.t.Cast(dst.DType())); r.Err() != nil {
			return nil, fmt.Errorf("load_state_dict: %q: %v", n, r.Err())
		}
	}
	return starlark.None, nil
}

func init() {
	m := nnModule.members
	m["Linear"] = builtin("Linear", linearFn)
	m["Conv2d"] = builtin("Conv2d", conv2dFn)
	m["BatchNorm"] = builtin("BatchNorm", batchNormFn)
	m["BatchNorm2d"] = builtin("BatchNorm2d", batchNormFn)
	m["LayerNorm"] = builtin("LayerNorm", layerNormFn)
	m["RMSNorm"] = builtin("RMSNorm", rmsNormFn)
	m["Embedding"] = builtin("Embedding", embeddingFn)
	m["optim"] = &namespace{name: "nn.optim", members: starlark.StringDict{
		"SGD":   builtin("SGD", optimFn("SGD")),
		"Adam":  builtin("Adam", optimFn("Adam")),
		"AdamW": builtin("AdamW", optimFn("AdamW")),
	}}
	m["state"].(*namespace).members["load_state_dict"] = builtin("load_state_dict", loadStateDict)
}

// ---- training sessions: config, trange, report ----

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
	return runSession(opts, s)
}

// sessionData is the session's "data" setting (the MNIST folder), or "".
func (in *interp) sessionData() string {
	if s := in.sess; s != nil {
		if d, ok := s.Config["data"].(string); ok {
			return d
		}
	}
	return ""
}

// configDict is the predeclared config: the session's settings as a
// frozen dict (empty outside tgc train).
func (in *interp) configDict() *starlark.Dict {
	d := starlark.NewDict(0)
	if s := in.sess; s != nil {
		for _, k := range report.SortedKeys(s.Config) {
			var v starlark.Value
			switch x := s.Config[k].(type) {
			case nil:
				v = starlark.None
			case int:
				v = starlark.MakeInt(x)
			case float64:
				v = starlark.Float(x)
			case string:
				v = starlark.String(x)
			case bool:
				v = starlark.Bool(x)
			default:
				v = starlark.String(fmt.Sprint(x))
			}
			_ = d.SetKey(starlark.String(k), v)
		}
	}
	d.Freeze()
	return d
}

// trainState is the per-run state of report() and trange.
type trainState struct {
	sess     *TrainSession // the run's session (a private one outside tgc train)
	nextStep int           // step of a report() without step=
}

const trainKey = "tgc.train"

func trainStateOf(c *call) *trainState {
	th := c.in.thread
	if st, ok := th.Local(trainKey).(*trainState); ok {
		return st
	}
	s := c.in.sess
	if s == nil {
		s = &TrainSession{Recorder: report.NewRecorder()}
	}
	st := &trainState{sess: s}
	th.SetLocal(trainKey, st)
	return st
}

// metricValue converts a report() value: a number or a one-element tensor.
func metricValue(c *call, name string, v starlark.Value) (float64, error) {
	if t, ok := v.(*Tensor); ok {
		if t.t.Numel() != 1 {
			return 0, fmt.Errorf("report: %s is a tensor of shape %s, want one element", name, tensor.FormatShape(t.t.Shape()))
		}
		vals, err := readValues(c, t.t)
		if err != nil {
			return 0, err
		}
		return vals[0], nil
	}
	f, err := toFloat(v)
	if err != nil {
		return 0, fmt.Errorf("report: %s: got %s, want a number or a one-element Tensor", name, v.Type())
	}
	return f, nil
}

// reportFn is report(step=None, **metrics): records each metric (a number
// or a one-element tensor; None is skipped) at step (default: one past the
// last reported step). A loss that is NaN or infinite stops the script with
// an error naming the step.
func reportFn(c *call) (starlark.Value, error) {
	if len(c.args) > 0 {
		return nil, fmt.Errorf("report: takes keyword arguments only, e.g. report(step=i, loss=loss)")
	}
	st := trainStateOf(c)
	step := st.nextStep
	type kv struct {
		name string
		val  starlark.Value
	}
	var metrics []kv
	for _, p := range c.kwargs {
		name := string(p[0].(starlark.String))
		if name == "step" {
			n, err := toInt(p[1])
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
func trangeFn(c *call) (starlark.Value, error) {
	var n intArg
	desc := ""
	batch, every := intArg(0), intArg(0)
	if err := c.unpack("n", &n, "desc?", &desc, "batch?", &batch, "every?", &every); err != nil {
		return nil, err
	}
	if n < 0 || batch < 0 {
		return nil, fmt.Errorf("trange: n and batch must not be negative")
	}
	st := trainStateOf(c)
	if every == 0 {
		every = intArg(st.sess.Every)
	}
	return &progress{total: int(n), desc: desc, batch: int(batch), every: int(every), st: st, w: c.in.stdout, id: tensorIDs.Add(1)}, nil
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
		return builtin("set_description", func(c *call) (starlark.Value, error) {
			var d string
			if err := c.unpack("desc", &d); err != nil {
				return nil, err
			}
			p.desc = d
			if p.bar != nil {
				p.bar.SetDescription(p.describe())
			}
			return starlark.None, nil
		}), nil
	}
	return nil, fmt.Errorf("%s", unknownAttr("trange", name, p.AttrNames()))
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
