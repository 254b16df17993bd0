package onnx

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"tgc/pkg/onnx/onnxpb"
	"tgc/pkg/tensor"
)

// value is one named value of the graph while it is built: a lazy tensor,
// and its host copy when the value is known at load time.
type value struct {
	name  string
	t     *tensor.Tensor
	h     *Array
	init  *Model   // set for an initializer: its tensor is the model's, made once
	seq   []*value // a sequence's elements (ops_seq.go)
	isSeq bool
	rows  *rowsForm // a matrix product's output layout (rows.go)
}

// tensor returns the value in ctx (a buffer made from the host copy the
// first time).
func (v *value) tensor(ctx *tensor.Context) (*tensor.Tensor, error) {
	if v.isSeq {
		return nil, fmt.Errorf("value %q is a sequence, not a tensor", v.name)
	}
	if v.t == nil && v.rows != nil {
		v.t = v.rows.nchw()
		if err := v.t.Err(); err != nil {
			return nil, err
		}
	}
	if v.t == nil && v.init != nil {
		t, err := v.init.initTensor(ctx, v.name, "", func() (*tensor.Tensor, error) { return v.h.Tensor(ctx, v.name, true) })
		if err != nil {
			return nil, fmt.Errorf("initializer %q: %w", v.name, err)
		}
		v.t = t
	}
	if v.t == nil {
		t, err := v.h.Tensor(ctx, v.name, false)
		if err != nil {
			return nil, fmt.Errorf("value %q: %w", v.name, err)
		}
		v.t = t
	}
	return v.t, nil
}

func (v *value) shape() []int {
	switch {
	case v.h != nil:
		return v.h.Shape
	case v.t == nil && v.rows != nil:
		s := v.rows.t.Shape()
		return append([]int{v.rows.n, s[2]}, v.rows.out...)
	}
	return v.t.Shape()
}

func (v *value) dtype() DataType {
	switch {
	case v.h != nil:
		return v.h.Type
	case v.t == nil && v.rows != nil:
		return FromIR(v.rows.t.DType())
	}
	return FromIR(v.t.DType())
}

// Input binds one graph input: host data (tgc run) or a tensor (a script, or
// a placeholder for tgc emit).
type Input struct {
	Array  *Array
	Tensor *tensor.Tensor
}

// RunOptions are the bindings of a run beyond the inputs.
type RunOptions struct {
	Dims map[string]int // symbolic dimensions bound by name (--dim)
	// Weights replace initializers by tensors (a script's parameters, which
	// it may train); they are never folded on the host.
	Weights map[string]*tensor.Tensor
}

// Run builds the model's graph in ctx on the given inputs (tensors of ctx,
// or host data) and returns its outputs as lazy tensors in the graph's
// output order (nothing is realized, except values that decide shapes and
// are not known at load time).
func (m *Model) Run(ctx *tensor.Context, inputs map[string]Input, opts RunOptions) ([]*tensor.Tensor, error) {
	env, err := m.bind(ctx, inputs, opts)
	if err != nil {
		return nil, err
	}
	if err := m.runNodes(ctx, m.Nodes, env, new(int)); err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	res := make([]*tensor.Tensor, len(m.Outputs))
	for i, o := range m.Outputs {
		t, err := env[o.Name].tensor(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: output %q: %w", m.Name, o.Name, err)
		}
		res[i] = t
	}
	return res, nil
}

// bind checks the inputs against the declared types and shapes and makes
// the environment of initializers and inputs.
func (m *Model) bind(ctx *tensor.Context, inputs map[string]Input, opts RunOptions) (map[string]*value, error) {
	env := map[string]*value{}
	for name, a := range m.Init {
		env[name] = &value{name: name, h: a, init: m}
		if w, ok := opts.Weights[name]; ok {
			if !slices.Equal(w.Shape(), a.Shape) || FromIR(w.DType()) != a.Type {
				return nil, fmt.Errorf("%s: weight %q is %s %s, the model's initializer %s %s", m.Name, name, w.DType(), tensor.FormatShape(w.Shape()), a.Type.Name(), tensor.FormatShape(a.Shape))
			}
			env[name] = &value{name: name, t: w}
		}
	}
	known := map[string]bool{}
	for _, vi := range append(slices.Clone(m.Inputs), m.Optional...) {
		known[vi.Name] = true
	}
	var unknown []string
	for name := range inputs {
		if !known[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s: no graph input named %s; the inputs are:\n%s", m.Name, strings.Join(quoteAll(unknown), ", "), m.InputList())
	}
	var missing []string
	for _, vi := range m.Inputs {
		if _, ok := inputs[vi.Name]; !ok {
			missing = append(missing, vi.Name)
		}
	}
	if len(missing) > 0 {
		return nil, &MissingInputsError{Model: m, Missing: missing}
	}
	dims := map[string]int{}
	for k, v := range opts.Dims {
		dims[k] = v
	}
	for _, vi := range append(slices.Clone(m.Inputs), m.Optional...) {
		in, ok := inputs[vi.Name]
		if !ok {
			continue
		}
		v := &value{name: vi.Name, t: in.Tensor}
		var typ DataType
		var shape []int
		if in.Array != nil {
			t, err := in.Array.Tensor(ctx, vi.Name, false)
			if err != nil {
				return nil, fmt.Errorf("%s: input %q: %w", m.Name, vi.Name, err)
			}
			v.t = t
			typ, shape = in.Array.Type, in.Array.Shape
		} else if in.Tensor != nil {
			if err := in.Tensor.Err(); err != nil {
				return nil, fmt.Errorf("%s: input %q: %w", m.Name, vi.Name, err)
			}
			if in.Tensor.Context() != ctx {
				return nil, fmt.Errorf("%s: input %q is a tensor of another run", m.Name, vi.Name)
			}
			typ, shape = FromIR(in.Tensor.DType()), in.Tensor.Shape()
		} else {
			return nil, fmt.Errorf("%s: input %q has no value", m.Name, vi.Name)
		}
		if err := checkInput(vi, typ, shape, dims, m.readsValues(vi.Name)); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		env[vi.Name] = v
	}
	for name := range opts.Dims {
		if !m.hasDim(name) {
			return nil, fmt.Errorf("%s: --dim %s: no input has a dimension named %q", m.Name, name, name)
		}
	}
	return env, nil
}

// initTensor returns the model's tensor of an initializer (in a form: ""
// as stored, or a layout an operator asked for), made by make the first
// time: the buffers are shared by every run in the same context, so weights
// are uploaded once. (Tensors belong to a context: a run in another one
// starts the cache afresh.)
func (m *Model) initTensor(ctx *tensor.Context, name, form string, make func() (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tensorsCtx != ctx {
		m.tensorsCtx, m.tensors = ctx, map[string]*tensor.Tensor{}
	}
	key := name + "\x00" + form
	if t, ok := m.tensors[key]; ok {
		return t, nil
	}
	t, err := make()
	if err != nil {
		return nil, err
	}
	m.tensors[key] = t
	return t, nil
}

// HasInput says whether name is a graph input (required or optional).
func (m *Model) HasInput(name string) bool {
	for _, vi := range append(slices.Clone(m.Inputs), m.Optional...) {
		if vi.Name == name {
			return true
		}
	}
	return false
}

func (m *Model) hasDim(name string) bool {
	for _, vi := range append(slices.Clone(m.Inputs), m.Optional...) {
		for _, d := range vi.Dims {
			if d.Param == name {
				return true
			}
		}
	}
	return false
}

// readsValues says whether an operator or the outputs read the values of
// the graph input name: not when it is unused or only CastLike's "like"
// input, whose data type alone matters (ONNX 1.12's CastLike test data
// feeds a (1,) "like" to a model that declares (3, 4); ONNX's reference
// runtime does not check input shapes).
func (m *Model) readsValues(name string) bool {
	for _, o := range m.Outputs {
		if o.Name == name {
			return true
		}
	}
	for _, nd := range m.Nodes {
		for _, a := range nd.GetAttribute() {
			if a.GetG() != nil || len(a.GetGraphs()) > 0 {
				return true // a subgraph may read any outer name
			}
		}
		for i, in := range nd.GetInput() {
			if in == name && !(nd.GetOpType() == "CastLike" && canonicalDomain(nd.GetDomain()) == "" && i == 1) {
				return true
			}
		}
	}
	return false
}

// checkInput compares a bound value with the declared input, binding its
// symbolic dimensions (the first binding of a name wins; later ones must
// agree). Only the data type is checked of an input whose values nothing
// reads (shapeMatters false).
func checkInput(vi ValueInfo, typ DataType, shape []int, dims map[string]int, shapeMatters bool) error {
	if vi.Type != Undefined && typ != vi.Type {
		return fmt.Errorf("input %q is %s %s, the model declares %s %s", vi.Name, typ.Name(), tensor.FormatShape(shape), vi.Type.Name(), vi.ShapeString())
	}
	if !vi.HasShape || !shapeMatters {
		return nil
	}
	bad := len(shape) != len(vi.Dims)
	var why string
	for i := 0; !bad && i < len(shape); i++ {
		d := vi.Dims[i]
		switch {
		case d.Param != "":
			if want, ok := dims[d.Param]; ok && want != shape[i] {
				bad, why = true, fmt.Sprintf(" (%s is %d)", d.Param, want)
			} else {
				dims[d.Param] = shape[i]
			}
		case d.Value >= 0 && d.Value != shape[i]:
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("input %q has shape %s, the model declares %s%s", vi.Name, tensor.FormatShape(shape), vi.ShapeString(), why)
	}
	return nil
}

func quoteAll(s []string) []string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return q
}

// InputList lists the required inputs, one per line, for errors and info.
func (m *Model) InputList() string {
	var b strings.Builder
	for _, vi := range m.Inputs {
		fmt.Fprintf(&b, "  %s\n", vi.Describe())
	}
	return strings.TrimRight(b.String(), "\n")
}

// MissingInputsError says which required inputs a run lacks, listing all of
// them with their types and shapes.
type MissingInputsError struct {
	Model   *Model
	Missing []string
}

func (e *MissingInputsError) Error() string {
	return fmt.Sprintf("%s: missing input %s; the model's inputs are:\n%s", e.Model.Name, strings.Join(quoteAll(e.Missing), ", "), e.Model.InputList())
}

// runNodes runs nodes in order into env (the values by name they read
// and write); unrolled counts the subgraphs the run has built.
func (m *Model) runNodes(ctx *tensor.Context, nodes []*onnxpb.NodeProto, env map[string]*value, unrolled *int) error {
	for i, np := range nodes {
		n := &node{proto: np, opset: m.Opset, label: nodeLabel(np, i), ctx: ctx, scope: env, m: m, unrolled: unrolled}
		for _, name := range np.GetInput() {
			if name == "" {
				n.in = append(n.in, nil)
				continue
			}
			n.in = append(n.in, env[name])
		}
		outs, err := n.run()
		var r *runRefusal
		if errors.As(err, &r) {
			return &RefusedError{Model: m.Name, Refusals: []Refusal{{Op: np.GetOpType(), Opset: m.Opset, Node: n.label, Category: r.cat,
				Reason: fmt.Sprintf("operator %s (opset %d) is not supported (%s): %s", np.GetOpType(), m.Opset, n.label, r.msg)}}}
		}
		if err != nil {
			return fmt.Errorf("%s (%s): %w", n.label, np.GetOpType(), err)
		}
		for j, name := range np.GetOutput() {
			if name == "" {
				continue
			}
			if j >= len(outs) || outs[j] == nil {
				return fmt.Errorf("%s (%s): output %d (%q) is not computed by tgc", n.label, np.GetOpType(), j, name)
			}
			outs[j].name = name
			env[name] = outs[j]
		}
	}
	return nil
}

// node is one operator application while the graph is built.
type node struct {
	proto    *onnxpb.NodeProto
	opset    int
	label    string
	ctx      *tensor.Context
	m        *Model            // its model (a subgraph's initializers, runNodes)
	scope    map[string]*value // the values its graph has so far (a subgraph's outer scope)
	unrolled *int              // the subgraphs its run has built (maxUnroll)
	rows     *rowsForm         // set by an operator whose output 0 has a rows form
	in       []*value
	err      error // the first error; accessors return zero values after it
}

// fail records the node's first error.
func (n *node) fail(format string, args ...any) {
	if n.err == nil {
		n.err = fmt.Errorf(format, args...)
	}
}

// errInternal marks a Go panic inside an operator (a bug in tgc, reported
// with the node instead of crashing the process).
var errInternal = errors.New("internal error (a bug in tgc)")

func (n *node) run() (vals []*value, err error) {
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, fmt.Errorf("%w: %v", errInternal, r)
		}
	}()
	def := ops[n.proto.GetOpType()]
	for i, v := range n.in {
		if v != nil && v.isSeq && def.value == nil {
			return nil, fmt.Errorf("input %d is a sequence", i)
		}
	}
	if def.value != nil {
		outs := def.value(n)
		if n.err != nil {
			return nil, n.err
		}
		return outs, nil
	}
	if def.host != nil && (def.anyInput || n.has(0) && n.foldable()) {
		arrs := make([]*Array, len(n.in))
		for i, v := range n.in {
			if v != nil {
				arrs[i] = v.h
			}
		}
		outs := def.host(n, arrs)
		if n.err != nil {
			return nil, n.err
		}
		if outs != nil {
			vals := make([]*value, len(outs))
			for i, a := range outs {
				vals[i] = &value{h: a}
			}
			return vals, nil
		}
	}
	if def.run == nil {
		return nil, fmt.Errorf("internal: %s has no device implementation", n.proto.GetOpType())
	}
	outs := def.run(n)
	if n.err != nil {
		return nil, n.err
	}
	vals = make([]*value, len(outs))
	for i, t := range outs {
		if i == 0 && n.rows != nil {
			if err := n.rows.t.Err(); err != nil {
				return nil, err
			}
			vals[0] = &value{rows: n.rows}
			continue
		}
		if t == nil {
			continue
		}
		if err := t.Err(); err != nil {
			return nil, err
		}
		vals[i] = &value{t: t}
	}
	return vals, nil
}

// foldLimit bounds the inputs folded on the host: shapes and small
// constants, never weights.
const foldLimit = 4096

// foldable says whether every present input is known on the host and small.
func (n *node) foldable() bool {
	for _, v := range n.in {
		if v != nil && (v.h == nil || v.h.Numel() > foldLimit) {
			return false
		}
	}
	return true
}

// ---- inputs ----

// has says whether input i is present.
func (n *node) has(i int) bool { return i < len(n.in) && n.in[i] != nil }

// x returns input i as a tensor (nil when absent, with the node failed if
// required).
func (n *node) x(i int) *tensor.Tensor {
	if !n.has(i) {
		n.fail("input %d is missing", i)
		return tensor.Errorf(n.proto.GetOpType(), "input %d is missing", i)
	}
	t, err := n.in[i].tensor(n.ctx)
	if err != nil {
		n.fail("%v", err)
		return tensor.Errorf(n.proto.GetOpType(), "%v", err)
	}
	return t
}

// opt returns input i as a tensor, or nil when it is absent.
func (n *node) opt(i int) *tensor.Tensor {
	if !n.has(i) {
		return nil
	}
	return n.x(i)
}

// array returns input i's value on the host: known at load time, or read
// from the device (not while tracing for tgc emit: the value would be a
// placeholder).
func (n *node) array(i int) *Array {
	if n.err != nil {
		return nil
	}
	if !n.has(i) {
		n.fail("input %d is missing", i)
		return nil
	}
	if n.in[i].isSeq {
		n.fail("input %d is a sequence, not a tensor", i)
		return nil
	}
	return n.host(n.in[i], "decides a shape")
}

// host returns v's value on the host (see array); decides says what the
// value decides, for the error under tracing.
func (n *node) host(v *value, decides string) *Array {
	if v.h != nil {
		return v.h
	}
	if tr, ok := n.ctx.Engine().(interface{ Tracing() bool }); ok && tr.Tracing() {
		n.fail("the value of %q %s, and it is only known when the model runs (tgc emit cannot trace it)", v.name, decides)
		return nil
	}
	t, err := v.tensor(n.ctx)
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	a, err := ArrayFrom(t)
	if err != nil {
		n.fail("reading %q: %v", v.name, err)
		return nil
	}
	v.h = a
	return a
}

// ints returns input i's values as ints (for shapes, axes, pads).
func (n *node) ints(i int) []int {
	a := n.array(i)
	if a == nil {
		return nil
	}
	if a.Type.IsFloat() {
		n.fail("input %d must be an integer tensor, got %s", i, a.Type)
		return nil
	}
	v := make([]int, a.Numel())
	for j := range v {
		v[j] = clampInt(a.Int(j))
	}
	return v
}

// clampInt narrows an int64 to int (INT64_MAX stays the largest int).
func clampInt(v int64) int { return int(v) }

// scalarInput returns the single value of input i as a float64.
func (n *node) scalar(i int) float64 {
	a := n.array(i)
	if a == nil {
		return 0
	}
	if a.Numel() != 1 {
		n.fail("input %d must hold one value, got shape %s", i, tensor.FormatShape(a.Shape))
		return 0
	}
	return a.Float(0)
}

// ---- attributes ----

func (n *node) attr(name string) *onnxpb.AttributeProto { return attrNamed(n.proto, name) }

func (n *node) hasAttr(name string) bool { return n.attr(name) != nil }

func (n *node) attrType(a *onnxpb.AttributeProto, want onnxpb.AttributeProto_AttributeType) bool {
	if a.GetType() != want && a.GetType() != onnxpb.AttributeProto_UNDEFINED {
		n.fail("attribute %s is %s, expected %s", a.GetName(), a.GetType(), want)
		return false
	}
	return true
}

func (n *node) int(name string, def int) int {
	a := n.attr(name)
	if a == nil || !n.attrType(a, onnxpb.AttributeProto_INT) {
		return def
	}
	return int(a.GetI())
}

func (n *node) float(name string, def float64) float64 {
	a := n.attr(name)
	if a == nil || !n.attrType(a, onnxpb.AttributeProto_FLOAT) {
		return def
	}
	return float64(a.GetF())
}

func (n *node) str(name, def string) string {
	a := n.attr(name)
	if a == nil || !n.attrType(a, onnxpb.AttributeProto_STRING) {
		return def
	}
	return string(a.GetS())
}

func (n *node) intList(name string, def []int) []int {
	a := n.attr(name)
	if a == nil || !n.attrType(a, onnxpb.AttributeProto_INTS) {
		return def
	}
	v := make([]int, len(a.GetInts()))
	for i, x := range a.GetInts() {
		v[i] = clampInt(x)
	}
	return v
}

func (n *node) floatList(name string, def []float64) []float64 {
	a := n.attr(name)
	if a == nil || !n.attrType(a, onnxpb.AttributeProto_FLOATS) {
		return def
	}
	v := make([]float64, len(a.GetFloats()))
	for i, x := range a.GetFloats() {
		v[i] = float64(x)
	}
	return v
}

// tensorAttr decodes a TENSOR attribute.
func (n *node) tensorAttr(name string) *Array {
	a := n.attr(name)
	if a == nil || !n.attrType(a, onnxpb.AttributeProto_TENSOR) {
		return nil
	}
	arr, err := externalDir{}.tensor(a.GetT())
	if err != nil {
		n.fail("attribute %s: %v", name, err)
		return nil
	}
	return arr
}

// errNotImplemented marks a case of an operator tgc does not handle.
var errNotImplemented = errors.New("not implemented")

func (n *node) unsupported(format string, args ...any) {
	n.fail("%w: %s", errNotImplemented, fmt.Sprintf(format, args...))
}

// runRefusal is a refusal found while the graph is built (it depends on an
// input's value, such as Dropout's training_mode).
type runRefusal struct{ cat, msg string }

func (r *runRefusal) Error() string { return r.msg }

func (n *node) refuse(cat, format string, args ...any) {
	if n.err == nil {
		n.err = &runRefusal{cat, fmt.Sprintf(format, args...)}
	}
}
