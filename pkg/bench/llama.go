package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tgc/models"
	"tgc/pkg/backend"
	"tgc/pkg/fileaccess"
	"tgc/pkg/generate"
	"tgc/pkg/llama"
	"tgc/pkg/llamatest"
	"tgc/pkg/quant"
	"tgc/pkg/tensor"
)

// The LLaMA workloads run models/llama.tg on a random model of the 110M
// shape (llama2.c's stories110M: tied classifier), stored in a tensor type.
// Decode reads every weight once per token, so its limit is the memory
// bus: the result's GB/s counts the weight bytes of one token.

// Llama110M is the benchmark model's shape.
var Llama110M = llama.Config{Dim: 768, HiddenDim: 2048, Layers: 12, Heads: 12, KVHeads: 12, VocabSize: 32000,
	ContextLength: 1024, RopeDim: 64, RopeTheta: 10000, NormEps: llama.Llama2cNormEps, Tied: true}

// llamaPosition is where the decode workloads decode (~128, after a
// prompt of that many tokens).
const llamaPosition = 128

// llamaFormat is how the benchmark model stores its weights: a name (in
// the workload's and the file's) and each tensor's type.
type llamaFormat struct {
	name   string
	typeOf llamatest.TypeFunc
}

// allAs is the format with every matrix in type t (norms in F32).
func allAs(t quant.Type) llamaFormat {
	return llamaFormat{strings.ToLower(t.String()), llamatest.AllAs(t)}
}

// q4KM is llama.cpp's Q4_K_M mix as most small models are shared: Q6_K
// for attn_v and ffn_down, Q4_K for the other matrices.
var q4KM = llamaFormat{"q4_k_m", llamatest.MixQ4KM}

// q5KM is llama.cpp's Q5_K_M mix: Q5_K where Q4_K_M has Q4_K.
var q5KM = llamaFormat{"q5_k_m", llamatest.MixQ5KM}

// q3KM is llama.cpp's Q3_K_M mix: Q4_K for attn_v, attn_output and
// ffn_down, Q3_K for the other matrices.
var q3KM = llamaFormat{"q3_k_m", llamatest.MixQ3KM}

// llamaModel returns the path of the benchmark model in format f under
// dir/bench (dir "": the kernel cache's), writing it on first use (a
// random model; the same seed every time).
func llamaModel(dir string, f llamaFormat) (string, error) {
	if dir == "" {
		dir = backend.CacheDir()
	}
	dir = filepath.Join(dir, "bench")
	path := filepath.Join(dir, "llama110M-"+f.name+".gguf")
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".llama-*.gguf")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := llamatest.WriteGGUF(tmp, Llama110M, llamatest.RandomWeights(Llama110M, 110), f.typeOf); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing the %s benchmark model: %w", f.name, err)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// llamaWeightBytes is the size of the model's weights stored in format f.
func llamaWeightBytes(f llamaFormat) float64 {
	var n float64
	for _, w := range Llama110M.Weights() {
		elems := 1
		for _, d := range w.Shape {
			elems *= d
		}
		typ := f.typeOf(w.Name)
		n += float64(elems / typ.BlockSize() * typ.BlockBytes())
	}
	return n
}

// llamaParams counts the multiply-adds of one token through the matrices
// (the classifier included, the embedding lookup not).
func llamaParams() float64 {
	return llamaLayerParams() + llamaClassifierParams()
}

// llamaLayerParams counts the multiply-adds of one token through the
// layers' matrices.
func llamaLayerParams() float64 {
	return float64(Llama110M.Layers) * (llamaKVParams() + llamaQueryParams())
}

// llamaKVParams counts one layer's multiply-adds for a token's key and
// value; llamaQueryParams the rest of the layer (query, output, FFN).
func llamaKVParams() float64 {
	c := Llama110M
	return float64(2 * c.Dim * c.KVHeads * (c.Dim / c.Heads))
}

func llamaQueryParams() float64 {
	c := Llama110M
	return float64(2*c.Dim*c.Dim + 3*c.Dim*c.HiddenDim)
}

func llamaClassifierParams() float64 { return float64(Llama110M.VocabSize * Llama110M.Dim) }

// openLlama loads the benchmark model through models/llama.tg.
func openLlama(ctx *tensor.Context, f llamaFormat) (*generate.Session, error) {
	path, err := llamaModel("", f)
	if err != nil {
		return nil, err
	}
	src, err := models.Script("llama.tg")
	if err != nil {
		return nil, err
	}
	files := fileaccess.ForScript("")
	if err := files.Allow(path, "the benchmark model"); err != nil {
		return nil, err
	}
	return generate.Open(generate.Options{Model: path, Script: src, ScriptName: "llama.tg", Context: ctx, Files: files})
}

func promptIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 1 + (i*7919)%31999
	}
	return ids
}

// llamaDecode is one decode step at position ~128 (TinyJit replays).
func llamaDecode(f llamaFormat) Workload {
	return Workload{Name: "llama_decode_" + f.name, FLOPs: 2 * llamaParams(), Bytes: llamaWeightBytes(f),
		Setup: func(ctx *tensor.Context) (func() error, error) {
			s, err := openLlama(ctx, f)
			if err != nil {
				return nil, err
			}
			logits, err := s.Prefill(promptIDs(llamaPosition))
			if err != nil {
				return nil, err
			}
			tok, pos := generate.Argmax(logits), llamaPosition
			step := func() error {
				if pos >= s.Context-1 {
					pos = llamaPosition // decode over the same positions again
				}
				logits, err := s.Decode(tok, pos)
				if err != nil {
					return err
				}
				tok, pos = generate.Argmax(logits), pos+1
				return nil
			}
			for range 2 { // compile, then capture
				if err := step(); err != nil {
					return nil, err
				}
			}
			return step, nil
		}}
}

// llamaPrefill runs a prompt of n tokens as one batch (F32 weights). The
// FLOPs are the work a prefill needs, what models/llama.tg computes (and
// llama.cpp): every layer but the last for every token; in the last, the
// keys and values of every token and the rest for the last one; the
// classifier for the last one (the logits generation samples from).
func llamaPrefill(n int) Workload {
	c := Llama110M
	tokens, layers := float64(n), float64(c.Layers)
	attn := (layers-1)*2*2*float64(c.Dim)*tokens*tokens/2 + 2*2*float64(c.Dim)*tokens // scores and values: causal half, then one query
	flops := 2*((layers-1)*(llamaKVParams()+llamaQueryParams())*tokens+llamaKVParams()*tokens+llamaQueryParams()+llamaClassifierParams()) + attn
	return Workload{Name: fmt.Sprintf("llama_prefill_%d", n), FLOPs: flops, Bytes: llamaWeightBytes(allAs(quant.F32)),
		Setup: func(ctx *tensor.Context) (func() error, error) {
			s, err := openLlama(ctx, allAs(quant.F32))
			if err != nil {
				return nil, err
			}
			ids := promptIDs(n)
			return func() error { _, err := s.Prefill(ids); return err }, nil
		}}
}

// LlamaWorkloads are the LLaMA benchmarks (run by name: they need a few
// hundred MB of model files, written once under the cache). Q4_K_M is the
// mix most small GGUF models come in: its Q6_K matrices run kernels of
// their own. A prompt of
// 900 runs in chunks (models/llama.tg's prefill_chunk): its attention
// over the positions so far is most of what the 128-token one lacks.
func LlamaWorkloads() []Workload {
	return []Workload{llamaDecode(allAs(quant.F32)), llamaDecode(allAs(quant.F16)), llamaDecode(allAs(quant.Q8_0)), llamaDecode(allAs(quant.Q4_K)), llamaDecode(q4KM), llamaDecode(q5KM), llamaDecode(q3KM), llamaDecode(allAs(quant.Q2_K)), llamaDecode(allAs(quant.IQ4_XS)), llamaPrefill(128), llamaPrefill(900)}
}
