package llamatest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"tgc/pkg/gguf"
	"tgc/pkg/llama"
	"tgc/pkg/llama2c"
	"tgc/pkg/quant"
)

// QKScale is the standard deviation of the query and key activations of a
// random model. With std-0.02 matrices attention is nearly uniform and a
// wrong RoPE or head mapping still passes; at 1.7 the scaled scores have a
// standard deviation near 3, so each query attends to few positions.
const QKScale = 1.7

// RandomWeights returns weights for cfg, by GGUF name, drawn from seed: a
// unit-variance embedding, norm weights near 1, and matrices scaled by
// their fan-in so activations stay near unit size, except the query and key
// projections (see QKScale) and the untied classifier (logits of std 3).
func RandomWeights(cfg llama.Config, seed uint64) map[string][]float32 {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := map[string][]float32{}
	for _, spec := range cfg.Weights() {
		n := 1
		for _, d := range spec.Shape {
			n *= d
		}
		fanIn := float64(spec.Shape[len(spec.Shape)-1])
		std, mean := 1/math.Sqrt(fanIn), 0.0
		switch name := spec.Name; {
		case name == "token_embd.weight":
			std = 1
		case strings.HasSuffix(name, "norm.weight"):
			std, mean = 0.1, 1
		case strings.HasSuffix(name, "attn_q.weight"), strings.HasSuffix(name, "attn_k.weight"):
			std = QKScale / math.Sqrt(fanIn)
		case name == "output.weight":
			std = 3 / math.Sqrt(fanIn)
		}
		if spec.Name == "rope_freqs.weight" {
			w[spec.Name] = Llama3RopeFactors(cfg.RopeDim, cfg.RopeTheta, 8, 1, 4, cfg.ContextLength)
			continue
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(mean + std*rng.NormFloat64())
		}
		w[spec.Name] = x
	}
	return w
}

// Llama3RopeFactors are rope_freqs.weight as llama.cpp's converter
// computes it from a Llama 3.1 config (rope_type "llama3"): pairs whose
// wavelength 2π/freq is shorter than origContext/highFreqFactor keep
// their frequency (divisor 1), those longer than origContext/lowFreqFactor
// are slowed by factor, and those between blend the two smoothly.
func Llama3RopeFactors(ropeDim int, theta, factor, lowFreqFactor, highFreqFactor float64, origContext int) []float32 {
	lowWavelen := float64(origContext) / lowFreqFactor
	highWavelen := float64(origContext) / highFreqFactor
	out := make([]float32, ropeDim/2)
	for i := range out {
		freq := math.Pow(theta, -float64(2*i)/float64(ropeDim))
		switch wavelen := 2 * math.Pi / freq; {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = float32(factor)
		default:
			smooth := (float64(origContext)/wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return out
}

// vector reports whether a weight is one of the model's vectors (the norms,
// the RoPE divisors), which llama.cpp's quantizer leaves in F32.
func vector(name string) bool {
	return strings.HasSuffix(name, "norm.weight") || name == "rope_freqs.weight"
}

// Weights returns a model's weights dequantized to float32, by name.
func Weights(m *llama.Model) (map[string][]float32, error) {
	w := map[string][]float32{}
	for _, spec := range m.Weights() {
		x, err := m.Tensors[spec.Name].Floats()
		if err != nil {
			return nil, err
		}
		w[spec.Name] = x
	}
	return w, nil
}

// ModelOf returns an in-memory F32 model of the weights (no file behind it).
func ModelOf(cfg llama.Config, weights map[string][]float32) (*llama.Model, error) {
	m := &llama.Model{Format: "memory", Config: cfg, Tensors: map[string]*llama.Tensor{}}
	for _, spec := range cfg.Weights() {
		x, ok := weights[spec.Name]
		if !ok {
			return nil, fmt.Errorf("tensor %q is missing", spec.Name)
		}
		data := make([]byte, 4*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		m.Tensors[spec.Name] = &llama.Tensor{Name: spec.Name, Type: quant.F32, Shape: spec.Shape, Data: data}
	}
	return m, nil
}

// TypeFunc picks the tensor type a weight is stored in.
type TypeFunc func(name string) quant.Type

// AllAs stores the matrices as t and the norm vectors as F32, as llama.cpp's
// quantizer does.
func AllAs(t quant.Type) TypeFunc {
	return func(name string) quant.Type {
		if vector(name) {
			return quant.F32
		}
		return t
	}
}

// MixQ4KM approximates llama.cpp's Q4_K_M: Q6_K for the value and FFN-down
// projections, Q4_K for the other matrices, F32 norms.
func MixQ4KM(name string) quant.Type { return kMix(name, quant.Q4_K) }

// MixQ5KM approximates llama.cpp's Q5_K_M: Q5_K where Q4_K_M has Q4_K.
func MixQ5KM(name string) quant.Type { return kMix(name, quant.Q5_K) }

// MixQ3KM approximates llama.cpp's Q3_K_M: Q4_K for the value, output
// and FFN-down projections, Q3_K for the other matrices, F32 norms.
func MixQ3KM(name string) quant.Type {
	switch {
	case vector(name):
		return quant.F32
	case strings.HasSuffix(name, "attn_v.weight"), strings.HasSuffix(name, "attn_output.weight"), strings.HasSuffix(name, "ffn_down.weight"):
		return quant.Q4_K
	}
	return quant.Q3_K
}

func kMix(name string, base quant.Type) quant.Type {
	switch {
	case vector(name):
		return quant.F32
	case strings.HasSuffix(name, "attn_v.weight"), strings.HasSuffix(name, "ffn_down.weight"):
		return quant.Q6_K
	}
	return base
}

// GGUFMetadata returns the llama.* metadata of cfg, as llama.cpp's
// converter writes it.
func GGUFMetadata(cfg llama.Config) []gguf.KV {
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.String("llama")},
		{Key: "general.name", Value: gguf.String("tgc random llama")},
		{Key: "llama.context_length", Value: gguf.Uint32(uint32(cfg.ContextLength))},
		{Key: "llama.embedding_length", Value: gguf.Uint32(uint32(cfg.Dim))},
		{Key: "llama.block_count", Value: gguf.Uint32(uint32(cfg.Layers))},
		{Key: "llama.feed_forward_length", Value: gguf.Uint32(uint32(cfg.HiddenDim))},
		{Key: "llama.attention.head_count", Value: gguf.Uint32(uint32(cfg.Heads))},
		{Key: "llama.attention.head_count_kv", Value: gguf.Uint32(uint32(cfg.KVHeads))},
		{Key: "llama.rope.dimension_count", Value: gguf.Uint32(uint32(cfg.RopeDim))},
		{Key: "llama.rope.freq_base", Value: gguf.Float32(float32(cfg.RopeTheta))},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.Float32(float32(cfg.NormEps))},
	}
	if cfg.RopeLinear > 0 {
		kv = append(kv, gguf.KV{Key: "llama.rope.scaling.type", Value: gguf.String("linear")},
			gguf.KV{Key: "llama.rope.scaling.factor", Value: gguf.Float32(float32(cfg.RopeLinear))})
	}
	return kv
}

// WriteGGUF writes the weights as a version 3 GGUF llama model, each weight
// quantized to typeOf(name) (nil: all F32), followed by the extra metadata
// (a tokenizer, say). cfg.Tied decides whether output.weight is written.
func WriteGGUF(w io.Writer, cfg llama.Config, weights map[string][]float32, typeOf TypeFunc, extra ...gguf.KV) error {
	if typeOf == nil {
		typeOf = AllAs(quant.F32)
	}
	var tensors []gguf.Tensor
	for _, spec := range cfg.Weights() {
		x, ok := weights[spec.Name]
		if !ok {
			return fmt.Errorf("tensor %q is missing", spec.Name)
		}
		typ := typeOf(spec.Name)
		data, err := quant.Quantize(typ, x)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", spec.Name, err)
		}
		dims := make([]int64, len(spec.Shape))
		for i, d := range spec.Shape {
			dims[len(dims)-1-i] = int64(d)
		}
		tensors = append(tensors, gguf.Tensor{Name: spec.Name, Dims: dims, Type: typ, Data: data})
	}
	return gguf.Write(w, 3, append(GGUFMetadata(cfg), extra...), tensors)
}

// WriteLlama2c writes the weights as a llama2.c checkpoint of the given
// version (0 or 1). cfg must have llama2.c's fixed constants: RoPE theta
// 10000 over the whole head, RMSNorm epsilon llama.Llama2cNormEps.
func WriteLlama2c(w io.Writer, version int, cfg llama.Config, weights map[string][]float32) error {
	if cfg.RopeTheta != 10000 || cfg.RopeDim != cfg.HeadDim() || cfg.NormEps != llama.Llama2cNormEps {
		return fmt.Errorf("llama2.c files cannot hold RoPE theta %v over %d of %d dimensions or RMSNorm epsilon %v",
			cfg.RopeTheta, cfg.RopeDim, cfg.HeadDim(), cfg.NormEps)
	}
	c := llama2c.Config{Dim: cfg.Dim, HiddenDim: cfg.HiddenDim, Layers: cfg.Layers, Heads: cfg.Heads,
		KVHeads: cfg.KVHeads, VocabSize: cfg.VocabSize, SeqLen: cfg.ContextLength, SharedClassifier: cfg.Tied}
	names := map[string][]float32{}
	for _, spec := range cfg.Weights() {
		names[spec.Name] = weights[spec.Name]
	}
	return llama2c.Write(w, version, c, names)
}

// OpenBytes parses a GGUF or llama2.c file held in memory.
func OpenBytes(name string, b []byte) (*llama.Model, error) {
	if bytes.HasPrefix(b, []byte(gguf.Magic)) {
		f, err := gguf.Parse(name, b)
		if err != nil {
			return nil, err
		}
		return llama.FromGGUF(f)
	}
	c, err := llama2c.Parse(name, b)
	if err != nil {
		return nil, err
	}
	return llama.FromLlama2c(c)
}
