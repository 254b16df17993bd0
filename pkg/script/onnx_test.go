package script

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"tgc/pkg/onnx"
	"tgc/pkg/onnx/onnxpb"
)

// gemmModel writes y = x·Wᵀ + b (Gemm, transB) with W (2, 3) and b (2,)
// as initializers.
func gemmModel(t *testing.T) string {
	t.Helper()
	info := func(name string, dims ...int64) *onnxpb.ValueInfoProto {
		sh := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			sh.Dim = append(sh.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(onnx.Float)), Shape: sh}}}}
	}
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: proto.Int64(13)}},
		Graph: &onnxpb.GraphProto{
			Node: []*onnxpb.NodeProto{{OpType: proto.String("Gemm"), Input: []string{"x", "W", "b"}, Output: []string{"y"},
				Attribute: []*onnxpb.AttributeProto{{Name: proto.String("transB"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(1)}}}},
			Input:  []*onnxpb.ValueInfoProto{info("x", 4, 3)},
			Output: []*onnxpb.ValueInfoProto{info("y", 4, 2)},
			Initializer: []*onnxpb.TensorProto{
				{Name: proto.String("W"), DataType: proto.Int32(int32(onnx.Float)), Dims: []int64{2, 3}, FloatData: []float32{1, 2, 3, -1, 0, 1}},
				{Name: proto.String("b"), DataType: proto.Int32(int32(onnx.Float)), Dims: []int64{2}, FloatData: []float32{0.5, -0.5}},
			},
		},
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "gemm.onnx")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// nn.onnx.load: the model's outputs are lazy tensors that compose with the
// script, its weights are parameters a script can train.
func TestONNXInScripts(t *testing.T) {
	ctx := useGO(t)
	src := `m = nn.onnx.load(PATH)
print(m.inputs, m.outputs, sorted(m.weights.keys()))
x = Tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [2.0, 0.0, -1.0]])
y = m({"x": x})["y"]
ref = x.dot(m.weights["W"].T) + m.weights["b"]
print(y.shape, (y - ref).abs().max().item(), (m(x)["y"] == m(x=x)["y"]).all().item())
Tensor.training = True
opt = nn.optim.SGD(nn.state.get_parameters(m), lr=0.05)
losses = []
for i in range(5):
    loss = (m(x)["y"] - 1.0).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(losses[-1] < losses[0] / 2, sorted(nn.state.get_state_dict(m).keys()))
`
	out, _, err := run(t, ctx, strings.ReplaceAll(src, "PATH", strconv.Quote(gemmModel(t))), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `["x"] ["y"] ["W", "b"]
(4, 2) 0.0 True
True ["W", "b"]
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	for src, msg := range map[string]string{
		`nn.onnx.load("nothere.onnx")`:                         "nothere.onnx",
		`nn.onnx.load("/etc/adduser.conf")`:                    "allow",
		`m = nn.onnx.load(PATH)` + "\nm(Tensor.rand(4, 4))":    `input "x" has shape (4, 4), the model declares (4, 3)`,
		`m = nn.onnx.load(PATH)` + "\nm(1)":                    `input "x" must be a Tensor`,
		`m = nn.onnx.load(PATH)` + "\nm({\"z\": Tensor([1])})": `no graph input named "z"`,
	} {
		_, _, err := run(t, useGO(t), strings.ReplaceAll(src, "PATH", strconv.Quote(gemmModel(t))), 0)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want %q", src, err, msg)
		}
	}
}
