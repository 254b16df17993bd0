package onnx

import (
	"encoding/binary"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"tgc/pkg/onnx/onnxpb"
)

// Small ONNX models built in Go for the tests.

type graphSpec struct {
	opset   int64
	nodes   []*onnxpb.NodeProto
	inputs  []*onnxpb.ValueInfoProto
	outputs []*onnxpb.ValueInfoProto
	inits   []*onnxpb.TensorProto
}

func (g graphSpec) model() *onnxpb.ModelProto {
	opset := g.opset
	if opset == 0 {
		opset = 13
	}
	return &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}},
		Graph: &onnxpb.GraphProto{
			Name:        proto.String("test"),
			Node:        g.nodes,
			Input:       g.inputs,
			Output:      g.outputs,
			Initializer: g.inits,
		},
	}
}

func (g graphSpec) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := proto.Marshal(g.model())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (g graphSpec) parse(t testing.TB) *Model {
	t.Helper()
	m, err := Parse(g.bytes(t), "test.onnx", "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func nodeOf(op string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Input: ins, Output: outs, Attribute: attrs}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func intsAttr(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func floatAttr(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

// dim is an int (a size) or a string (a symbolic name).
func tensorInfo(name string, typ DataType, dims ...any) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		switch d := d.(type) {
		case int:
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
		case string:
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}})
		}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(typ)), Shape: shape}}}}
}

func dims64(shape []int) []int64 {
	d := make([]int64, len(shape))
	for i, s := range shape {
		d[i] = int64(s)
	}
	return d
}

// floatInit is a float32 initializer in raw_data.
func floatInit(name string, shape []int, v ...float32) *onnxpb.TensorProto {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(Float)), Dims: dims64(shape), RawData: raw}
}

// int64Init is an int64 initializer in int64_data.
func int64Init(name string, shape []int, v ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(Int64)), Dims: dims64(shape), Int64Data: v}
}

func floatArray(shape []int, v ...float64) *Array { return ArrayOfFloats(Float, shape, v) }
