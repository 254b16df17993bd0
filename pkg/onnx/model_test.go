package onnx

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/onnx/onnxpb"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// ctx is the tests' context, on the GO interpreter.
var ctx *tensor.Context

func TestMain(m *testing.M) {
	c, _, err := realize.NewContext("GO", realize.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx = c
	os.Exit(m.Run())
}

// reluModel is y = Relu(x) for x: float32 (batch, 3).
func reluModel() graphSpec {
	return graphSpec{
		nodes:   []*onnxpb.NodeProto{nodeOf("Relu", []string{"x"}, []string{"y"})},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, "batch", 3)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float, "batch", 3)},
	}
}

func run(t *testing.T, m *Model, inputs map[string]*Array) []*Array {
	t.Helper()
	in := map[string]Input{}
	for k, a := range inputs {
		in[k] = Input{Array: a}
	}
	return runInputs(t, m, in)
}

// runInputs runs m and reads its outputs back.
func runInputs(t *testing.T, m *Model, in map[string]Input) []*Array {
	t.Helper()
	outs, err := m.Run(ctx, in, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	arrs, err := RealizeOutputs(outs)
	if err != nil {
		t.Fatal(err)
	}
	return arrs
}

func TestRunRelu(t *testing.T) {
	m := reluModel().parse(t)
	got := run(t, m, map[string]*Array{"x": floatArray([]int{2, 3}, -1, 2, -3, 4, 0, 6)})
	if !slices.Equal(got[0].Floats(), []float64{0, 2, 0, 4, 0, 6}) || !slices.Equal(got[0].Shape, []int{2, 3}) {
		t.Fatalf("got %v %v", got[0].Shape, got[0].Floats())
	}
}

func TestInputErrors(t *testing.T) {
	m := reluModel().parse(t)
	cases := []struct {
		inputs map[string]Input
		opts   RunOptions
		want   []string
	}{
		{map[string]Input{}, RunOptions{}, []string{`missing input "x"`, "x: float32 (batch, 3)"}},
		{map[string]Input{"x": {Array: floatArray([]int{2, 4})}}, RunOptions{}, []string{`input "x" has shape (2, 4), the model declares (batch, 3)`}},
		{map[string]Input{"x": {Array: ArrayOfInts(Int32, []int{2, 3}, make([]int64, 6))}}, RunOptions{}, []string{`input "x" is int32 (2, 3), the model declares float32 (batch, 3)`}},
		{map[string]Input{"x": {Array: floatArray([]int{2, 3})}}, RunOptions{Dims: map[string]int{"batch": 4}}, []string{"(batch is 4)"}},
		{map[string]Input{"x": {Array: floatArray([]int{2, 3})}}, RunOptions{Dims: map[string]int{"time": 4}}, []string{`no input has a dimension named "time"`}},
		{map[string]Input{"x": {Array: floatArray([]int{2, 3})}, "z": {Array: floatArray([]int{1})}}, RunOptions{}, []string{`no graph input named "z"`, "x: float32"}},
	}
	for _, c := range cases {
		_, err := m.Run(ctx, c.inputs, c.opts)
		if err == nil {
			t.Errorf("%v: no error", c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
	}
	// a binding that agrees with --dim is fine
	if _, err := m.Run(ctx, map[string]Input{"x": {Array: floatArray([]int{4, 3})}}, RunOptions{Dims: map[string]int{"batch": 4}}); err != nil {
		t.Error(err)
	}
}

// CastLike reads only the data type of its "like" input: a "like" of
// another shape than declared runs (ONNX 1.12's test data feeds one), one
// of another type is refused, and an input that is also read otherwise
// keeps its shape check.
func TestCastLikeInputShape(t *testing.T) {
	m := graphSpec{
		nodes:   []*onnxpb.NodeProto{nodeOf("CastLike", []string{"x", "like"}, []string{"y"})},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, 2), tensorInfo("like", Int32, 2)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Int32, 2)},
		opset:   15,
	}.parse(t)
	got := run(t, m, map[string]*Array{"x": floatArray([]int{2}, 1.5, -2.5), "like": ArrayOfInts(Int32, []int{1}, []int64{0})})
	if got[0].Type != Int32 || !slices.Equal(got[0].Shape, []int{2}) || got[0].Floats()[0] != 1 || got[0].Floats()[1] != -2 {
		t.Errorf("got %s %v %v", got[0].Type, got[0].Shape, got[0].Floats())
	}
	_, err := m.Run(ctx, map[string]Input{"x": {Array: floatArray([]int{2})}, "like": {Array: floatArray([]int{1})}}, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), `input "like" is float32 (1,), the model declares int32 (2,)`) {
		t.Errorf("error %v, want the like input's type refused", err)
	}
	both := graphSpec{
		nodes: []*onnxpb.NodeProto{
			nodeOf("CastLike", []string{"x", "like"}, []string{"c"}),
			nodeOf("Add", []string{"c", "like"}, []string{"y"}),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, 2), tensorInfo("like", Float, 2)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float, 2)},
		opset:   15,
	}.parse(t)
	_, err = both.Run(ctx, map[string]Input{"x": {Array: floatArray([]int{2})}, "like": {Array: floatArray([]int{1})}}, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), `input "like" has shape (1,), the model declares (2,)`) {
		t.Errorf("error %v, want the shape of a like input that Add reads refused", err)
	}
}

func TestParseErrors(t *testing.T) {
	good := reluModel().bytes(t)
	withOpset := reluModel()
	withOpset.opset = MaxOpset + 1
	undefined := reluModel()
	undefined.nodes = []*onnxpb.NodeProto{nodeOf("Relu", []string{"w"}, []string{"y"})}
	badInit := reluModel()
	badInit.inits = []*onnxpb.TensorProto{{Name: proto.String("w"), DataType: proto.Int32(int32(Float)), Dims: []int64{4}, RawData: make([]byte, 15)}}
	negDim := reluModel()
	negDim.inits = []*onnxpb.TensorProto{{Name: proto.String("w"), DataType: proto.Int32(int32(Float)), Dims: []int64{-1}}}
	huge := reluModel()
	huge.inits = []*onnxpb.TensorProto{{Name: proto.String("w"), DataType: proto.Int32(int32(Float)), Dims: []int64{1 << 20, 1 << 20}}}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"not protobuf", []byte("hello, this is not a model"), "not an ONNX model"},
		{"truncated", good[:len(good)-3], "at byte"},
		{"empty", nil, "not an ONNX model"},
		{"opset", withOpset.bytes(t), fmt.Sprintf("opset %d of ai.onnx is not supported", MaxOpset+1)},
		{"undefined input", undefined.bytes(t), `input "w" is not defined`},
		{"raw_data size", badInit.bytes(t), `initializer "w": raw_data has 15 bytes`},
		{"negative dim", negDim.bytes(t), `initializer "w": dimension 0 is -1`},
		{"too large", huge.bytes(t), "more than 2^31 elements"},
	}
	for _, c := range cases {
		_, err := Parse(c.data, "m.onnx", "")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "m.onnx: ") {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
	// the truncated file's error names the field where the data ends
	_, err := Parse(good[:len(good)-3], "m.onnx", "")
	if !strings.Contains(err.Error(), "opset_import[0].domain at byte") {
		t.Errorf("truncated: %v names no field", err)
	}
}

func TestRefusals(t *testing.T) {
	g := reluModel()
	loop := nodeOf("SequenceMap", []string{"x"}, []string{"z"})
	loop.Name = proto.String("map_1")
	g.nodes = append(g.nodes, loop, nodeOf("FancyOp", []string{"x"}, []string{"q"}), nodeOf("Identity", []string{"x"}, []string{"s"}))
	g.outputs = append(g.outputs, tensorInfo("s", String))
	_, err := Parse(g.bytes(t), "model.onnx", "")
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a RefusedError", err)
	}
	for _, want := range []string{
		`model.onnx: operator SequenceMap (opset 13) is not supported (node "map_1")`,
		`model.onnx: operator FancyOp (opset 13) is not supported (node 2 (output "q"))`,
		`model.onnx: value "s" is a string tensor`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nlacks %q", err, want)
		}
	}
	if re.Category() != CatControlFlow || len(re.Refusals) != 3 {
		t.Errorf("category %q, %d refusals", re.Category(), len(re.Refusals))
	}
	// Inspect keeps the model and its refusals
	dir := t.TempDir()
	p := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(p, g.bytes(t), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Inspect(p)
	if err != nil || len(m.Refusals) != 3 {
		t.Fatalf("Inspect: %v, %v", m, err)
	}
}

// Shape → Gather → Unsqueeze → Concat → Reshape folds on the host: the
// reshape of the input is a view of its buffer, computed by no kernel.
func TestShapeSubgraphFolds(t *testing.T) {
	g := graphSpec{
		nodes: []*onnxpb.NodeProto{
			nodeOf("Shape", []string{"x"}, []string{"s"}),
			nodeOf("Gather", []string{"s", "i0"}, []string{"d0"}, intAttr("axis", 0)),
			nodeOf("Unsqueeze", []string{"d0", "ax"}, []string{"d0u"}),
			nodeOf("Concat", []string{"d0u", "m1"}, []string{"target"}, intAttr("axis", 0)),
			nodeOf("Reshape", []string{"x", "target"}, []string{"y"}),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, 2, 3, 4)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float, 2, 12)},
		inits:   []*onnxpb.TensorProto{int64Init("i0", nil, 0), int64Init("ax", []int{1}, 0), int64Init("m1", []int{1}, -1)},
	}
	m := g.parse(t)
	x := floatArray([]int{2, 3, 4}, make([]float64, 24)...)
	xt, _ := x.Tensor(ctx, "x", false)
	outs, err := m.Run(ctx, map[string]Input{"x": {Tensor: xt}}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := outs[0].Node()
	if n.Op != ir.OpReshape || n.Src[0] != xt.Node() || !slices.Equal(n.Shape, []int{2, 12}) {
		t.Fatalf("output is %v, want a reshape of the input", n)
	}
}

// A Conv → BatchNormalization → Relu chain schedules into the kernels of
// the convolution alone: the normalization and the activation fuse into
// its reduce.
func TestFusionAcrossOperators(t *testing.T) {
	w := make([]float32, 4*3*3*3)
	for i := range w {
		w[i] = float32(i%7) - 3
	}
	stat := func(name string, v ...float32) *onnxpb.TensorProto { return floatInit(name, []int{4}, v...) }
	g := graphSpec{
		nodes: []*onnxpb.NodeProto{
			nodeOf("Conv", []string{"x", "w"}, []string{"c"}, intsAttr("pads", 1, 1, 1, 1)),
			nodeOf("BatchNormalization", []string{"c", "s", "b", "m", "v"}, []string{"n"}),
			nodeOf("Relu", []string{"n"}, []string{"y"}),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, 1, 3, 8, 8)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float, 1, 4, 8, 8)},
		inits: []*onnxpb.TensorProto{floatInit("w", []int{4, 3, 3, 3}, w...),
			stat("s", 1, 2, 3, 4), stat("b", 0, 1, 0, 1), stat("m", 1, 1, 1, 1), stat("v", 4, 4, 4, 4)},
	}
	m := g.parse(t)
	xt, _ := floatArray([]int{1, 3, 8, 8}, make([]float64, 192)...).Tensor(ctx, "x", false)
	outs, err := m.Run(ctx, map[string]Input{"x": {Tensor: xt}}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kernels := func(n *tensor.Node) int {
		sched, err := fuse.Create([]*tensor.Node{n}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return len(sched.Items)
	}
	wt, _ := m.Init["w"].Tensor(ctx, "w", true)
	conv := xt.Conv2d(wt, nil, tensor.ConvOpts{Padding: []int{1}})
	if got, want := kernels(outs[0].Node()), kernels(conv.Node()); got != want {
		t.Errorf("conv+bn+relu is %d kernels, the conv alone %d", got, want)
	}
	// On the CPU the conv is a matrix product in rows (rows.go); the
	// normalization, folded into a scale and a shift per channel on the
	// host, and the activation are its epilogue: no kernel more than the
	// conv alone, and the product's kernel reads the scale and the shift.
	cpu, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	g.nodes[0].Output[0], g.nodes = "y", g.nodes[:1]
	w8 := make([]float32, 128*64*9)
	g.inits[0] = floatInit("w", []int{128, 64, 3, 3}, w8...)
	g.inputs[0] = tensorInfo("x", Float, 1, 64, 8, 8)
	convOnly := g.parse(t)
	g = graphSpec{nodes: []*onnxpb.NodeProto{
		nodeOf("Conv", []string{"x", "w"}, []string{"c"}, intsAttr("pads", 1, 1, 1, 1)),
		nodeOf("BatchNormalization", []string{"c", "s", "b", "m", "v"}, []string{"n"}),
		nodeOf("Relu", []string{"n"}, []string{"y"})},
		inputs: g.inputs, outputs: g.outputs,
		inits: []*onnxpb.TensorProto{g.inits[0], floatInit("s", []int{128}, make([]float32, 128)...), floatInit("b", []int{128}, make([]float32, 128)...),
			floatInit("m", []int{128}, make([]float32, 128)...), floatInit("v", []int{128}, make([]float32, 128)...)}}
	chain := g.parse(t)
	schedule := func(m *Model) *fuse.Schedule {
		x, _ := NewArray(Float, []int{1, 64, 8, 8}).Tensor(cpu, "x", false)
		outs, err := m.Run(cpu, map[string]Input{"x": {Tensor: x}}, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := fuse.Create([]*tensor.Node{outs[0].Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sc, so := schedule(chain), schedule(convOnly)
	if len(sc.Items) != len(so.Items) {
		t.Errorf("on the CPU conv+bn+relu is %d kernels, the conv alone %d", len(sc.Items), len(so.Items))
	}
	fused := false // the product's kernel reads the scale and the shift
	for _, it := range sc.Items {
		stats := 0
		for _, a := range it.Args {
			if slices.Equal(a.Shape, []int{1, 1, 128}) {
				stats++
			}
		}
		fused = fused || strings.HasPrefix(it.Kernel.Name, "r_") && stats == 2
	}
	if !fused {
		t.Errorf("the normalization and the activation are not the product's epilogue:\n%s", sc.Dump())
	}
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 16+12)
	copy(data[16:], floatArray([]int{3}, 1, 2, 3).Data)
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ext := func(loc, offset string) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(int32(Float)), Dims: []int64{3},
			DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
			ExternalData: []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String(loc)}, {Key: proto.String("offset"), Value: proto.String(offset)}}}
	}
	g := graphSpec{
		nodes:   []*onnxpb.NodeProto{nodeOf("Add", []string{"x", "w"}, []string{"y"})},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, 3)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float, 3)},
		inits:   []*onnxpb.TensorProto{ext("w.bin", "16")},
	}
	path := filepath.Join(dir, "m.onnx")
	write := func(g graphSpec) {
		if err := os.WriteFile(path, g.bytes(t), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(g)
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got := run(t, m, map[string]*Array{"x": floatArray([]int{3}, 10, 20, 30)})
	if !slices.Equal(got[0].Floats(), []float64{11, 22, 33}) {
		t.Fatalf("got %v", got[0].Floats())
	}
	for _, c := range []struct{ loc, offset, want string }{
		{"missing.bin", "0", "missing.bin"},
		{"../w.bin", "0", "must be a path inside the model's folder"},
		{"/etc/passwd", "0", "must be a path inside the model's folder"},
		{"w.bin", "20", "past its end"},
		{"w.bin", "-4", "not a byte count"},
	} {
		g.inits = []*onnxpb.TensorProto{ext(c.loc, c.offset)}
		write(g)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `initializer "w"`) {
			t.Errorf("%s@%s: %v, want %q", c.loc, c.offset, err, c.want)
		}
	}
}

// raw_data and the typed fields give the same values for every type.
func TestTensorEncodings(t *testing.T) {
	for _, typ := range []DataType{Float, Double, Float16, BFloat16, Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Bool} {
		vals := []float64{0, 1, 5, 2}
		raw := ArrayOfFloats(typ, []int{4}, vals)
		tp := &onnxpb.TensorProto{DataType: proto.Int32(int32(typ)), Dims: []int64{4}}
		for _, v := range vals {
			switch typ {
			case Float:
				tp.FloatData = append(tp.FloatData, float32(v))
			case Double:
				tp.DoubleData = append(tp.DoubleData, v)
			case Int64:
				tp.Int64Data = append(tp.Int64Data, int64(v))
			case Uint32:
				tp.Uint64Data = append(tp.Uint64Data, uint64(v))
			case Float16, BFloat16:
				one := ArrayOfFloats(typ, []int{1}, []float64{v})
				tp.Int32Data = append(tp.Int32Data, int32(one.Data[0])|int32(one.Data[1])<<8)
			default:
				tp.Int32Data = append(tp.Int32Data, int32(v))
			}
		}
		a, err := externalDir{}.tensor(tp)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		want := vals
		if typ == Bool {
			want = []float64{0, 1, 1, 1}
		}
		if !slices.Equal(a.Floats(), want) || !slices.Equal(raw.Floats(), want) || string(a.Data) != string(raw.Data) {
			t.Errorf("%s: typed %v, raw %v", typ, a.Floats(), raw.Floats())
		}
	}
	// a type tgc cannot hold is refused by name
	_, err := externalDir{}.tensor(&onnxpb.TensorProto{DataType: proto.Int32(int32(Complex64)), Dims: []int64{1}})
	if err == nil || !strings.Contains(err.Error(), "COMPLEX64") {
		t.Errorf("complex64: %v", err)
	}
}

// On the CPU a convolution with an initializer weight runs as a matrix
// product with the weight packed on the host (convAsMatmul), and a strided
// one reads a weight prepared with the output channels last (convWeight):
// both agree with the GO interpreter's direct convolution.
func TestConvLayoutsOnCPU(t *testing.T) {
	cpu, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	for _, c := range []struct {
		cin, cout, k, stride, pad, h int
	}{{64, 128, 3, 1, 1, 10}, {16, 128, 1, 2, 0, 10}, {8, 64, 3, 2, 1, 9}} {
		w := make([]float32, c.cout*c.cin*c.k*c.k)
		for i := range w {
			w[i] = float32((i*7)%13)/13 - 0.5
		}
		xv := make([]float64, c.cin*c.h*c.h)
		for i := range xv {
			xv[i] = float64((i*5)%11)/11 - 0.5
		}
		g := graphSpec{
			nodes: []*onnxpb.NodeProto{nodeOf("Conv", []string{"x", "w"}, []string{"y"},
				intsAttr("strides", int64(c.stride), int64(c.stride)), intsAttr("pads", int64(c.pad), int64(c.pad), int64(c.pad), int64(c.pad)))},
			inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, 1, c.cin, c.h, c.h)},
			outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float)},
			inits:   []*onnxpb.TensorProto{floatInit("w", []int{c.cout, c.cin, c.k, c.k}, w...)},
		}
		m := g.parse(t)
		x := floatArray([]int{1, c.cin, c.h, c.h}, xv...)
		outs, err := m.Run(cpu, map[string]Input{"x": {Array: x}}, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := RealizeOutputs(outs)
		if err != nil {
			t.Fatal(err)
		}
		xt, _ := x.Tensor(ctx, "x", false)
		wt, _ := m.Init["w"].Tensor(ctx, "w", true)
		want, err := ArrayFrom(xt.Conv2d(wt, nil, tensor.ConvOpts{Stride: []int{c.stride}, Padding: []int{c.pad}}))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0].Shape, want.Shape) {
			t.Fatalf("%+v: shape %v, want %v", c, got[0].Shape, want.Shape)
		}
		for i := range want.Numel() {
			if d := got[0].Float(i) - want.Float(i); d > 1e-4 || d < -1e-4 {
				t.Fatalf("%+v: element %d is %g, want %g", c, i, got[0].Float(i), want.Float(i))
			}
		}
	}
}

// TestConvChainOnCPU: convolutions that read the rows of the one before
// (channels last, with and without padding, asymmetric pads, strides, the
// weight in panels or not) give the GO interpreter's results, where no
// convolution is a matrix product.
func TestConvChainOnCPU(t *testing.T) {
	cpu, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	weight := func(name string, shape ...int) *onnxpb.TensorProto {
		n := 1
		for _, d := range shape {
			n *= d
		}
		w := make([]float32, n)
		for i := range w {
			w[i] = float32((i*7)%13)/13 - 0.5
		}
		return floatInit(name, shape, w...)
	}
	g := graphSpec{
		nodes: []*onnxpb.NodeProto{
			nodeOf("Conv", []string{"x", "w1"}, []string{"a"}, intsAttr("pads", 1, 1, 1, 1)),
			nodeOf("Relu", []string{"a"}, []string{"r"}),
			nodeOf("Conv", []string{"r", "w2"}, []string{"b"}, intsAttr("pads", 0, 1, 2, 0), intsAttr("strides", 2, 1)),
			nodeOf("Conv", []string{"b", "w3"}, []string{"c"}),
			nodeOf("Conv", []string{"c", "w4"}, []string{"y"}, intsAttr("pads", 1, 1, 1, 1), intsAttr("dilations", 2, 1)),
		},
		inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, 2, 5, 11, 9)},
		outputs: []*onnxpb.ValueInfoProto{tensorInfo("y", Float)},
		inits:   []*onnxpb.TensorProto{weight("w1", 64, 5, 3, 3), weight("w2", 96, 64, 3, 2), weight("w3", 64, 96, 1, 1), weight("w4", 32, 64, 3, 3)},
	}
	m := g.parse(t)
	xv := make([]float64, 2*5*11*9)
	for i := range xv {
		xv[i] = float64((i*5)%11)/11 - 0.5
	}
	x := floatArray([]int{2, 5, 11, 9}, xv...)
	outs, err := m.Run(cpu, map[string]Input{"x": {Array: x}}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := RealizeOutputs(outs)
	if err != nil {
		t.Fatal(err)
	}
	want := run(t, m, map[string]*Array{"x": x})
	if !slices.Equal(got[0].Shape, want[0].Shape) {
		t.Fatalf("shape %v, want %v", got[0].Shape, want[0].Shape)
	}
	for i := range want[0].Numel() {
		if d := got[0].Float(i) - want[0].Float(i); math.Abs(d) > 1e-3*(1+math.Abs(want[0].Float(i))) {
			t.Fatalf("element %d is %g, want %g", i, got[0].Float(i), want[0].Float(i))
		}
	}
}

// TestConvEpilogueOnCPU: BatchNormalization (folded on the host), Relu and
// a residual Add run as the epilogue of the convolutions' products, at a
// batch whose rows are one product (8 images of 7x7) and at one whose
// rows are padded to a block (1 image), a product read by two nodes is
// computed once, and a max pool (asymmetric pads) runs on the rows: the
// reduces are as many kernels as the convolutions and the pool, and the
// results are the GO interpreter's (no matrix products there).
func TestConvEpilogueOnCPU(t *testing.T) {
	cpu, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	vals := func(n int, f func(i int) float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	stats := func(p string, c int) []*onnxpb.TensorProto {
		return []*onnxpb.TensorProto{
			floatInit(p+"s", []int{c}, vals(c, func(i int) float32 { return 0.5 + float32(i%5)/4 })...),
			floatInit(p+"b", []int{c}, vals(c, func(i int) float32 { return float32(i%3) - 1 })...),
			floatInit(p+"m", []int{c}, vals(c, func(i int) float32 { return float32(i%7)/7 - 0.3 })...),
			floatInit(p+"v", []int{c}, vals(c, func(i int) float32 { return 0.25 + float32(i%4) })...),
		}
	}
	w := func(name string, shape ...int) *onnxpb.TensorProto {
		return floatInit(name, shape, vals(shape[0]*shape[1]*shape[2]*shape[3], func(i int) float32 { return float32((i*7)%13)/13 - 0.5 })...)
	}
	for _, batch := range []int{8, 1} {
		g := graphSpec{
			nodes: []*onnxpb.NodeProto{
				nodeOf("Conv", []string{"x", "w1"}, []string{"a"}, intsAttr("pads", 1, 1, 1, 1)),
				nodeOf("BatchNormalization", []string{"a", "1s", "1b", "1m", "1v"}, []string{"an"}),
				nodeOf("Relu", []string{"an"}, []string{"ar"}),
				nodeOf("Conv", []string{"ar", "w2"}, []string{"c"}),
				nodeOf("BatchNormalization", []string{"c", "2s", "2b", "2m", "2v"}, []string{"cn"}),
				nodeOf("Add", []string{"cn", "ar"}, []string{"sum"}),
				nodeOf("Relu", []string{"sum"}, []string{"y1"}),
				nodeOf("Relu", []string{"c"}, []string{"y2"}), // c read twice
				// a max pool on the rows, channels last, and a convolution of its rows
				nodeOf("MaxPool", []string{"ar"}, []string{"mp"}, intsAttr("kernel_shape", 3, 3), intsAttr("strides", 2, 2), intsAttr("pads", 1, 0, 0, 1)),
				nodeOf("Conv", []string{"mp", "w3"}, []string{"y3"}),
			},
			inputs:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, batch, 16, 7, 7)},
			outputs: []*onnxpb.ValueInfoProto{tensorInfo("y1", Float), tensorInfo("y2", Float), tensorInfo("y3", Float)},
			inits:   append(append([]*onnxpb.TensorProto{w("w1", 32, 16, 3, 3), w("w2", 32, 32, 1, 1), w("w3", 16, 32, 1, 1)}, stats("1", 32)...), stats("2", 32)...),
		}
		m := g.parse(t)
		x := floatArray([]int{batch, 16, 7, 7}, func() []float64 {
			v := make([]float64, batch*16*49)
			for i := range v {
				v[i] = float64((i*5)%11)/11 - 0.5
			}
			return v
		}()...)
		outs, err := m.Run(cpu, map[string]Input{"x": {Array: x}}, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sched, err := fuse.Create([]*tensor.Node{outs[0].Node(), outs[1].Node(), outs[2].Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		products := 0
		for _, it := range sched.Items {
			if strings.HasPrefix(it.Kernel.Name, "r_") {
				products++
			}
		}
		if products != 4 {
			t.Errorf("batch %d: %d reduce kernels for 3 convolutions and a pool:\n%s", batch, products, sched.Dump())
		}
		got, err := RealizeOutputs(outs)
		if err != nil {
			t.Fatal(err)
		}
		want := run(t, m, map[string]*Array{"x": x})
		for o := range want {
			if !slices.Equal(got[o].Shape, want[o].Shape) {
				t.Fatalf("batch %d, output %d: shape %v, want %v", batch, o, got[o].Shape, want[o].Shape)
			}
			for i := range want[o].Numel() {
				if d := got[o].Float(i) - want[o].Float(i); math.Abs(d) > 1e-4*(1+math.Abs(want[o].Float(i))) {
					t.Fatalf("batch %d, output %d: element %d is %g, want %g", batch, o, i, got[o].Float(i), want[o].Float(i))
				}
			}
		}
	}
}

// A cast or an integer division folded on the host (its inputs are
// initializers) gives the bytes the device computes for the same node on
// graph inputs: float→int casts truncate and saturate (NaN gives 0),
// x/0 is 0 and MIN/-1 wraps.
func TestHostFoldsAgreeWithDevice(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	floats := []float32{1e10, -1e10, nan, 300.7, -300.7, -1.5, 2.5, inf, -inf, 65535.9, 4e9}
	type tc struct {
		name   string
		node   *onnxpb.NodeProto
		inits  []*onnxpb.TensorProto // the host-folded variant's inputs
		inputs map[string]*Array     // the device variant's inputs, the same values
		infos  []*onnxpb.ValueInfoProto
		out    DataType
	}
	var cases []tc
	fx := floatArray([]int{len(floats)})
	for i, f := range floats {
		fx.SetFloat(i, float64(f))
	}
	for _, to := range []DataType{Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Bool} {
		cases = append(cases, tc{
			name:   "Cast float32 to " + to.Name(),
			node:   nodeOf("Cast", []string{"x"}, []string{"y"}, intAttr("to", int64(to))),
			inits:  []*onnxpb.TensorProto{floatInit("x", []int{len(floats)}, floats...)},
			inputs: map[string]*Array{"x": fx},
			infos:  []*onnxpb.ValueInfoProto{tensorInfo("x", Float, len(floats))},
			out:    to,
		})
	}
	a := []int64{math.MinInt64, 7, -7, 5, math.MaxInt64, math.MinInt64}
	b := []int64{-1, 0, 2, -2, -1, 1}
	cases = append(cases, tc{
		name:   "Div int64",
		node:   nodeOf("Div", []string{"a", "b"}, []string{"y"}),
		inits:  []*onnxpb.TensorProto{int64Init("a", []int{len(a)}, a...), int64Init("b", []int{len(b)}, b...)},
		inputs: map[string]*Array{"a": ArrayOfInts(Int64, []int{len(a)}, a), "b": ArrayOfInts(Int64, []int{len(b)}, b)},
		infos:  []*onnxpb.ValueInfoProto{tensorInfo("a", Int64, len(a)), tensorInfo("b", Int64, len(b))},
		out:    Int64,
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outInfo := []*onnxpb.ValueInfoProto{tensorInfo("y", c.out)}
			outInfo[0].Type.GetTensorType().Shape = nil // any shape
			folded := graphSpec{nodes: []*onnxpb.NodeProto{c.node}, outputs: outInfo, inits: c.inits}.parse(t)
			outs, err := folded.Run(ctx, nil, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if outs[0].Node().Realized() == nil {
				t.Fatalf("the node on initializers did not fold on the host: %v", outs[0].Node())
			}
			host, err := RealizeOutputs(outs)
			if err != nil {
				t.Fatal(err)
			}
			dev := run(t, graphSpec{nodes: []*onnxpb.NodeProto{c.node}, inputs: c.infos, outputs: outInfo}.parse(t), c.inputs)
			if host[0].Type != c.out || dev[0].Type != c.out || !slices.Equal(host[0].Data, dev[0].Data) {
				t.Errorf("host %s %v, device %s %v", host[0].Type, host[0].Ints(), dev[0].Type, dev[0].Ints())
			}
		})
	}
}
