// Package onnx runs ONNX models through tgc's Tensor API: every operator is
// a composition of Tensor functions (as tinygrad's ONNX frontend does), so
// every backend runs every operator and fusion works across operator
// boundaries. Values known at load time (initializers, constants, shapes and
// what is computed from them) are folded on the host; what tgc cannot run is
// refused by name before anything runs.
package onnx

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"tgc/pkg/fileaccess"
	"tgc/pkg/onnx/onnxpb"
	"tgc/pkg/tensor"
)

// MaxOpset is the newest version of the default operator set tgc knows.
const MaxOpset = 17

// Model is a parsed and checked ONNX model.
type Model struct {
	Name      string // the file, as errors name it
	IRVersion int64
	Opset     int              // version of the default domain (ai.onnx)
	Opsets    map[string]int64 // every imported domain's version
	Producer  string
	Inputs    []ValueInfo // graph inputs without an initializer: what a run needs
	Optional  []ValueInfo // graph inputs with an initializer (overridable)
	Outputs   []ValueInfo
	Init      map[string]*Array // initializers by name
	InitOrder []string          // initializer names as the file lists them
	Nodes     []*onnxpb.NodeProto
	// Refusals lists what tgc cannot run (Load and Parse fail when there is
	// any; Inspect keeps the model).
	Refusals []Refusal

	// subInit are the initializers of the subgraphs (If's branches, a
	// Loop's or Scan's body), by subgraph.
	subInit map[*onnxpb.GraphProto]map[string]*Array

	mu         sync.Mutex // guards the initializer tensors (run.go initTensor)
	tensorsCtx *tensor.Context
	tensors    map[string]*tensor.Tensor
}

// ValueInfo is a graph input or output: name, element type and shape.
type ValueInfo struct {
	Name string
	Kind string // "tensor", or what else the TypeProto holds ("sequence", ...)
	Type DataType
	Dims []Dim // nil when the file gives no shape
	// HasShape is false when the shape is unknown (any rank).
	HasShape bool
}

// Dim is one dimension: a size, a symbolic name, or unknown (Value -1 and
// no Param).
type Dim struct {
	Value int
	Param string
}

func (d Dim) String() string {
	switch {
	case d.Param != "":
		return d.Param
	case d.Value < 0:
		return "?"
	}
	return fmt.Sprint(d.Value)
}

// ShapeString formats the declared shape: [1,3,"batch"] as (1, 3, batch).
func (v ValueInfo) ShapeString() string {
	if !v.HasShape {
		return "(any shape)"
	}
	parts := make([]string, len(v.Dims))
	for i, d := range v.Dims {
		parts[i] = d.String()
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Describe is "name: float32 (1, 3, 224, 224)".
func (v ValueInfo) Describe() string {
	if v.Kind != "tensor" {
		return fmt.Sprintf("%s: %s", v.Name, v.Kind)
	}
	return fmt.Sprintf("%s: %s %s", v.Name, v.Type.Name(), v.ShapeString())
}

// Load reads and checks an ONNX model file. External data files are read
// relative to its folder. A model with anything tgc cannot run is refused
// (a *RefusedError listing all of it).
func Load(path string) (*Model, error) { return LoadWith(path, nil) }

// LoadWith is Load with the files opened by open (nil: regular files only,
// fileaccess.Open).
func LoadWith(path string, open Opener) (*Model, error) {
	m, err := inspect(path, open)
	if err != nil {
		return nil, err
	}
	return m.refused()
}

// Inspect reads and checks a model file like Load, but keeps a model that
// tgc cannot run, with its Refusals (for tgc info).
func Inspect(path string) (*Model, error) { return inspect(path, nil) }

func inspect(path string, open Opener) (*Model, error) {
	if open == nil {
		open = fileaccess.Open
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return parse(data, path, externalDir{dir: filepath.Dir(path), open: open})
}

// Parse decodes and checks a serialized ModelProto. name is used in errors;
// dir resolves external data ("" refuses it).
func Parse(data []byte, name, dir string) (*Model, error) {
	m, err := parse(data, name, externalDir{dir: dir})
	if err != nil {
		return nil, err
	}
	return m.refused()
}

func (m *Model) refused() (*Model, error) {
	if len(m.Refusals) > 0 {
		return nil, &RefusedError{Model: m.Name, Refusals: m.Refusals}
	}
	return m, nil
}

func parse(data []byte, name string, x externalDir) (*Model, error) {
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(data, &mp); err != nil {
		return nil, fmt.Errorf("%s: not an ONNX model (protobuf decoding failed: %s)", name, wireError(data, mp.ProtoReflect().Descriptor(), err))
	}
	m := &Model{Name: name, IRVersion: mp.GetIrVersion(), Opsets: map[string]int64{}, Producer: mp.GetProducerName(), Init: map[string]*Array{}}
	if err := m.check(&mp, x); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Model) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", m.Name, fmt.Sprintf(format, args...))
}

func (m *Model) check(mp *onnxpb.ModelProto, x externalDir) error {
	g := mp.GetGraph()
	if g == nil {
		if len(mp.ProtoReflect().GetUnknown()) > 0 || mp.GetIrVersion() == 0 {
			return m.errorf("not an ONNX model (no graph and no IR version)")
		}
		return m.errorf("the model has no graph")
	}
	if mp.GetIrVersion() <= 0 {
		return m.errorf("ir_version is missing")
	}
	for _, op := range mp.GetOpsetImport() {
		d := canonicalDomain(op.GetDomain())
		m.Opsets[d] = op.GetVersion()
	}
	if _, ok := m.Opsets[""]; !ok && len(mp.GetOpsetImport()) == 0 {
		m.Opsets[""] = 1 // before IR version 3, the default opset was implied
	}
	if v, ok := m.Opsets[""]; ok { // a model of other domains only imports none
		if v < 1 || v > MaxOpset {
			return m.errorf("opset %d of ai.onnx is not supported: tgc knows opsets 1 to %d", v, MaxOpset)
		}
		m.Opset = int(v)
	}
	if len(mp.GetFunctions()) > 0 {
		return m.errorf("model-local functions (%s) are not supported", mp.GetFunctions()[0].GetName())
	}
	if len(g.GetSparseInitializer()) > 0 {
		return m.errorf("sparse initializers (%s) are not supported", g.GetSparseInitializer()[0].GetValues().GetName())
	}
	for i, tp := range g.GetInitializer() {
		name := tp.GetName()
		if name == "" {
			return m.errorf("initializer %d has no name", i)
		}
		if _, dup := m.Init[name]; dup {
			return m.errorf("initializer %q is defined twice", name)
		}
		a, err := x.tensor(tp)
		if err != nil {
			return m.errorf("initializer %q: %v", name, err)
		}
		m.Init[name] = a
		m.InitOrder = append(m.InitOrder, name)
	}
	defined := map[string]bool{}
	for name := range m.Init {
		defined[name] = true
	}
	for _, vi := range g.GetInput() {
		info, err := valueInfo(vi)
		if err != nil {
			return m.errorf("graph input %q: %v", vi.GetName(), err)
		}
		if _, ok := m.Init[info.Name]; ok {
			m.Optional = append(m.Optional, info)
			continue
		}
		if defined[info.Name] {
			return m.errorf("graph input %q is listed twice", info.Name)
		}
		defined[info.Name] = true
		m.Inputs = append(m.Inputs, info)
	}
	for _, vi := range g.GetOutput() {
		info, err := valueInfo(vi)
		if err != nil {
			return m.errorf("graph output %q: %v", vi.GetName(), err)
		}
		m.Outputs = append(m.Outputs, info)
	}
	if len(m.Outputs) == 0 {
		return m.errorf("the graph has no outputs")
	}
	m.Nodes = g.GetNode()
	refused, err := m.checkNodes(m.Nodes, defined, x, "")
	if err != nil {
		return err
	}
	for _, vi := range append(slices.Clone(m.Inputs), m.Outputs...) {
		if r := valueRefusal(vi); r != nil {
			refused = append(refused, *r)
		}
	}
	for _, o := range m.Outputs {
		if !defined[o.Name] {
			return m.errorf("graph output %q is not computed by any node", o.Name)
		}
	}
	m.Refusals = refused
	return nil
}

// checkNodes checks a graph's nodes (the main graph's, or a subgraph's
// under the node labelled in): every input defined before it is read
// (defined holds what the graph and the graphs around it have so far; it
// gets the nodes' outputs), what tgc refuses, the default domain's
// arities, and the subgraphs, each over a copy of defined with its own
// inputs and initializers.
func (m *Model) checkNodes(nodes []*onnxpb.NodeProto, defined map[string]bool, x externalDir, in string) ([]Refusal, error) {
	var refused []Refusal
	for i, n := range nodes {
		label := in + nodeLabel(n, i)
		for _, name := range n.GetInput() {
			if name != "" && !defined[name] {
				return nil, m.errorf("%s: input %q is not defined before it is used (the graph's nodes must be sorted topologically)", label, name)
			}
		}
		if r := m.refusal(n, label); r != nil {
			refused = append(refused, *r)
		} else if canonicalDomain(n.GetDomain()) == "" {
			if err := checkArity(n, m.Opset); err != nil {
				return nil, m.errorf("%s (%s): %v", label, n.GetOpType(), err)
			}
			for _, name := range subgraphAttrs(n.GetOpType()) {
				if a := attrNamed(n, name); a == nil || a.GetType() != onnxpb.AttributeProto_GRAPH || a.GetG() == nil {
					return nil, m.errorf("%s (%s): attribute %s (a graph) is missing", label, n.GetOpType(), name)
				}
			}
			for _, a := range n.GetAttribute() {
				sub := a.GetG()
				if a.GetType() != onnxpb.AttributeProto_GRAPH || sub == nil {
					continue
				}
				r, err := m.checkSubgraph(sub, defined, x, fmt.Sprintf("%s %s: ", label, a.GetName()))
				if err != nil {
					return nil, err
				}
				refused = append(refused, r...)
			}
		}
		for _, out := range n.GetOutput() {
			if out != "" {
				defined[out] = true
			}
		}
	}
	return refused, nil
}

// checkSubgraph checks a subgraph (see checkNodes) and keeps its
// initializers for runs.
func (m *Model) checkSubgraph(g *onnxpb.GraphProto, outer map[string]bool, x externalDir, in string) ([]Refusal, error) {
	defined := maps.Clone(outer)
	for _, vi := range g.GetInput() {
		defined[vi.GetName()] = true
	}
	for i, tp := range g.GetInitializer() {
		name := tp.GetName()
		if name == "" {
			return nil, m.errorf("%sinitializer %d has no name", in, i)
		}
		a, err := x.tensor(tp)
		if err != nil {
			return nil, m.errorf("%sinitializer %q: %v", in, name, err)
		}
		if m.subInit == nil {
			m.subInit = map[*onnxpb.GraphProto]map[string]*Array{}
		}
		if m.subInit[g] == nil {
			m.subInit[g] = map[string]*Array{}
		}
		m.subInit[g][name] = a
		defined[name] = true
	}
	refused, err := m.checkNodes(g.GetNode(), defined, x, in)
	if err != nil {
		return nil, err
	}
	for _, o := range g.GetOutput() {
		if !defined[o.GetName()] {
			return nil, m.errorf("%soutput %q is not computed by any node", in, o.GetName())
		}
	}
	return refused, nil
}

// canonicalDomain maps ai.onnx to "" (both name the default domain).
func canonicalDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}

// nodeLabel names a node for errors: its name, else its index and first
// output.
func nodeLabel(n *onnxpb.NodeProto, i int) string {
	if n.GetName() != "" {
		return fmt.Sprintf("node %q", n.GetName())
	}
	if len(n.GetOutput()) > 0 {
		return fmt.Sprintf("node %d (output %q)", i, n.GetOutput()[0])
	}
	return fmt.Sprintf("node %d", i)
}

// valueInfo reads a graph input or output's declared type.
func valueInfo(vi *onnxpb.ValueInfoProto) (ValueInfo, error) {
	info := ValueInfo{Name: vi.GetName()}
	if info.Name == "" {
		return info, errors.New("no name")
	}
	tp := vi.GetType()
	switch {
	case tp == nil:
		info.Kind = "tensor" // untyped: whatever is bound
	case tp.GetTensorType() != nil:
		info.Kind = "tensor"
		tt := tp.GetTensorType()
		info.Type = DataType(tt.GetElemType())
		if sh := tt.GetShape(); sh != nil {
			info.HasShape = true
			info.Dims = []Dim{}
			for _, d := range sh.GetDim() {
				switch d.GetValue().(type) {
				case *onnxpb.TensorShapeProto_Dimension_DimValue:
					if d.GetDimValue() < 0 || d.GetDimValue() > maxElements {
						return info, fmt.Errorf("dimension %d is out of range", d.GetDimValue())
					}
					info.Dims = append(info.Dims, Dim{Value: int(d.GetDimValue())})
				case *onnxpb.TensorShapeProto_Dimension_DimParam:
					info.Dims = append(info.Dims, Dim{Value: -1, Param: d.GetDimParam()})
				default:
					info.Dims = append(info.Dims, Dim{Value: -1})
				}
			}
		}
	case tp.GetSequenceType() != nil:
		info.Kind = "sequence"
	case tp.GetMapType() != nil:
		info.Kind = "map"
	case tp.GetOptionalType() != nil:
		info.Kind = "optional"
	case tp.GetSparseTensorType() != nil:
		info.Kind = "sparse tensor"
	default:
		info.Kind = "tensor"
	}
	return info, nil
}

// subgraphAttrs are the graph attributes an operator must have.
func subgraphAttrs(op string) []string {
	switch op {
	case "If":
		return []string{"then_branch", "else_branch"}
	case "Loop", "Scan":
		return []string{"body"}
	}
	return nil
}

// attrNamed is n's attribute name, or nil.
func attrNamed(n *onnxpb.NodeProto, name string) *onnxpb.AttributeProto {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			return a
		}
	}
	return nil
}
