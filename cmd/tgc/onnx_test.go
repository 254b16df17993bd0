package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tgc/pkg/npy"
	"tgc/pkg/onnx"
	"tgc/pkg/onnx/onnxpb"
	"tgc/pkg/safetensors"
)

const testData = "/usr/share/libonnx-testdata/data"

// onnxCase returns a case folder of Debian's libonnx-testdata.
func onnxCase(t *testing.T, group, name string) string {
	t.Helper()
	dir := filepath.Join(testData, group, name)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("libonnx-testdata is not installed: %v", err)
	}
	return dir
}

// addModel writes y = x + 1 for x: float32 (batch, 2) to add.onnx.
func addModel(t *testing.T) string {
	t.Helper()
	info := func(name string) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(onnx.Float)),
			Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
				{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}},
				{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 2}},
			}}}}}}
	}
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(13)}},
		Graph: &onnxpb.GraphProto{
			Node:        []*onnxpb.NodeProto{{OpType: proto.String("Add"), Input: []string{"x", "one"}, Output: []string{"y"}}},
			Input:       []*onnxpb.ValueInfoProto{info("x")},
			Output:      []*onnxpb.ValueInfoProto{info("y")},
			Initializer: []*onnxpb.TensorProto{{Name: proto.String("one"), DataType: proto.Int32(int32(onnx.Float)), Dims: []int64{1}, FloatData: []float32{1}}},
		},
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("add.onnx", b, 0o644); err != nil {
		t.Fatal(err)
	}
	return "add.onnx"
}

func writeNpy(t *testing.T, name string, shape []int, vals ...float64) string {
	t.Helper()
	b, err := npy.Encode(&npy.Array{DType: "float32", Shape: shape, Data: onnx.ArrayOfFloats(onnx.Float, shape, vals).Data})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestRunONNX(t *testing.T) {
	setup(t)
	model := addModel(t)
	x := writeNpy(t, "x.npy", []int{3, 2}, 1, 2, 3, 4, 5, 6)
	for _, args := range [][]string{
		{"--input", "x=" + x},
		{"--input", x, "--dim", "batch=3"},
	} {
		out, errs, st := tgc(t, append([]string{"run", model, "--device", "GO", "--out", "y.npy"}, args...)...)
		if st != 0 {
			t.Fatalf("%v: status %d, stderr:\n%s", args, st, errs)
		}
		if strings.TrimSpace(out) != "y: float32 (3, 2) [2, 3, 4, 5, 6, 7]" {
			t.Errorf("stdout %q", out)
		}
		y, err := npy.ReadFile("y.npy")
		if err != nil || y.DType != "float32" || len(y.Data) != 24 {
			t.Fatalf("y.npy: %v %v", y, err)
		}
	}
	// outputs to safetensors, inputs from safetensors (matched by name)
	xs := onnx.ArrayOfFloats(onnx.Float, []int{1, 2}, []float64{10, 20})
	if err := safetensors.WriteFile("in.safetensors", []safetensors.Tensor{{Name: "x", DType: "F32", Shape: []int{1, 2}, Data: xs.Data}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, errs, st := tgc(t, "run", model, "--device", "GO", "--input", "in.safetensors", "--out", "out.safetensors"); st != 0 {
		t.Fatalf("safetensors: %s", errs)
	}
	ts, _, err := safetensors.ReadFile("out.safetensors")
	if err != nil || len(ts) != 1 || ts[0].Name != "y" || ts[0].DType != "F32" {
		t.Fatalf("out.safetensors: %v %v", ts, err)
	}
	if got := (&onnx.Array{Type: onnx.Float, Shape: ts[0].Shape, Data: ts[0].Data}).Floats(); got[0] != 11 || got[1] != 21 {
		t.Errorf("y = %v", got)
	}
}

func TestRunONNXErrors(t *testing.T) {
	setup(t)
	model := addModel(t)
	x := writeNpy(t, "x.npy", []int{3, 2}, 1, 2, 3, 4, 5, 6)
	bad := writeNpy(t, "bad.npy", []int{3, 3}, make([]float64, 9)...)
	if err := os.WriteFile("junk.onnx", []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args   []string
		status int
		want   []string
	}{
		{[]string{"run", model}, 1, []string{`missing input "x"`, "x: float32 (batch, 2)"}},
		{[]string{"run", model, "--input", "y=" + x}, 1, []string{`no input named "y"`, "x: float32 (batch, 2)"}},
		{[]string{"run", model, "--input", bad}, 1, []string{`input "x" has shape (3, 3), the model declares (batch, 2)`}},
		{[]string{"run", model, "--input", x, "--dim", "batch=4"}, 1, []string{"(batch is 4)"}},
		{[]string{"run", model, "--input", x, "--dim", "batch"}, 2, []string{"expected NAME=SIZE"}},
		{[]string{"run", model, "--input", "x.csv"}, 1, []string{"input files are .npy, .pb"}},
		{[]string{"run", model, "--input", x, "--out", "y.txt"}, 1, []string{".safetensors"}},
		{[]string{"run", "junk.onnx"}, 1, []string{"junk.onnx: not an ONNX model"}},
		{[]string{"run", "nothere.onnx"}, 1, []string{"model nothere.onnx does not exist"}},
		{[]string{"run", "s.tg", "--input", x}, 2, []string{"--input is for ONNX models"}},
		{[]string{"emit", model}, 1, []string{`give its shape with --input-shape x=`}},
	}
	writeScript(t, "s.tg", "print(1)\n")
	for _, c := range cases {
		_, errs, st := tgc(t, append(c.args, "--device", "GO")...)
		if st != c.status {
			t.Errorf("%v: status %d, want %d; stderr:\n%s", c.args, st, c.status, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errs)
			}
		}
	}
}

func TestEmitONNX(t *testing.T) {
	setup(t)
	model := addModel(t)
	_, errs, st := tgc(t, "emit", model, "--input-shape", "x=4,2", "--out", "build/add")
	if st != 0 {
		t.Fatalf("status %d: %s", st, errs)
	}
	if !strings.Contains(errs, "wrote 1 kernel, plan.json and weights.safetensors to build/add") {
		t.Errorf("stderr: %s", errs)
	}
	b, err := os.ReadFile("build/add/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Buffers []struct {
			Role, Name string
			Shape      []int
		}
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, buf := range plan.Buffers {
		roles[buf.Name] = buf.Role
		if buf.Name == "x" && (len(buf.Shape) != 2 || buf.Shape[0] != 4) {
			t.Errorf("x has shape %v", buf.Shape)
		}
	}
	if roles["x"] != "input" || roles["one"] != "weight" || roles[""] != "output" {
		t.Errorf("buffer roles %v", roles)
	}
	// --dim binds the symbolic dimension instead
	if _, errs, st := tgc(t, "emit", model, "--dim", "batch=8", "--out", "build/add8"); st != 0 {
		t.Errorf("--dim: %s", errs)
	}
}

func TestInfoONNX(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		name string
		want []string
	}{
		{"test_loop11", []string{"opsets:    ai.onnx 11", "trip_count: int64 ()", "operators: 1 nodes: Loop 1", "unsupported: none (tgc runs every node)"}},
		{"test_sequence_map_identity_1_sequence", []string{"x: sequence", "operators: 1 nodes: SequenceMap 1",
			"operator SequenceMap (opset 17) is not supported", "[control flow]", `value "x" is a sequence; only tensors are supported [sequence]`}},
	} {
		dir := onnxCase(t, "node", c.name)
		out, errs, st := tgc(t, "info", filepath.Join(dir, "model.onnx"))
		if st != 0 {
			t.Fatalf("%s: status %d: %s", c.name, st, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: info lacks %q:\n%s", c.name, w, out)
			}
		}
	}
}

// The ONNX test data's own files: .pb inputs by position, DEBUG=2 lines.
func TestRunONNXTestData(t *testing.T) {
	setup(t)
	dir := onnxCase(t, "pytorch-converted", "test_Conv2d")
	t.Setenv("DEBUG", "2")
	out, errs, st := tgc(t, "run", filepath.Join(dir, "model.onnx"), "--input", filepath.Join(dir, "test_data_set_0", "input_0.pb"), "--device", "GO", "--out", "out.npy")
	if st != 0 {
		t.Fatalf("status %d: %s", st, errs)
	}
	if !strings.HasPrefix(out, "3: float32 (2, 4, 5, 4) [") || !strings.Contains(errs, "r_2_4_5_4_3_3_2") {
		t.Errorf("stdout %q\nstderr %q", out, errs)
	}
	got, err := onnx.ReadArrayFile("out.npy")
	if err != nil {
		t.Fatal(err)
	}
	want, err := onnx.ReadArrayFile(filepath.Join(dir, "test_data_set_0", "output_0.pb"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Numel() {
		if d := got.Float(i) - want.Float(i); d > 1e-4 || d < -1e-4 {
			t.Fatalf("element %d: %g, want %g", i, got.Float(i), want.Float(i))
		}
	}
}
