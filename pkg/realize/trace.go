package realize

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tgc/pkg/backend"
	"tgc/pkg/beam"
	"tgc/pkg/fileaccess"
	"tgc/pkg/ir"
	"tgc/pkg/render"
	"tgc/pkg/safetensors"
	"tgc/pkg/tensor"
)

// Tracer is the engine of `tgc emit`: it schedules, optimizes and renders
// exactly as a device would, but executes nothing and needs no device. What
// it records is a launch plan: buffers, and kernels in launch order.
type Tracer struct {
	Device string
	Opts   Options
	plan   Plan
	lang   func(*ir.Kernel) (src, ext string)
	launch func(*ir.Kernel) (global, local []int64, ok bool) // GPU dialects
	ids    map[*tensor.Buffer]int
	mems   map[any]int       // each memory's first buffer
	names  map[string]string // kernel name -> source, to keep names unique
	host   map[int][]byte    // input and weight data, saved beside the plan
	// With BEAM, stored search results are used; BeamMisses counts the
	// kernels that had none (they get the heuristic: emit runs nothing).
	beam       *beam.Searcher
	BeamMisses int
}

// PlanVersion is bumped on incompatible changes of plan.json.
const PlanVersion = 2

// Plan is plan.json.
type Plan struct {
	Version int          `json:"version"`
	Device  string       `json:"device"`
	ABI     string       `json:"abi,omitempty"`
	Weights string       `json:"weights,omitempty"`
	Buffers []PlanBuffer `json:"buffers"`
	Kernels []PlanKernel `json:"kernels"`
}

// PlanBuffer is one buffer of the plan.
type PlanBuffer struct {
	ID    int    `json:"id"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	Bytes int    `json:"bytes"`
	Role  string `json:"role"` // input | weight | output | scratch
	Name  string `json:"name,omitempty"`
	// ViewOf is the buffer whose memory this one reads as another dtype
	// (the float16 scales inside a quantized weight's blocks).
	ViewOf *int `json:"view_of,omitempty"`
}

// PlanKernel is one launch.
type PlanKernel struct {
	Name   string  `json:"name"`
	Source string  `json:"source"`
	Entry  string  `json:"entry"`
	Global []int64 `json:"global"`
	Local  []int64 `json:"local"`
	Args   []int   `json:"args"`
	Vars   []int64 `json:"vars"`
	// VarNames names the first vars that are variables (start_pos), read
	// at launch; the values in vars are those of the traced call.
	VarNames []string `json:"var_names,omitempty"`
	// GlobalSym gives, per global loop, its symbolic trip count
	// ("start_pos+1") or "" when it is global's constant (CPU: the
	// outermost loop's end is then that value, not global[0]).
	GlobalSym []string `json:"global_sym,omitempty"`
	FLOPs     int64    `json:"flops"`
	Bytes     int64    `json:"bytes"`
	Opts      string   `json:"opts,omitempty"` // the optimization decisions, e.g. "[UPCAST(0,4) UPCAST(1,16)]"
	code      string
	ext       string
}

// Langs maps a device name to its renderer for tracing. GPU dialects are
// added here by their renderers.
var Langs = map[string]*render.Lang{"CPU": render.C, "CL": render.OpenCL, "CUDA": render.CUDA, "METAL": render.Metal}

// NewTracer makes a tracing engine for a device's dialect.
func NewTracer(device string, opts Options) (*Tracer, error) {
	device = strings.ToUpper(device)
	t := &Tracer{Device: device, Opts: opts, ids: map[*tensor.Buffer]int{}, mems: map[any]int{}, names: map[string]string{}, host: map[int][]byte{}}
	t.plan = Plan{Version: PlanVersion, Device: device}
	if opts.Out == nil {
		t.Opts.Out = os.Stderr
	}
	switch lang, ok := Langs[device]; {
	case ok:
		t.lang = func(k *ir.Kernel) (string, string) { return render.Render(lang, k), lang.Ext }
		t.launch = lang.LaunchSize
		if device == "CPU" {
			t.plan.ABI = "void NAME(void **bufs, const int64_t *vars, int64_t start, int64_t end)"
		}
		if lang.IsGPU() {
			t.plan.ABI = render.GPUABI
		}
	case device == "GO":
		t.lang = func(k *ir.Kernel) (string, string) { return k.Dump(), "ir" }
	default:
		return nil, fmt.Errorf("cannot emit for device %q (have %s)", device, strings.Join(EmitDevices(), ", "))
	}
	return t, nil
}

// EmitDevices lists the devices tgc can emit for.
func EmitDevices() []string {
	out := []string{}
	for name := range Langs {
		out = append(out, name)
	}
	out = append(out, "GO")
	return sortStrings(out)
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// Tracing tells the script frontend that values read are placeholders.
func (t *Tracer) Tracing() bool { return true }

// Plan returns the plan recorded so far.
func (t *Tracer) Plan() *Plan { return &t.plan }

type traceBuf struct{ id int }

func (t *Tracer) bufferID(n *tensor.Node, role string) int {
	b := n.Realized()
	if id, ok := t.ids[b]; ok {
		return id
	}
	// Buffers on one memory (an assign's new value, a bitcast view of a
	// quantized weight) are one buffer of the plan, or a view of it.
	base, seen := t.mems[b.Memory()]
	if seen && t.plan.Buffers[base].DType == n.DType.String() && t.plan.Buffers[base].Bytes == n.Numel()*n.DType.Size() {
		t.ids[b] = base
		return base
	}
	id := len(t.plan.Buffers)
	t.ids[b] = id
	if b.Weight {
		role = "weight"
	}
	pb := PlanBuffer{ID: id, DType: n.DType.String(), Shape: append([]int{}, n.Shape...), Bytes: n.Numel() * n.DType.Size(), Role: role, Name: b.Name}
	if seen {
		pb.ViewOf = &base
	} else {
		t.mems[b.Memory()] = id
		if b.Host != nil {
			t.host[id] = b.Host
		}
	}
	t.plan.Buffers = append(t.plan.Buffers, pb)
	return id
}

// Realize records the kernels that would realize nodes.
func (t *Tracer) Realize(nodes ...*tensor.Node) error {
	var outs []*tensor.Node
	for _, n := range nodes {
		if n.Realized() == nil {
			outs = append(outs, n)
		}
	}
	if len(outs) == 0 {
		return nil
	}
	p := pipeline{opts: t.Opts, target: t.target()}
	sched, kernels, err := p.lower(outs)
	if err != nil {
		return err
	}
	isOut := map[*tensor.Node]bool{}
	for _, o := range outs {
		isOut[o] = true
	}
	bound, err := tensor.Variables(tensor.Toposort(outs))
	if err != nil {
		return err
	}
	vals := map[tensor.Variable]int{}
	for _, v := range bound {
		vals[v.Var] = v.Val
	}
	for i, it := range sched.Items {
		k := kernels[i]
		if lang, ok := Langs[t.Device]; ok {
			if err := lang.Supports(k); err != nil {
				return err
			}
		}
		src, ext := t.lang(k)
		for n := 1; ; n++ { // kernel names are unique across the whole plan
			prev, taken := t.names[k.Name]
			if !taken || prev == src {
				break
			}
			k.Name = fmt.Sprintf("%sn%d", it.Kernel.Name, n)
			src, _ = t.lang(k)
		}
		t.names[k.Name] = src
		role := "scratch" // an intermediate of this schedule
		if isOut[it.Out] {
			role = "output" // the script realized it
		}
		// The kernel's output becomes a buffer of the plan; an assign
		// writes its destination's.
		if d := it.Out.AssignTarget(); d != nil {
			t.bufferID(d, "input")
			it.Out.SetRealized(tensor.Overwritten(d.Realized(), d.Realized().Device))
		} else {
			it.Out.SetRealized(&tensor.Buffer{ID: tensor.NewID(), DType: it.Out.DType, Size: it.Out.Numel(), Device: traceBuf{}})
		}
		var args []int
		for i, a := range it.Args {
			r := "input"
			if i == 0 {
				r = role
			}
			args = append(args, t.bufferID(a, r))
		}
		pk := PlanKernel{Name: k.Name, Source: "kernels/" + k.Name + "." + ext, Entry: k.Name, Args: args, Local: []int64{}, Vars: it.Params(vals), code: src, ext: ext}
		if pk.Vars == nil {
			pk.Vars = []int64{}
		}
		for _, v := range it.Vars {
			pk.VarNames = append(pk.VarNames, v.Name)
		}
		for _, a := range k.Global {
			if a.Sym == nil || a.Sym.Param >= len(it.Vars) {
				pk.GlobalSym = append(pk.GlobalSym, "")
				continue
			}
			pk.GlobalSym = append(pk.GlobalSym, tensor.SInt{Var: it.Vars[a.Sym.Param], C: int(a.Sym.Add)}.String())
		}
		if !slices.ContainsFunc(pk.GlobalSym, func(s string) bool { return s != "" }) {
			pk.GlobalSym = nil
		}
		if len(k.Opts) > 0 {
			pk.Opts = ir.FormatOpts(k.Opts)
		}
		if g, l, ok := t.launchSize(k); ok {
			pk.Global, pk.Local = g, l
		} else {
			for _, a := range k.Global {
				pk.Global = append(pk.Global, a.Size)
			}
		}
		pk.FLOPs, pk.Bytes = k.Cost()
		t.plan.Kernels = append(t.plan.Kernels, pk)
		p.show(k, src)
	}
	return nil
}

// Read marks a node as an output of the plan and returns zeros.
func (t *Tracer) Read(n *tensor.Node) ([]byte, error) {
	if n.Realized() == nil {
		if err := t.Realize(n); err != nil {
			return nil, err
		}
	}
	b := n.Realized()
	if id, ok := t.ids[b]; ok {
		if t.plan.Buffers[id].Role == "scratch" {
			t.plan.Buffers[id].Role = "output"
		}
	} else {
		t.bufferID(n, "output")
	}
	if b.Host != nil {
		return b.Host, nil // known input data reads as itself
	}
	return make([]byte, n.Numel()*n.DType.Size()), nil
}

// WritePlan writes DIR/plan.json, DIR/kernels/NAME.EXT and, when the
// script had input or weight data, DIR/weights.safetensors (tensors named
// buf<ID>).
func (t *Tracer) WritePlan(dir string) error {
	kdir := filepath.Join(dir, "kernels")
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		return err
	}
	written := map[string]bool{}
	for _, k := range t.plan.Kernels {
		if written[k.Source] {
			continue
		}
		written[k.Source] = true
		if err := fileaccess.WriteFile(filepath.Join(dir, k.Source), []byte(k.code), 0o644); err != nil {
			return err
		}
	}
	if len(t.host) > 0 {
		var ts []safetensors.Tensor
		for id, data := range t.host {
			b := t.plan.Buffers[id]
			dt, _ := ir.ParseDType(b.DType)
			ts = append(ts, safetensors.Tensor{Name: fmt.Sprintf("buf%d", id), DType: dt.SafetensorsName(), Shape: b.Shape, Data: data})
		}
		if err := safetensors.WriteFile(filepath.Join(dir, "weights.safetensors"), ts, map[string]string{"format": "tgc-plan"}); err != nil {
			return err
		}
		t.plan.Weights = "weights.safetensors"
	}
	data, err := json.MarshalIndent(&t.plan, "", "  ")
	if err != nil {
		return err
	}
	return fileaccess.WriteFile(filepath.Join(dir, "plan.json"), append(data, '\n'), 0o644)
}

// launchSize is the GPU launch geometry of a kernel (ok false on CPU/GO).
func (t *Tracer) launchSize(k *ir.Kernel) (global, local []int64, ok bool) {
	if t.launch == nil {
		return nil, nil, false
	}
	return t.launch(k)
}

// target is the pass selection of the device being emitted for.
// MatmulPanel is tensor.PanelEngine, as the engine of the traced device.
func (t *Tracer) MatmulPanel() int {
	if t.target().Upcast {
		return 16
	}
	return 0
}

func (t *Tracer) target() ir.Target {
	if lang, ok := Langs[t.Device]; ok && lang.IsGPU() {
		return lang.Target() // the default limits: emit plans for every current GPU
	}
	if t.Device != "CPU" {
		return ir.Target{}
	}
	tg := ir.CPUTarget
	if t.Opts.Beam > 0 {
		if t.beam == nil {
			dev, err := backend.OpenWith("CPU", backend.Options{CacheDir: t.Opts.CacheDir})
			if err != nil {
				return tg // no compiler here: no fingerprint to look results up by
			}
			t.beam = beam.New(dev, beam.Options{Width: t.Opts.Beam, Debug: t.Opts.Debug, Out: t.Opts.Out, Dir: t.Opts.beamDir()})
		}
		tg.Choose = func(k *ir.Kernel) []ir.Opt {
			if opts, ok := t.beam.Lookup(k); ok {
				return opts
			}
			if ir.Searchable(k) {
				t.BeamMisses++
			}
			return ir.HeuristicOpts(k)
		}
	}
	return tg
}
