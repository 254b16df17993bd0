package onnx

import (
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tgc/pkg/onnx/onnxpb"
)

// Control flow (If, Loop, Scan) on models built here; ONNX's own cases
// (test_if, test_loop11, test_scan9_sum, test_range_*_expanded) run in the
// conformance suite.

func graphAttr(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

func subgraph(name string, nodes []*onnxpb.NodeProto, ins, outs []*onnxpb.ValueInfoProto, inits ...*onnxpb.TensorProto) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Name: proto.String(name), Node: nodes, Input: ins, Output: outs, Initializer: inits}
}

// TestIf: the branch taken follows the condition (an input, so realized
// while the graph is built), each branch reads the outer graph's values
// by name and its own initializer, and a nested If inside a branch sees
// both scopes.
func TestIf(t *testing.T) {
	inner := subgraph("inner", []*onnxpb.NodeProto{nodeOf("Neg", []string{"t"}, []string{"n"})}, nil, []*onnxpb.ValueInfoProto{tensorInfo("n", Float, 3)})
	then := subgraph("then", []*onnxpb.NodeProto{
		nodeOf("Mul", []string{"x", "two"}, []string{"t"}),
		nodeOf("If", []string{"c"}, []string{"r"}, graphAttr("then_branch", inner), graphAttr("else_branch", inner)),
	}, nil, []*onnxpb.ValueInfoProto{tensorInfo("r", Float, 3)}, floatInit("two", []int{1}, 2))
	els := subgraph("else", []*onnxpb.NodeProto{nodeOf("Add", []string{"x", "y"}, []string{"s"})}, nil, []*onnxpb.ValueInfoProto{tensorInfo("s", Float, 3)})
	m := graphSpec{
		nodes: []*onnxpb.NodeProto{
			nodeOf("Exp", []string{"x0"}, []string{"x"}),
			nodeOf("If", []string{"c"}, []string{"z"}, graphAttr("then_branch", then), graphAttr("else_branch", els)),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("c", Bool), tensorInfo("x0", Float, 3), tensorInfo("y", Float, 3)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("z", Float, 3)},
	}.parse(t)
	x0, y := []float64{0, 1, -1}, []float64{10, 20, 30}
	for _, c := range []bool{true, false} {
		cond := ArrayOfInts(Bool, nil, []int64{0})
		if c {
			cond = ArrayOfInts(Bool, nil, []int64{1})
		}
		in := map[string]*Array{"c": cond, "x0": floatArray([]int{3}, x0...), "y": floatArray([]int{3}, y...)}
		for _, out := range [][]*Array{run(t, m, in), runOnDevice(t, m, in)} {
			got := out[0].Floats()
			for i := range x0 {
				want := math.Exp(x0[i]) + y[i]
				if c {
					want = -2 * math.Exp(x0[i])
				}
				if math.Abs(got[i]-want) > 1e-5*math.Abs(want) {
					t.Errorf("cond %v: element %d is %v, want %v", c, i, got[i], want)
				}
			}
		}
	}
}

// TestLoop: M iterations (or fewer when the body's condition turns
// false, the Loop having a condition input) of a loop-carried sum and
// product, the body's scan output stacked per iteration; without a
// condition input the body's is ignored; with neither M nor a condition
// that ever turns false, the unrolling stops with an error instead of
// running forever.
func TestLoop(t *testing.T) {
	body := subgraph("body", []*onnxpb.NodeProto{
		nodeOf("Cast", []string{"i"}, []string{"fi"}, intAttr("to", int64(Float))),
		nodeOf("Add", []string{"acc", "fi"}, []string{"acc2"}),
		nodeOf("Mul", []string{"acc2", "x"}, []string{"scan"}),
		nodeOf("Less", []string{"acc2", "limit"}, []string{"more"}),
	}, []*onnxpb.ValueInfoProto{tensorInfo("i", Int64), tensorInfo("cin", Bool), tensorInfo("acc", Float, 1)},
		[]*onnxpb.ValueInfoProto{tensorInfo("more", Bool, 1), tensorInfo("acc2", Float, 1), tensorInfo("scan", Float, 2)})
	spec := graphSpec{
		nodes:   []*onnxpb.NodeProto{nodeOf("Loop", []string{"M", "c0", "acc0"}, []string{"acc", "scans"}, graphAttr("body", body))},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("M", Int64), tensorInfo("c0", Bool), tensorInfo("acc0", Float, 1), tensorInfo("x", Float, 2), tensorInfo("limit", Float, 1)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("acc", Float, 1), tensorInfo("scans", Float, "n", 2)},
	}
	m := spec.parse(t)
	for _, c := range []struct {
		m     int64
		limit float64
	}{{5, 100}, {5, 4}, {0, 100}} {
		// the reference: acc += i while i < M and the previous acc < limit
		acc, x := 0.5, []float64{1, -2}
		var scans []float64
		for i := int64(0); i < c.m; i++ {
			acc += float64(i)
			scans = append(scans, acc*x[0], acc*x[1])
			if acc >= c.limit {
				break
			}
		}
		if c.m == 0 {
			_, err := m.Run(ctx, map[string]Input{"M": {Array: ArrayOfInts(Int64, nil, []int64{0})}, "c0": {Array: ArrayOfInts(Bool, nil, []int64{1})}, "acc0": {Array: floatArray([]int{1}, 0.5)},
				"x": {Array: floatArray([]int{2}, x...)}, "limit": {Array: floatArray([]int{1}, c.limit)}}, RunOptions{})
			if err == nil || !strings.Contains(err.Error(), "ran no iteration") {
				t.Errorf("a loop of no iteration with a scan output: %v", err)
			}
			continue
		}
		in := map[string]*Array{"M": ArrayOfInts(Int64, nil, []int64{c.m}), "c0": ArrayOfInts(Bool, nil, []int64{1}), "acc0": floatArray([]int{1}, 0.5),
			"x": floatArray([]int{2}, x...), "limit": floatArray([]int{1}, c.limit)}
		// host inputs fold the loop on the host; device tensors make its
		// condition a device value, read back each iteration
		for _, got := range [][]*Array{run(t, m, in), runOnDevice(t, m, in)} {
			if got[0].Floats()[0] != acc || !slices.Equal(got[1].Floats(), scans) || !slices.Equal(got[1].Shape, []int{len(scans) / 2, 2}) {
				t.Errorf("M %d, limit %v: acc %v scans %v %v; want %v %v", c.m, c.limit, got[0].Floats(), got[1].Shape, got[1].Floats(), acc, scans)
			}
		}
	}
	// with M and no condition input the body's condition is ignored: a
	// for loop of M iterations (the body above says stop after acc >= 4)
	forLoop := spec
	forLoop.nodes = []*onnxpb.NodeProto{nodeOf("Loop", []string{"M", "", "acc0"}, []string{"acc", "scans"}, graphAttr("body", body))}
	got := run(t, forLoop.parse(t), map[string]*Array{"M": ArrayOfInts(Int64, nil, []int64{5}), "c0": ArrayOfInts(Bool, nil, []int64{1}), "acc0": floatArray([]int{1}, 0.5),
		"x": floatArray([]int{2}, 1, -2), "limit": floatArray([]int{1}, 4)})
	if got[0].Floats()[0] != 10.5 || got[1].Shape[0] != 5 {
		t.Errorf("a for loop stopped by its body's ignored condition: acc %v, %d scans", got[0].Floats(), got[1].Shape[0])
	}
	endless := subgraph("body", []*onnxpb.NodeProto{nodeOf("Identity", []string{"cin"}, []string{"cout"}), nodeOf("Neg", []string{"v"}, []string{"v2"})},
		[]*onnxpb.ValueInfoProto{tensorInfo("i", Int64), tensorInfo("cin", Bool), tensorInfo("v", Float, 1)},
		[]*onnxpb.ValueInfoProto{tensorInfo("cout", Bool), tensorInfo("v2", Float, 1)})
	forever := graphSpec{
		nodes:   []*onnxpb.NodeProto{nodeOf("Loop", []string{"", "c", "v0"}, []string{"y"}, graphAttr("body", endless))},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("c", Bool), tensorInfo("v0", Float, 1)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float, 1)},
	}.parse(t)
	_, err := forever.Run(ctx, map[string]Input{"c": {Array: ArrayOfInts(Bool, nil, []int64{1})}, "v0": {Array: floatArray([]int{1}, 1)}}, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "65536 subgraphs without finishing") {
		t.Errorf("an endless loop: %v", err)
	}
}

// TestScan: a running sum over the rows of x (scan axis 0) and over its
// columns backwards (scan axis 1, reversed input and output), each step's
// state and output checked against a float64 reference.
func TestScan(t *testing.T) {
	body := subgraph("body", []*onnxpb.NodeProto{
		nodeOf("Add", []string{"s", "row"}, []string{"s2"}),
		nodeOf("Identity", []string{"s2"}, []string{"out"}),
	}, []*onnxpb.ValueInfoProto{tensorInfo("s", Float, 3), tensorInfo("row", Float, 3)},
		[]*onnxpb.ValueInfoProto{tensorInfo("s2", Float, 3), tensorInfo("out", Float, 3)})
	colBody := subgraph("cols", body.GetNode(), []*onnxpb.ValueInfoProto{tensorInfo("s", Float, 2), tensorInfo("row", Float, 2)},
		[]*onnxpb.ValueInfoProto{tensorInfo("s2", Float, 2), tensorInfo("out", Float, 2)})
	m := graphSpec{
		opset: 11,
		nodes: []*onnxpb.NodeProto{
			nodeOf("Scan", []string{"s0", "x"}, []string{"rows", "rowsums"}, graphAttr("body", body), intAttr("num_scan_inputs", 1)),
			nodeOf("Scan", []string{"c0", "x"}, []string{"cols", "colsums"}, graphAttr("body", colBody), intAttr("num_scan_inputs", 1),
				intsAttr("scan_input_axes", 1), intsAttr("scan_input_directions", 1), intsAttr("scan_output_axes", -1), intsAttr("scan_output_directions", 1)),
		},
		inputs: []*onnxpb.ValueInfoProto{tensorInfo("s0", Float, 3), tensorInfo("c0", Float, 2), tensorInfo("x", Float, 2, 3)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("rows", Float, 3), tensorInfo("rowsums", Float, 2, 3),
			tensorInfo("cols", Float, 2), tensorInfo("colsums", Float, 2, 3)},
	}.parse(t)
	x := []float64{1, 2, 3, 4, 5, 6}
	got := run(t, m, map[string]*Array{"s0": floatArray([]int{3}, 0, 0, 0), "c0": floatArray([]int{2}, 0, 0), "x": floatArray([]int{2, 3}, x...)})
	if want := []float64{5, 7, 9}; !slices.Equal(got[0].Floats(), want) {
		t.Errorf("row state %v, want %v", got[0].Floats(), want)
	}
	if want := []float64{1, 2, 3, 5, 7, 9}; !slices.Equal(got[1].Floats(), want) {
		t.Errorf("row sums %v, want %v", got[1].Floats(), want)
	}
	// columns from the last: states (3,6), (5,11), (6,15); outputs reversed
	// back into column order and stacked along the last axis
	if want := []float64{6, 15}; !slices.Equal(got[2].Floats(), want) {
		t.Errorf("column state %v, want %v", got[2].Floats(), want)
	}
	if want := []float64{6, 5, 3, 15, 11, 6}; !slices.Equal(got[3].Floats(), want) || !slices.Equal(got[3].Shape, []int{2, 3}) {
		t.Errorf("column sums %v %v, want (2, 3) %v", got[3].Shape, got[3].Floats(), want)
	}
}

// TestControlFlowChecked: a subgraph's nodes are checked when the model
// loads, like the main graph's: an input defined nowhere, a missing
// branch, and a refused operator named with the path to it.
func TestControlFlowChecked(t *testing.T) {
	undefined := subgraph("b", []*onnxpb.NodeProto{nodeOf("Neg", []string{"nowhere"}, []string{"o"})}, nil, []*onnxpb.ValueInfoProto{tensorInfo("o", Float, 1)})
	spec := graphSpec{
		nodes:   []*onnxpb.NodeProto{nodeOf("If", []string{"c"}, []string{"y"}, graphAttr("then_branch", undefined), graphAttr("else_branch", undefined))},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("c", Bool)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float, 1)},
	}
	if _, err := Parse(spec.bytes(t), "test.onnx", ""); err == nil || !strings.Contains(err.Error(), `then_branch: node 0 (output "o"): input "nowhere" is not defined`) {
		t.Errorf("undefined input in a branch: %v", err)
	}
	spec.nodes = []*onnxpb.NodeProto{nodeOf("If", []string{"c"}, []string{"y"}, graphAttr("then_branch", undefined))}
	if _, err := Parse(spec.bytes(t), "test.onnx", ""); err == nil || !strings.Contains(err.Error(), "attribute else_branch (a graph) is missing") {
		t.Errorf("a missing branch: %v", err)
	}
	refused := subgraph("b", []*onnxpb.NodeProto{nodeOf("RandomNormal", nil, []string{"o"}, intsAttr("shape", 1))}, nil, []*onnxpb.ValueInfoProto{tensorInfo("o", Float, 1)})
	spec.nodes = []*onnxpb.NodeProto{nodeOf("If", []string{"c"}, []string{"y"}, graphAttr("then_branch", refused), graphAttr("else_branch", refused))}
	_, err := Parse(spec.bytes(t), "test.onnx", "")
	if err == nil || !strings.Contains(err.Error(), `RandomNormal (opset 13) is not supported (node 0 (output "y") then_branch: node 0 (output "o"))`) {
		t.Errorf("refused operator in a branch: %v", err)
	}
}

// runOnDevice runs m on inputs given as device tensors (as a script's
// are), so that nothing folds on the host.
func runOnDevice(t *testing.T, m *Model, inputs map[string]*Array) []*Array {
	t.Helper()
	in := map[string]Input{}
	for k, a := range inputs {
		x, err := a.Tensor(ctx, k, false)
		if err != nil {
			t.Fatal(err)
		}
		in[k] = Input{Tensor: x}
	}
	return runInputs(t, m, in)
}

// TestScan8: opset 8's Scan runs the body on each batch element (the
// first axis of every input) along axis 1, backwards with directions 1,
// and refuses sequence_lens shorter than that axis.
func TestScan8(t *testing.T) {
	body := subgraph("body", []*onnxpb.NodeProto{
		nodeOf("Mul", []string{"s", "two"}, []string{"s2"}),
		nodeOf("Add", []string{"s2", "v"}, []string{"s3"}),
		nodeOf("Identity", []string{"s3"}, []string{"out"}),
	}, []*onnxpb.ValueInfoProto{tensorInfo("s", Float, 1), tensorInfo("v", Float, 1)},
		[]*onnxpb.ValueInfoProto{tensorInfo("s3", Float, 1), tensorInfo("out", Float, 1)}, floatInit("two", []int{1}, 2))
	spec := graphSpec{
		opset:   8,
		nodes:   []*onnxpb.NodeProto{nodeOf("Scan", []string{"lens", "s0", "x"}, []string{"s", "outs"}, graphAttr("body", body), intAttr("num_scan_inputs", 1), intsAttr("directions", 1))},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("lens", Int32, 2), tensorInfo("s0", Float, 2, 1), tensorInfo("x", Float, 2, 3, 1)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("s", Float, 2, 1), tensorInfo("outs", Float, 2, 3, 1)},
	}
	m := spec.parse(t)
	s0, x := []float64{1, -1}, []float64{1, 2, 3, 4, 5, 6}
	var wantS, wantOuts []float64
	for b := range 2 {
		s := s0[b]
		for i := 2; i >= 0; i-- { // backwards
			s = 2*s + x[3*b+i]
			wantOuts = append(wantOuts, s)
		}
		wantS = append(wantS, s)
	}
	got := run(t, m, map[string]*Array{"lens": ArrayOfInts(Int32, []int{2}, []int64{3, 3}), "s0": floatArray([]int{2, 1}, s0...), "x": floatArray([]int{2, 3, 1}, x...)})
	if !slices.Equal(got[0].Floats(), wantS) || !slices.Equal(got[1].Floats(), wantOuts) || !slices.Equal(got[1].Shape, []int{2, 3, 1}) {
		t.Errorf("states %v, outputs %v %v; want %v, %v", got[0].Floats(), got[1].Shape, got[1].Floats(), wantS, wantOuts)
	}
	_, err := m.Run(ctx, map[string]Input{"lens": {Array: ArrayOfInts(Int32, []int{2}, []int64{3, 2})}, "s0": {Array: floatArray([]int{2, 1}, s0...)}, "x": {Array: floatArray([]int{2, 3, 1}, x...)}}, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "sequence_lens[1] is 2 of 3 steps") {
		t.Errorf("a shorter sequence: %v", err)
	}
}
