package onnx

import (
	"maps"
	"slices"

	"tgc/pkg/onnx/onnxpb"
	"tgc/pkg/tensor"
)

// Control flow runs while the graph is built, as tinygrad's ONNX runner
// does it: If reads its condition and builds the branch taken; Loop and
// Scan are unrolled, a Loop's condition read after each iteration. A
// condition or trip count computed from the inputs is realized there (a
// sync while the graph is built), so such a model runs on concrete inputs
// and is refused by `tgc emit`'s placeholders. Subgraphs see the values of
// the graphs around them by name (ONNX's outer scope).

// The table joins ops in init: these run subgraphs, whose nodes run
// through ops (a cycle in the variables' initialization otherwise).
func init() {
	maps.Copy(ops, map[string]opDef{
		"If":   {since: 1, value: ifOp},
		"Loop": {since: 1, value: loopOp},
		"Scan": {since: 8, value: scanOp},
	})
}

// maxUnroll bounds the subgraphs one run builds, every loop's iterations
// (nested ones too) and branch together: a loop that never stops, or a
// model whose loops are too long to unroll, fails there.
const maxUnroll = 1 << 16

// graph returns the node's subgraph attribute name.
func (n *node) graph(name string) *onnxpb.GraphProto {
	a := n.attr(name)
	if a == nil || a.GetType() != onnxpb.AttributeProto_GRAPH || a.GetG() == nil {
		n.fail("attribute %s (a graph) is missing", name)
		return nil
	}
	return a.GetG()
}

// truth reads a boolean (or numeric) scalar, realizing it if it is
// computed on the device (refused while tracing for tgc emit).
func (n *node) truth(v *value, what string) bool {
	a := n.scalar1(v, what)
	return a != nil && a.Float(0) != 0
}

// count reads an integer scalar the same way.
func (n *node) count(v *value, what string) int64 {
	if a := n.scalar1(v, what); a != nil {
		return a.Int(0)
	}
	return 0
}

// scalar1 is v's one-element value on the host.
func (n *node) scalar1(v *value, what string) *Array {
	if n.err != nil {
		return nil
	}
	if v == nil || v.isSeq {
		n.fail("%s must be a tensor", what)
		return nil
	}
	a := n.host(v, "decides the control flow ("+what+")")
	if a != nil && a.Numel() != 1 {
		n.fail("%s has %d elements, want one", what, a.Numel())
		return nil
	}
	return a
}

// subgraph runs g with its inputs bound to args (in order) over the
// node's scope and returns its outputs.
func (n *node) subgraph(g *onnxpb.GraphProto, args []*value) []*value {
	if n.err != nil {
		return nil
	}
	if *n.unrolled++; *n.unrolled > maxUnroll {
		n.fail("the model's control flow built %d subgraphs without finishing (tgc unrolls loops while it builds the graph: a loop that does not stop, or one too long to unroll)", maxUnroll)
		return nil
	}
	if len(args) != len(g.GetInput()) {
		n.fail("subgraph %q takes %d inputs, the operator gives %d", g.GetName(), len(g.GetInput()), len(args))
		return nil
	}
	env := maps.Clone(n.scope)
	for name, a := range n.m.subInit[g] {
		env[name] = &value{h: a, name: name}
	}
	for i, in := range g.GetInput() {
		env[in.GetName()] = args[i]
	}
	if err := n.m.runNodes(n.ctx, g.GetNode(), env, n.unrolled); err != nil {
		n.fail("subgraph %q: %w", g.GetName(), err)
		return nil
	}
	outs := make([]*value, len(g.GetOutput()))
	for i, o := range g.GetOutput() {
		v, ok := env[o.GetName()]
		if !ok {
			n.fail("subgraph %q: output %q is not computed", g.GetName(), o.GetName())
			return nil
		}
		outs[i] = v
	}
	return outs
}

func ifOp(n *node) []*value {
	branch := "else_branch"
	if n.truth(n.in[0], "the condition") {
		branch = "then_branch"
	}
	g := n.graph(branch)
	if g == nil {
		return nil
	}
	return n.subgraph(g, nil)
}

// scalarValue is a host scalar of dtype t.
func scalarValue(t DataType, v int64) *value {
	return &value{h: ArrayOfInts(t, nil, []int64{v})}
}

// loopOp unrolls a Loop: inputs M (the trip count) and cond, both
// optional, then the loop-carried values; the body takes (iteration,
// cond, carried...) and gives (cond, carried..., scan outputs...), the
// scan outputs stacked along a new first axis. The body's condition
// counts only when the Loop has a condition input.
func loopOp(n *node) []*value {
	body := n.graph("body")
	if body == nil {
		return nil
	}
	trips := int64(-1)
	if n.has(0) {
		trips = n.count(n.in[0], "the trip count M")
	}
	cond := true
	if n.has(1) {
		cond = n.truth(n.in[1], "the condition")
	}
	carried := n.in[2:]
	nscan := len(body.GetOutput()) - 1 - len(carried)
	if nscan < 0 {
		n.fail("the body gives %d outputs for %d loop-carried values", len(body.GetOutput()), len(carried))
		return nil
	}
	scans := make([][]*tensor.Tensor, nscan)
	for i := int64(0); cond && (trips < 0 || i < trips) && n.err == nil; i++ {
		args := append([]*value{scalarValue(Int64, i), scalarValue(Bool, 1)}, carried...)
		outs := n.subgraph(body, args)
		if n.err != nil {
			return nil
		}
		if n.has(1) { // without a condition input the body's is ignored (ONNX's for loop)
			cond = n.truth(outs[0], "the body's condition")
		}
		carried = outs[1 : 1+len(carried)]
		n.collect(scans, outs[1+len(carried):])
	}
	res := append([]*value{}, carried...)
	for _, ts := range scans {
		res = append(res, n.stacked(ts, 0, false))
	}
	if n.err != nil {
		return nil
	}
	return res
}

// collect appends each scan output's tensor to its list in scans.
func (n *node) collect(scans [][]*tensor.Tensor, outs []*value) {
	for k, v := range outs {
		t, err := v.tensor(n.ctx)
		if err != nil {
			n.fail("scan output %d: %v", k, err)
			return
		}
		scans[k] = append(scans[k], t)
	}
}

// stacked stacks one scan output's tensors along a new axis ax (negative:
// from the end), in reverse order if reverse.
func (n *node) stacked(ts []*tensor.Tensor, ax int, reverse bool) *value {
	if n.err != nil {
		return nil
	}
	if len(ts) == 0 {
		n.fail("a scan output of a loop or scan that ran no iteration has no shape tgc can know")
		return nil
	}
	if ax < 0 {
		ax += len(ts[0].Shape()) + 1
	}
	if ax < 0 || ax > len(ts[0].Shape()) {
		n.fail("scan output axis %d for outputs of rank %d", ax, len(ts[0].Shape()))
		return nil
	}
	if reverse {
		ts = slices.Clone(ts)
		slices.Reverse(ts)
	}
	return &value{t: tensor.Stack(ax, ts...)}
}

// scanSteps runs body once per step i < steps on (state..., slice i of
// each x along axes[j], from the end where dirs[j] is 1) and returns the
// last state and each scan output's tensors in step order.
func (n *node) scanSteps(body *onnxpb.GraphProto, state []*value, xs []*tensor.Tensor, axes, dirs []int, steps int) ([]*value, [][]*tensor.Tensor) {
	scans := make([][]*tensor.Tensor, max(len(body.GetOutput())-len(state), 0))
	for i := range steps {
		args := slices.Clone(state)
		for j, x := range xs {
			at := i
			if dirs[j] == 1 {
				at = steps - 1 - i
			}
			args = append(args, &value{t: sliceAt(x, axes[j], at)})
		}
		outs := n.subgraph(body, args)
		if n.err != nil {
			return nil, nil
		}
		state = outs[:len(state)]
		n.collect(scans, outs[len(state):])
	}
	return state, scans
}

// scanOp unrolls a Scan (opset 9 on; scan8 before): the first
// len(inputs)-num_scan_inputs inputs are the states, the rest are scanned
// along their scan axis (from the end where scan_input_directions says 1);
// the body takes (states..., one slice of each scanned input) and gives
// (states..., scan outputs), the scan outputs stacked along
// scan_output_axes (reversed where scan_output_directions says 1).
func scanOp(n *node) []*value {
	if n.opset < 9 {
		return scan8(n)
	}
	body := n.graph("body")
	m := n.int("num_scan_inputs", -1)
	if body == nil || m < 1 || m > len(n.in) {
		n.fail("num_scan_inputs %d of %d inputs", m, len(n.in))
		return nil
	}
	nstate := len(n.in) - m
	inAxes := n.intList("scan_input_axes", make([]int, m))
	inDirs := n.intList("scan_input_directions", make([]int, m))
	nscan := len(body.GetOutput()) - nstate
	outAxes := n.intList("scan_output_axes", make([]int, max(nscan, 0)))
	outDirs := n.intList("scan_output_directions", make([]int, max(nscan, 0)))
	if nscan < 0 || len(inAxes) != m || len(inDirs) != m || len(outAxes) != nscan || len(outDirs) != nscan {
		n.fail("scan axes and directions do not match %d scanned inputs and %d scan outputs", m, nscan)
		return nil
	}
	xs := make([]*tensor.Tensor, m)
	steps := -1
	for j := range m {
		x := n.x(nstate + j)
		if n.err != nil {
			return nil
		}
		ax := inAxes[j]
		if ax < 0 {
			ax += len(x.Shape())
		}
		if ax < 0 || ax >= len(x.Shape()) {
			n.fail("scan_input_axes[%d] = %d for an input of rank %d", j, inAxes[j], len(x.Shape()))
			return nil
		}
		if steps >= 0 && x.Shape()[ax] != steps {
			n.fail("scanned inputs of %d and %d steps", steps, x.Shape()[ax])
			return nil
		}
		inAxes[j], steps, xs[j] = ax, x.Shape()[ax], x
	}
	state, scans := n.scanSteps(body, n.in[:nstate], xs, inAxes, inDirs, steps)
	res := slices.Clone(state)
	for k, ts := range scans {
		res = append(res, n.stacked(ts, outAxes[k], outDirs[k] == 1))
	}
	if n.err != nil {
		return nil
	}
	return res
}

// scan8 is opset 8's Scan: an optional sequence_lens input first, then
// states and scanned inputs that all have a batch axis first, scanned
// along axis 1 (from the end where directions says 1); the body runs on
// each batch element's slices, and the outputs are stacked over the
// batch again. Sequences shorter than the scanned axis are refused.
func scan8(n *node) []*value {
	body := n.graph("body")
	m := n.int("num_scan_inputs", -1)
	if body == nil || m < 1 || m > len(n.in)-1 {
		n.fail("num_scan_inputs %d of %d inputs", m, len(n.in)-1)
		return nil
	}
	nstate := len(n.in) - 1 - m
	dirs := n.intList("directions", make([]int, m))
	if len(dirs) != m {
		n.fail("%d directions for %d scanned inputs", len(dirs), m)
		return nil
	}
	ins := make([]*tensor.Tensor, len(n.in)-1)
	for i := range ins {
		ins[i] = n.x(1 + i)
	}
	if n.err != nil {
		return nil
	}
	batch, steps := ins[nstate].Shape()[0], -1
	for _, x := range ins {
		if len(x.Shape()) < 1 || x.Shape()[0] != batch {
			n.fail("inputs of batch %d and shape %v", batch, x.Shape())
			return nil
		}
	}
	for _, x := range ins[nstate:] {
		if len(x.Shape()) < 2 || steps >= 0 && x.Shape()[1] != steps {
			n.fail("scanned inputs of shapes %v and %v", ins[nstate].Shape(), x.Shape())
			return nil
		}
		steps = x.Shape()[1]
	}
	if n.has(0) {
		for b, l := range n.ints(0) {
			if l != steps {
				n.fail("sequence_lens[%d] is %d of %d steps: shorter sequences are not supported", b, l, steps)
				return nil
			}
		}
	}
	// per output (states, then scan outputs), each batch element's value
	perBatch := make([][]*tensor.Tensor, len(body.GetOutput()))
	for b := range batch {
		state := make([]*value, nstate)
		xs := make([]*tensor.Tensor, m)
		for j := range ins {
			if j < nstate {
				state[j] = &value{t: sliceAt(ins[j], 0, b)}
			} else {
				xs[j-nstate] = sliceAt(ins[j], 0, b)
			}
		}
		state, scans := n.scanSteps(body, state, xs, make([]int, m), dirs, steps)
		n.collect(perBatch, state)
		for k, ts := range scans {
			if v := n.stacked(ts, 0, false); v != nil {
				perBatch[nstate+k] = append(perBatch[nstate+k], v.t)
			}
		}
		if n.err != nil {
			return nil
		}
	}
	var res []*value
	for _, ts := range perBatch {
		res = append(res, n.stacked(ts, 0, false))
	}
	if n.err != nil {
		return nil
	}
	return res
}

// sliceAt is x's slice at index i of axis ax, without that axis.
func sliceAt(x *tensor.Tensor, ax, i int) *tensor.Tensor {
	bounds := make([][2]int, len(x.Shape()))
	for d, s := range x.Shape() {
		bounds[d] = [2]int{0, s}
	}
	bounds[ax] = [2]int{i, i + 1}
	return x.Shrink(bounds).Squeeze(&ax)
}
