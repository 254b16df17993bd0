package onnx

import (
	"fmt"
	"strings"

	"tgc/pkg/onnx/onnxpb"
)

// Refusal says why one node or value cannot run, found at load time.
type Refusal struct {
	Op       string // operator, or "" for a graph input or output
	Domain   string // "" is ai.onnx
	Opset    int
	Node     string // the node's label, or the value's name
	Category string // see categories
	Reason   string // the whole sentence, without the model's name
}

// Refusal categories. The first ones are kinds of models tgc does not run
// by design (its graphs are static tensor programs); "operator" and "dtype"
// are gaps.
const (
	CatControlFlow = "control flow"
	CatSequence    = "sequence"
	CatString      = "string"
	CatOptional    = "optional"
	CatTraining    = "training"
	CatRandom      = "random"
	CatMap         = "map"
	CatOperator    = "operator"
	CatDType       = "dtype"
)

// ByDesign says whether a category is outside what tgc means to run.
func ByDesign(cat string) bool {
	switch cat {
	case CatControlFlow, CatSequence, CatString, CatOptional, CatTraining, CatRandom, CatMap:
		return true
	}
	return false
}

// refusedOps are the default domain's operators tgc refuses by design.
var refusedOps = map[string]string{
	"SequenceMap":      CatControlFlow, // a subgraph per element
	"StringNormalizer": CatString, "RegexFullMatch": CatString, "StringConcat": CatString, "StringSplit": CatString,
	"Optional": CatOptional, "OptionalHasElement": CatOptional, "OptionalGetElement": CatOptional,
	"RandomNormal": CatRandom, "RandomUniform": CatRandom, "RandomNormalLike": CatRandom,
	"RandomUniformLike": CatRandom, "Bernoulli": CatRandom, "Multinomial": CatRandom,
}

// runsSubgraphs says whether an operator's graph attributes run (its
// subgraphs are checked like the main graph's nodes).
func runsSubgraphs(op string) bool { return subgraphAttrs(op) != nil }

// RefusedError lists everything in a model that tgc cannot run.
type RefusedError struct {
	Model    string
	Refusals []Refusal
}

func (e *RefusedError) Error() string {
	lines := make([]string, len(e.Refusals))
	for i, r := range e.Refusals {
		lines[i] = e.Model + ": " + r.Reason
	}
	return strings.Join(lines, "\n")
}

// Category is the category of the first refusal by design (such a model
// is out of scope whatever else it uses), else of the first refusal.
func (e *RefusedError) Category() string {
	for _, r := range e.Refusals {
		if ByDesign(r.Category) {
			return r.Category
		}
	}
	return e.Refusals[0].Category
}

func opName(op, domain string) string {
	if domain == "" {
		return op
	}
	return domain + "." + op
}

// refusal checks one node against the operator table.
func (m *Model) refusal(n *onnxpb.NodeProto, label string) *Refusal {
	domain := canonicalDomain(n.GetDomain())
	opset := int(m.Opsets[domain])
	r := &Refusal{Op: n.GetOpType(), Domain: domain, Opset: opset, Node: label}
	refuse := func(cat, why string) *Refusal {
		r.Category = cat
		r.Reason = fmt.Sprintf("operator %s (opset %d) is not supported (%s)%s", opName(r.Op, domain), opset, r.Node, why)
		return r
	}
	if _, ok := m.Opsets[domain]; !ok {
		r.Category = CatOperator
		r.Reason = fmt.Sprintf("operator %s is not supported (%s): the model imports no version of domain %q", opName(r.Op, domain), r.Node, domain)
		return r
	}
	switch {
	case domain == "ai.onnx.preview.training":
		return refuse(CatTraining, ": training operators are not supported")
	case domain != "":
		return refuse(CatOperator, "")
	}
	if cat, ok := refusedOps[r.Op]; ok {
		return refuse(cat, ": "+cat+" operators are not supported")
	}
	def, ok := ops[r.Op]
	if !ok {
		return refuse(CatOperator, "")
	}
	if opset < def.since {
		return refuse(CatOperator, fmt.Sprintf(": tgc implements it from opset %d", def.since))
	}
	for _, a := range n.GetAttribute() {
		if a.GetType() == onnxpb.AttributeProto_GRAPHS || a.GetType() == onnxpb.AttributeProto_GRAPH && !runsSubgraphs(r.Op) {
			return refuse(CatControlFlow, fmt.Sprintf(": attribute %s is a subgraph", a.GetName()))
		}
		if a.GetType() == onnxpb.AttributeProto_STRINGS && r.Op == "Constant" || a.GetName() == "value_string" {
			return refuse(CatString, ": string constants are not supported")
		}
		if t := a.GetT(); t != nil && t.GetDataType() == int32(String) {
			return refuse(CatString, fmt.Sprintf(": attribute %s is a string tensor", a.GetName()))
		}
		if a.GetType() == onnxpb.AttributeProto_INT && (a.GetName() == "to" || a.GetName() == "dtype") {
			dt := DataType(a.GetI())
			if dt == String {
				return refuse(CatString, fmt.Sprintf(": attribute %s is STRING", a.GetName()))
			}
			if _, err := dt.IR(); err != nil {
				return refuse(CatDType, ": "+err.Error())
			}
		}
	}
	return nil
}

// valueRefusal checks a graph input or output's type.
func valueRefusal(v ValueInfo) *Refusal {
	r := &Refusal{Node: fmt.Sprintf("%q", v.Name)}
	switch v.Kind {
	case "tensor":
		if v.Type == Undefined {
			return nil
		}
		if v.Type == String {
			r.Category = CatString
			r.Reason = fmt.Sprintf("value %q is a string tensor; string tensors are not supported", v.Name)
			return r
		}
		if _, err := v.Type.IR(); err != nil {
			r.Category = CatDType
			r.Reason = fmt.Sprintf("value %q: %v", v.Name, err)
			return r
		}
		return nil
	case "sequence":
		r.Category = CatSequence
	case "optional":
		r.Category = CatOptional
	case "map":
		r.Category = CatMap
	default:
		r.Category = CatOperator
	}
	article := "a"
	if v.Kind != "" && strings.ContainsRune("aeiou", rune(v.Kind[0])) {
		article = "an"
	}
	r.Reason = fmt.Sprintf("value %q is %s %s; only tensors are supported", v.Name, article, v.Kind)
	return r
}

// optionalBefore says whether input i is optional though it counts in
// the schema's minimum (arity.go has counts, not which inputs are
// optional): a Loop's trip count and condition, opset 8 Scan's
// sequence_lens, which may be "".
func optionalBefore(op string, i int) bool { return op == "Loop" && i < 2 || op == "Scan" && i == 0 }

// arity is one schema version's input and output counts (arity.go).
type arity struct{ since, minIn, maxIn, minOut, maxOut int }

// checkArity compares a node with its operator's schema at the opset:
// required inputs present (not ""), no more inputs or outputs than the
// schema has.
func checkArity(n *onnxpb.NodeProto, opset int) error {
	var a *arity
	for i, v := range arities[n.GetOpType()] {
		if v.since <= opset {
			a = &arities[n.GetOpType()][i]
		}
	}
	if a == nil {
		return nil
	}
	in := n.GetInput()
	for i := range min(a.minIn, len(in)) {
		if in[i] == "" && !optionalBefore(n.GetOpType(), i) {
			return fmt.Errorf("input %d is required", i)
		}
	}
	switch {
	case len(in) < a.minIn:
		return fmt.Errorf("%d inputs, the operator needs at least %d", len(in), a.minIn)
	case a.maxIn >= 0 && len(in) > a.maxIn:
		return fmt.Errorf("%d inputs, the operator takes at most %d", len(in), a.maxIn)
	case len(n.GetOutput()) < a.minOut:
		return fmt.Errorf("%d outputs, the operator has at least %d", len(n.GetOutput()), a.minOut)
	case a.maxOut >= 0 && len(n.GetOutput()) > a.maxOut:
		return fmt.Errorf("%d outputs, the operator has at most %d", len(n.GetOutput()), a.maxOut)
	}
	return nil
}
