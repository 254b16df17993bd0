package llama2c

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tgc/pkg/testmodels"
)

func TestStories260K(t *testing.T) {
	path := testmodels.Path(t, "stories260K.bin")
	exp := testmodels.LoadExpected(t).Stories260K.Config
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := Config{Dim: exp.Dim, HiddenDim: exp.HiddenDim, Layers: exp.Layers, Heads: exp.Heads,
		KVHeads: exp.KVHeads, VocabSize: exp.VocabSize, SeqLen: exp.SeqLen, SharedClassifier: true}
	if c.Config != want || c.Version != 0 {
		t.Fatalf("config %+v (version %d), want %+v", c.Config, c.Version, want)
	}
	if len(c.Tensors) != 2+9*c.Layers {
		t.Errorf("%d tensors, want %d", len(c.Tensors), 2+9*c.Layers)
	}
	k, ok := c.Tensor("blk.4.attn_k.weight")
	if !ok || !reflect.DeepEqual(k.Shape, []int{32, 64}) {
		t.Fatalf("blk.4.attn_k.weight: %+v", k)
	}
	if _, ok := c.Tensor("output.weight"); ok {
		t.Error("a shared classifier has an output.weight")
	}
	// The RoPE tables the reader skips sit between output_norm and the end
	// of the file; they hold cos and sin of pos*10000^(-2i/head_size). If
	// the layout arithmetic were off they would not be found there.
	norm, _ := c.Tensor("output_norm.weight")
	b, _ := os.ReadFile(path)
	tail := 2 * c.SeqLen * c.HeadSize() / 2 * 4
	tables := b[len(b)-tail:]
	cos, sin := ropeTables(c.Config)
	for i, want := range append(cos, sin...) {
		got := math.Float32frombits(binary.LittleEndian.Uint32(tables[4*i:]))
		if math.Abs(float64(got-want)) > 1e-4 { // the export computed them in float32
			t.Fatalf("RoPE table float %d = %v, want %v", i, got, want)
		}
	}
	if c.Tensors[len(c.Tensors)-1].Name != "output_norm.weight" ||
		!bytes.Equal(b[len(b)-tail-len(norm.Data):len(b)-tail], norm.Data) {
		t.Error("output_norm.weight does not end right before the RoPE tables")
	}
}

func randomWeights(rng *rand.Rand, cfg Config) map[string][]float32 {
	layout, _, err := cfg.layout(0, true)
	if err != nil {
		panic(err)
	}
	w := map[string][]float32{}
	for _, e := range layout {
		if e.name == "" {
			continue
		}
		x := make([]float32, e.elements())
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		w[e.name] = x
	}
	return w
}

func TestWriteParseRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, version := range []int{0, 1} {
		for _, shared := range []bool{true, false} {
			cfg := Config{Dim: 16, HiddenDim: 24, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 10, SeqLen: 8, SharedClassifier: shared}
			w := randomWeights(rng, cfg)
			var buf bytes.Buffer
			if err := Write(&buf, version, cfg, w); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "m.bin")
			os.WriteFile(path, buf.Bytes(), 0o644)
			c, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.Config != cfg || c.Version != version {
				t.Errorf("v%d: config %+v, want %+v", version, c.Config, cfg)
			}
			if len(c.Tensors) != len(w) {
				t.Errorf("v%d shared %v: %d tensors, want %d", version, shared, len(c.Tensors), len(w))
			}
			for _, tn := range c.Tensors {
				if !reflect.DeepEqual(tn.Floats(), w[tn.Name]) {
					t.Errorf("v%d: tensor %q differs", version, tn.Name)
				}
			}
			c.Close()
		}
	}
}

func header(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func TestErrors(t *testing.T) {
	cfg := Config{Dim: 8, HiddenDim: 8, Layers: 1, Heads: 2, KVHeads: 1, VocabSize: 4, SeqLen: 2, SharedClassifier: true}
	var good bytes.Buffer
	if err := Write(&good, 0, cfg, randomWeights(rand.New(rand.NewPCG(1, 1)), cfg)); err != nil {
		t.Fatal(err)
	}
	v1 := binary.LittleEndian.AppendUint32(nil, magic)
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short", header(8, 8), "header: file is 8 bytes, shorter than the 28-byte header"},
		{"zero dim", header(0, 8, 1, 2, 1, 4, 2), "header: dim is 0, must be positive"},
		{"negative layers", header(8, 8, -1, 2, 1, 4, 2), "header: n_layers is -1"},
		{"heads", header(8, 8, 1, 3, 1, 4, 2), "dim 8 is not a multiple of n_heads 3"},
		{"kv heads", header(8, 8, 1, 2, 3, 4, 2), "n_heads 2 is not a multiple of n_kv_heads 3"},
		{"odd head", header(6, 8, 1, 2, 1, 4, 2), "head size 3 (dim/n_heads) is odd"},
		{"huge", header(1<<30, 1<<30, 1<<30, 2, 1, 1<<30, 1<<30), "overflow"},
		{"truncated", good.Bytes()[:good.Len()-1], "size: truncated: the file has 1819 bytes, but dim 8, hidden_dim 8, 1 layers, 2 heads, 1 kv heads, vocab 4, seq_len 2, shared classifier needs 1820"},
		{"trailing", append(bytes.Clone(good.Bytes()), 0), "size: trailing data: the file has 1821 bytes"},
		{"unshared but short", append(header(8, 8, 1, 2, 1, -4, 2), good.Bytes()[28:]...), "separate classifier needs 1948"},
		{"version 2", append(append(v1, header(2)...), make([]byte, 300)...), "export version 2 is not supported"},
		{"v1 short", append(append(v1, header(1)...), make([]byte, 10)...), "shorter than the 256-byte header"},
		{"v1 shared byte", append(append(append(v1, header(1, 8, 8, 1, 2, 1, 4, 2)...), 7), make([]byte, 300)...), "shared_classifier byte is 7"},
	} {
		_, err := Parse("bad.bin", tc.b)
		if err == nil || !strings.HasPrefix(err.Error(), "llama2c: bad.bin: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	cfg := Config{Dim: 8, HiddenDim: 8, Layers: 1, Heads: 2, KVHeads: 1, VocabSize: 4, SeqLen: 2, SharedClassifier: true}
	w := randomWeights(rand.New(rand.NewPCG(1, 1)), cfg)
	w["output.weight"] = make([]float32, 32)
	var buf bytes.Buffer
	if err := Write(&buf, 0, cfg, w); err == nil || !strings.Contains(err.Error(), `tensors ["output.weight"] are not part`) {
		t.Errorf("extra tensor: %v", err)
	}
	delete(w, "output.weight")
	w["blk.0.ffn_up.weight"] = w["blk.0.ffn_up.weight"][1:]
	if err := Write(&buf, 0, cfg, w); err == nil || !strings.Contains(err.Error(), `"blk.0.ffn_up.weight" has 63 elements, [8 8] needs 64`) {
		t.Errorf("short tensor: %v", err)
	}
	if buf.Len() != 0 {
		t.Error("a failed Write wrote bytes")
	}
}

func TestTokenizerFile(t *testing.T) {
	v, err := ReadTokenizer(testmodels.Path(t, "tokenizer.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Pieces) != 32000 || v.MaxTokenLength != 27 {
		t.Fatalf("%d tokens, max length %d", len(v.Pieces), v.MaxTokenLength)
	}
	for id, want := range map[int]string{0: "<unk>", 1: "\n<s>\n", 2: "\n</s>\n", 3: "<0x00>", 13: "<0x0A>", 29871: " ", 9038: " Once"} {
		if v.Pieces[id] != want {
			t.Errorf("piece %d = %q, want %q", id, v.Pieces[id], want)
		}
	}
	if v.Scores[260] != -1 || v.Scores[259] != -1e9 {
		t.Errorf("scores 259, 260 = %v, %v", v.Scores[259], v.Scores[260])
	}
	var buf bytes.Buffer
	if err := WriteTokenizer(&buf, v); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(testmodels.Path(t, "tokenizer.bin"))
	if !bytes.Equal(buf.Bytes(), orig) {
		t.Error("writing the tokenizer back does not give the same bytes")
	}
}

func TestTokenizerErrors(t *testing.T) {
	rec := func(score float32, n int32, s string) []byte {
		return append(header(int32(math.Float32bits(score)), n), s...)
	}
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{nil, "max_token_length: truncated"},
		{header(-1), "max_token_length is -1"},
		{header(4), "no tokens"},
		{append(header(4), 1, 2, 3), "token 0: truncated: score and length need 8 bytes at offset 4, 3 are left"},
		{append(header(4), rec(0, 5, "abc")...), "token 0: length 5 at offset 8, but 3 bytes are left"},
		{append(append(header(4), rec(0, 1, "a")...), rec(0, -1, "")...), "token 1: length -1"},
	} {
		_, err := ParseTokenizer("tok.bin", tc.b)
		if err == nil || !strings.HasPrefix(err.Error(), "llama2c: tok.bin: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}
