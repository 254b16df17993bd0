package llama_test

import (
	"bytes"
	"testing"

	"tgc/pkg/gguf"
	"tgc/pkg/llama"
	"tgc/pkg/llamatest"
	"tgc/pkg/quant"
)

// FuzzFromGGUF checks that reading a LLaMA model from any GGUF file that
// parses never panics, and that a model it accepts is whole: every weight
// of its config present with its shape and the bytes its type needs, and
// the RoPE settings in range. Seeds: small models with each RoPE form.
func FuzzFromGGUF(f *testing.F) {
	scaled := cfg
	scaled.RopeFactors = true
	linear := cfg
	linear.RopeLinear = 4
	for _, c := range []llama.Config{cfg, scaled, linear} {
		var buf bytes.Buffer
		if err := llamatest.WriteGGUF(&buf, c, llamatest.RandomWeights(c, 3), llamatest.AllAs(quant.Q8_0)); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := gguf.Parse("fuzz.gguf", b)
		if err != nil {
			return
		}
		m, err := llama.FromGGUF(file)
		if err != nil {
			return
		}
		if m.RopeLinear < 0 || m.RopeDim <= 0 || m.RopeDim%2 != 0 || m.RopeDim > m.HeadDim() {
			t.Fatalf("accepted RoPE settings: %+v", m.Config)
		}
		for _, w := range m.Weights() {
			tn, ok := m.Tensors[w.Name]
			if !ok {
				t.Fatalf("accepted without %q", w.Name)
			}
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			if want, err := tn.Type.RowBytes(int64(n)); err != nil || int64(len(tn.Data)) != want {
				t.Fatalf("%q holds %d bytes, its %d %s elements need %d", w.Name, len(tn.Data), n, tn.Type, want)
			}
		}
	})
}
