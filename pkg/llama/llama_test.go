package llama_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tgc/pkg/gguf"
	"tgc/pkg/llama"
	"tgc/pkg/llamatest"
	"tgc/pkg/quant"
	"tgc/pkg/testmodels"
)

var cfg = llama.Config{Dim: 32, HiddenDim: 64, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 10,
	ContextLength: 16, RopeDim: 8, RopeTheta: 10000, NormEps: llama.Llama2cNormEps}

func TestOpenBothFormats(t *testing.T) {
	w := llamatest.RandomWeights(cfg, 1)
	dir := t.TempDir()
	var g, c bytes.Buffer
	if err := llamatest.WriteGGUF(&g, cfg, w, llamatest.AllAs(quant.Q8_0)); err != nil {
		t.Fatal(err)
	}
	if err := llamatest.WriteLlama2c(&c, 0, cfg, w); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"m.gguf": g.Bytes(), "m.bin": c.Bytes()} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, b, 0o644)
		m, err := llama.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if m.Config != cfg {
			t.Errorf("%s: config %+v, want %+v", name, m.Config, cfg)
		}
		q := m.Tensors["blk.1.attn_k.weight"]
		if !reflect.DeepEqual(q.Shape, []int{16, 32}) {
			t.Errorf("%s: attn_k shape %v", name, q.Shape)
		}
		if want := map[string]quant.Type{"m.gguf": quant.Q8_0, "m.bin": quant.F32}[name]; q.Type != want {
			t.Errorf("%s: attn_k is %v, want %v (stored type kept)", name, q.Type, want)
		}
		if (m.GGUF != nil) != (name == "m.gguf") {
			t.Errorf("%s: GGUF file %v", name, m.GGUF)
		}
		m.Close()
	}
}

func TestStories260K(t *testing.T) {
	m, err := llama.Open(testmodels.Path(t, "stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Format != "llama2c" || m.HeadDim() != 8 || m.RopeDim != 8 || !m.Tied || m.KVHeads != 4 {
		t.Errorf("config %+v", m.Config)
	}
}

// edit writes cfg's model as GGUF with metadata and tensors changed.
func edit(t *testing.T, md func([]gguf.KV) []gguf.KV, tensors func([]gguf.Tensor) []gguf.Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := llamatest.WriteGGUF(&buf, cfg, llamatest.RandomWeights(cfg, 1), nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse("x", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	kv, ts := f.Metadata, f.Tensors
	if md != nil {
		kv = md(kv)
	}
	if tensors != nil {
		ts = tensors(ts)
	}
	var out bytes.Buffer
	if err := gguf.Write(&out, 3, kv, ts); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func setKV(key string, v *gguf.Value) func([]gguf.KV) []gguf.KV {
	return func(md []gguf.KV) []gguf.KV {
		var out []gguf.KV
		found := false
		for _, kv := range md {
			if kv.Key == key {
				found = true
				if v == nil {
					continue
				}
				kv.Value = *v
			}
			out = append(out, kv)
		}
		if !found && v != nil {
			out = append(out, gguf.KV{Key: key, Value: *v})
		}
		return out
	}
}

func ptr(v gguf.Value) *gguf.Value { return &v }

func chain(fs ...func([]gguf.KV) []gguf.KV) func([]gguf.KV) []gguf.KV {
	return func(md []gguf.KV) []gguf.KV {
		for _, f := range fs {
			md = f(md)
		}
		return md
	}
}

// addRopeFreqs adds a rope_freqs.weight tensor (Llama 3.1's divisors).
func addRopeFreqs(r gguf.Tensor) func([]gguf.Tensor) []gguf.Tensor {
	r.Name = "rope_freqs.weight"
	return func(ts []gguf.Tensor) []gguf.Tensor { return append(ts, r) }
}

func f32Bytes(xs ...float32) []byte {
	b := make([]byte, 0, 4*len(xs))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// TestRopeScalingGGUF: Llama 3.1's rope_freqs.weight and linear scaling
// (either key) are read into the config; a factor of 1 is no scaling.
func TestRopeScalingGGUF(t *testing.T) {
	freqs := addRopeFreqs(gguf.Tensor{Dims: []int64{4}, Type: quant.F32, Data: f32Bytes(1, 1.5, 3.25, 8)})
	for _, tc := range []struct {
		name    string
		b       []byte
		factors bool
		linear  float64
	}{
		{"plain", edit(t, nil, nil), false, 0},
		{"rope_freqs", edit(t, nil, freqs), true, 0},
		{"linear", edit(t, chain(setKV("llama.rope.scaling.type", ptr(gguf.String("linear"))), setKV("llama.rope.scaling.factor", ptr(gguf.Float32(4)))), nil), false, 4},
		{"scale_linear", edit(t, setKV("llama.rope.scale_linear", ptr(gguf.Float32(2))), nil), false, 2},
		{"linear 1", edit(t, chain(setKV("llama.rope.scaling.type", ptr(gguf.String("linear"))), setKV("llama.rope.scaling.factor", ptr(gguf.Float32(1)))), nil), false, 0},
		{"none", edit(t, setKV("llama.rope.scaling.type", ptr(gguf.String("none"))), freqs), true, 0},
	} {
		m, err := llamatest.OpenBytes("r.gguf", tc.b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if m.RopeFactors != tc.factors || m.RopeLinear != tc.linear {
			t.Errorf("%s: RopeFactors %v RopeLinear %v, want %v %v", tc.name, m.RopeFactors, m.RopeLinear, tc.factors, tc.linear)
		}
		if got := len(m.Weights()) - len(cfg.Weights()); got != map[bool]int{false: 0, true: 1}[tc.factors] {
			t.Errorf("%s: %d weights more than without rope_freqs", tc.name, got)
		}
	}
}

func TestGGUFErrors(t *testing.T) {
	dropTensor := func(name string) func([]gguf.Tensor) []gguf.Tensor {
		return func(ts []gguf.Tensor) []gguf.Tensor {
			var out []gguf.Tensor
			for _, x := range ts {
				if x.Name != name {
					out = append(out, x)
				}
			}
			return out
		}
	}
	reshape := func(ts []gguf.Tensor) []gguf.Tensor {
		for i := range ts {
			if ts[i].Name == "blk.1.attn_k.weight" {
				ts[i].Dims = []int64{16, 32} // transposed
			}
		}
		return ts
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"arch", edit(t, setKV("general.architecture", ptr(gguf.String("gpt2"))), nil), `general.architecture is "gpt2"; only "llama" is supported`},
		{"no arch", edit(t, setKV("general.architecture", nil), nil), `metadata "general.architecture": missing`},
		{"no block count", edit(t, setKV("llama.block_count", nil), nil), `metadata "llama.block_count": missing`},
		{"no eps", edit(t, setKV("llama.attention.layer_norm_rms_epsilon", nil), nil), `"llama.attention.layer_norm_rms_epsilon": missing`},
		{"eps type", edit(t, setKV("llama.attention.layer_norm_rms_epsilon", ptr(gguf.String("1e-5"))), nil), `has type string, want a float`},
		{"zero heads", edit(t, setKV("llama.attention.head_count", ptr(gguf.Uint32(0))), nil), `metadata "llama.attention.head_count" is 0, must be positive`},
		{"heads", edit(t, setKV("llama.attention.head_count", ptr(gguf.Uint32(5))), nil), "llama.embedding_length 32 is not a multiple of llama.attention.head_count 5"},
		{"kv heads", edit(t, setKV("llama.attention.head_count_kv", ptr(gguf.Uint32(3))), nil), "4 heads are not a multiple of 3 key/value heads"},
		{"rope dim", edit(t, setKV("llama.rope.dimension_count", ptr(gguf.Uint32(9))), nil), "rope dimension 9 must be even and at most the head size 8"},
		{"key length", edit(t, setKV("llama.attention.key_length", ptr(gguf.Uint32(16))), nil), `"llama.attention.key_length" must equal the head size 8`},
		{"scaling", edit(t, setKV("llama.rope.scaling.type", ptr(gguf.String("yarn"))), nil), `llama.rope.scaling.type "yarn" is not supported (supported: none, linear`},
		{"no linear factor", edit(t, setKV("llama.rope.scaling.type", ptr(gguf.String("linear"))), nil), `metadata "llama.rope.scaling.factor": missing`},
		{"zero linear factor", edit(t, chain(setKV("llama.rope.scaling.type", ptr(gguf.String("linear"))), setKV("llama.rope.scaling.factor", ptr(gguf.Float32(0)))), nil), `"llama.rope.scaling.factor" is 0, must be positive`},
		{"scale_linear NaN", edit(t, setKV("llama.rope.scale_linear", ptr(gguf.Float32(float32(math.NaN())))), nil), `"llama.rope.scale_linear" is NaN, must be positive`},
		{"rope_freqs shape", edit(t, nil, addRopeFreqs(gguf.Tensor{Dims: []int64{3}, Type: quant.F32, Data: f32Bytes(1, 2, 3)})), `tensor "rope_freqs.weight" has shape [3], want [4]`},
		{"rope_freqs type", edit(t, nil, addRopeFreqs(gguf.Tensor{Dims: []int64{4}, Type: quant.F16, Data: make([]byte, 8)})), `tensor "rope_freqs.weight" is F16; it must be F32`},
		{"rope_freqs zero", edit(t, nil, addRopeFreqs(gguf.Tensor{Dims: []int64{4}, Type: quant.F32, Data: f32Bytes(1, 2, 0, 8)})), `tensor "rope_freqs.weight" element 2 is 0; each pair's frequency divisor must be positive`},
		{"vocab", edit(t, setKV("llama.vocab_size", ptr(gguf.Uint32(11))), nil), "llama.vocab_size is 11, but token_embd.weight has 10 rows"},
		{"missing tensor", edit(t, nil, dropTensor("blk.1.ffn_up.weight")), `tensor "blk.1.ffn_up.weight" is missing`},
		{"no embedding", edit(t, nil, dropTensor("token_embd.weight")), `tensor "token_embd.weight" is missing`},
		{"shape", edit(t, nil, reshape), `tensor "blk.1.attn_k.weight" has shape [32 16], want [16 32]`},
	} {
		_, err := llamatest.OpenBytes("bad.gguf", tc.b)
		if err == nil || !strings.HasPrefix(err.Error(), "gguf: bad.gguf: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestUntiedGGUF(t *testing.T) {
	untied := cfg
	untied.Tied = false
	var buf bytes.Buffer
	if err := llamatest.WriteGGUF(&buf, untied, llamatest.RandomWeights(untied, 2), nil); err != nil {
		t.Fatal(err)
	}
	m, err := llamatest.OpenBytes("u.gguf", buf.Bytes())
	if err != nil || m.Tied {
		t.Fatalf("tied %v, %v", m != nil && m.Tied, err)
	}
}
