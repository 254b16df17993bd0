package bench

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"tgc/pkg/backend"
	"tgc/pkg/onnx"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// ONNX workloads: whole inferences of the models bench/onnx/gen.py writes
// (random weights), timed by the wall clock like the training steps (the
// graph is rebuilt from the model each time and found in the schedule
// cache; every kernel runs). tgc bench --ort compares them with
// onnxruntime's CPU provider (bench/onnx/ort.js) in the same run.

// ModelDir is where the ONNX models are: $TGC_ONNX_MODELS or
// bench/onnx/models.
func ModelDir() string {
	if d := os.Getenv("TGC_ONNX_MODELS"); d != "" {
		return d
	}
	return filepath.Join("bench", "onnx", "models")
}

// ONNXWorkload describes an ONNX benchmark: the model file and the shapes
// of its inputs.
type ONNXWorkload struct {
	Name, Model string
	Inputs      map[string][]int
	FLOPs       float64
}

// ONNXWorkloads are ResNet-50 at batch 1 and 8 (224×224) and a BERT-base
// encoder stack (12 layers, seq 128).
func ONNXWorkloads() []ONNXWorkload {
	// ResNet-50: 4.09 G multiply-adds per image; BERT-base: per layer
	// 128×(4×768² + 2×768×3072) + 2×128²×768 multiply-adds.
	const resnetMACs = 4.089e9
	bertMACs := 12 * (128*(4*768*768+2*768*3072) + 2*128*128*768.0)
	return []ONNXWorkload{
		{Name: "resnet50_b1", Model: "resnet50.onnx", Inputs: map[string][]int{"data": {1, 3, 224, 224}}, FLOPs: 2 * resnetMACs},
		{Name: "resnet50_b8", Model: "resnet50.onnx", Inputs: map[string][]int{"data": {8, 3, 224, 224}}, FLOPs: 16 * resnetMACs},
		{Name: "bert_base", Model: "bert_base.onnx", Inputs: map[string][]int{"hidden": {1, 128, 768}, "mask": {1, 1, 1, 128}}, FLOPs: 2 * bertMACs},
	}
}

// Path is the workload's model file.
func (o ONNXWorkload) Path() string { return filepath.Join(ModelDir(), o.Model) }

// pattern fills an input the way bench/onnx/ort.js does: sin(0.37 i), or
// zeros for an attention mask.
func pattern(name string, shape []int) *onnx.Array {
	a := onnx.NewArray(onnx.Float, shape)
	if name != "mask" {
		for i := range a.Numel() {
			a.SetFloat(i, math.Sin(float64(i)*0.37))
		}
	}
	return a
}

func (o ONNXWorkload) workload() Workload {
	return Workload{Name: o.Name, FLOPs: o.FLOPs, Setup: func(ctx *tensor.Context) (func() error, error) {
		m, err := onnx.Load(o.Path())
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s is missing: write the benchmark models with /usr/bin/python3 bench/onnx/gen.py (Debian's python3-onnx), or set TGC_ONNX_MODELS", o.Path())
		}
		if err != nil {
			return nil, err
		}
		arrays := map[string]*onnx.Array{}
		for name, shape := range o.Inputs {
			arrays[name] = pattern(name, shape)
		}
		run := jitRunner(ctx, o.Name, m)
		return func() error {
			outs, err := run(arrays)
			if err != nil {
				return err
			}
			return tensor.RealizeAll(outs...)
		}, nil
	}}
}

// jitRunner runs the model under TinyJit, as a served model is run: the
// first calls build the graph and capture its launches, the rest replay
// them (onnxruntime's figure is a prepared session's run). Each call
// uploads its inputs into buffers of their own, as a server's requests,
// and frees them when it returns.
func jitRunner(ctx *tensor.Context, name string, m *onnx.Model) func(map[string]*onnx.Array) ([]*tensor.Tensor, error) {
	var names []string
	jit := realize.NewJit(ctx, name, func(in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		inputs := map[string]onnx.Input{}
		for i, n := range names {
			inputs[n] = onnx.Input{Tensor: in[i]}
		}
		return m.Run(ctx, inputs, onnx.RunOptions{})
	})
	return func(arrays map[string]*onnx.Array) ([]*tensor.Tensor, error) {
		names = slices.Sorted(maps.Keys(arrays))
		in := make([]*tensor.Tensor, len(names))
		for i, n := range names {
			t, err := arrays[n].Tensor(ctx, n, false)
			if err != nil {
				return nil, err
			}
			in[i] = t
		}
		outs, err := jit.Call(in...)
		// The request's input buffers go back to the device's pool, as a
		// server frees a request's memory: left to the garbage collector
		// (which the device's memory, outside the Go heap, does not
		// prompt), every call's upload would fault in fresh pages (~10 ms
		// of a b8 inference on this host's VM) and the process would grow
		// by the inputs' size per call.
		// An output that is an input's buffer (an Identity model, a
		// reshape of an input) stays with the caller.
		if e, ok := ctx.Engine().(*realize.Engine); ok {
			kept := map[backend.Buffer]bool{}
			for _, o := range outs {
				if b, berr := e.DeviceBuffer(o.Node()); berr == nil {
					kept[b] = true
				}
			}
			for _, t := range in {
				if b, berr := e.DeviceBuffer(t.Node()); berr == nil && !kept[b] {
					b.Free()
				}
			}
		}
		return outs, err
	}
}
