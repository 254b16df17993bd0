package onnx

import (
	"errors"
	"testing"

	"tgc/pkg/tensor"
)

// noEngine refuses to compute: a fuzzed model is built, never run (its
// shapes could ask for any amount of work), and values it would read are
// refused the way tgc emit refuses them.
type noEngine struct{}

func (noEngine) Realize(...*tensor.Node) error     { return errors.New("fuzz: nothing is computed") }
func (noEngine) Read(*tensor.Node) ([]byte, error) { return nil, errors.New("fuzz: nothing is read") }
func (noEngine) Tracing() bool                     { return true }

// FuzzParse: Parse and DecodeTensor never panic on any bytes.
func FuzzParse(f *testing.F) {
	f.Add(reluModel().bytes(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Parse(b, "fuzz.onnx", "")
		_, _, _ = DecodeTensor(b, "")
	})
}

// FuzzRun: a model that parses builds its graph on zero inputs (of the
// declared shapes, symbolic dimensions 1) without a panic. Seeds in
// testdata/fuzz/FuzzRun include models of ONNX's test data.
func FuzzRun(f *testing.F) {
	f.Add(reluModel().bytes(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b, "fuzz.onnx", "")
		if err != nil {
			return
		}
		inputs := map[string]Input{}
		for _, vi := range m.Inputs {
			shape := []int{}
			for _, d := range vi.Dims {
				shape = append(shape, max(d.Value, 1))
			}
			if n, err := numel(shape); err != nil || n > 1<<16 {
				return
			}
			typ := vi.Type
			if typ == Undefined {
				typ = Float
			}
			inputs[vi.Name] = Input{Array: NewArray(typ, shape)}
		}
		if _, err := m.Run(tensor.NewContext(noEngine{}), inputs, RunOptions{}); errors.Is(err, errInternal) {
			t.Fatal(err)
		}
	})
}
