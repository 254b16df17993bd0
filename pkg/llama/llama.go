// Package llama opens a checkpoint of the LLaMA architecture, GGUF or
// llama2.c, as one thing: the hyperparameters and the weights under GGUF's
// tensor names, each kept in its stored type (quantized blocks stay
// quantized) and read in place from the mapped file.
//
// Weights, row-major (outermost first), with hd = Dim/Heads:
//
//	token_embd.weight          [VocabSize, Dim]
//	blk.N.attn_norm.weight     [Dim]
//	blk.N.attn_q.weight        [Heads*hd, Dim]
//	blk.N.attn_k.weight        [KVHeads*hd, Dim]
//	blk.N.attn_v.weight        [KVHeads*hd, Dim]
//	blk.N.attn_output.weight   [Dim, Heads*hd]
//	blk.N.ffn_norm.weight      [Dim]
//	blk.N.ffn_gate.weight      [HiddenDim, Dim]   (llama2.c's w1)
//	blk.N.ffn_down.weight      [Dim, HiddenDim]   (w2)
//	blk.N.ffn_up.weight        [HiddenDim, Dim]   (w3)
//	output_norm.weight         [Dim]
//	output.weight              [VocabSize, Dim]   absent when tied to token_embd
//
// Query/key pairs (2i, 2i+1) of each head are rotated together (RoPE as in
// Meta's original code, llama2.c and llama.cpp's GGUF files).
package llama

import (
	"fmt"
	"math"
	"os"
	"reflect"

	"tgc/pkg/fileaccess"
	"tgc/pkg/gguf"
	"tgc/pkg/llama2c"
	"tgc/pkg/quant"
)

// Config is the architecture's hyperparameters.
type Config struct {
	Dim, HiddenDim, Layers, Heads, KVHeads, VocabSize int
	// ContextLength is the most positions the model was trained for.
	ContextLength int
	// RopeDim is the number of rotated dimensions at the start of each head
	// (the head size for LLaMA); RopeTheta the base of the frequencies.
	RopeDim   int
	RopeTheta float64
	// RopeFactors: the model has rope_freqs.weight, RopeDim/2 float32
	// divisors of the pairs' frequencies (Llama 3.1's long-context
	// scaling, as llama.cpp's converter writes it; read as a weight).
	RopeFactors bool
	// RopeLinear > 0: linear RoPE scaling, positions divided by it
	// (llama.rope.scaling.type "linear", llama.cpp's freq_scale = 1/it).
	RopeLinear float64
	// NormEps is RMSNorm's epsilon.
	NormEps float64
	// Tied: the classifier is the token embedding (no output.weight).
	Tied bool
}

// HeadDim is the size of one attention head.
func (c Config) HeadDim() int { return c.Dim / c.Heads }

// Tensor is one weight.
type Tensor struct {
	Name  string
	Type  quant.Type
	Shape []int // outermost first
	// Data holds the raw elements or blocks, row by row; it aliases the
	// mapped file and is valid until the Model is closed.
	Data []byte
}

// Floats dequantizes the tensor (a copy, for tests and references).
func (t *Tensor) Floats() ([]float32, error) {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	out := make([]float32, n)
	if err := quant.Dequantize(t.Type, out, t.Data); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return out, nil
}

// Model is an opened checkpoint.
type Model struct {
	Path   string
	Format string // "gguf" or "llama2c"
	Config
	Tensors map[string]*Tensor
	// GGUF is the parsed file of a GGUF model (its metadata holds the
	// tokenizer), nil for llama2.c.
	GGUF *gguf.File

	close func() error
}

// Close releases the mapped file; tensor data must not be used after it.
func (m *Model) Close() error {
	if m.close == nil {
		return nil
	}
	err := m.close()
	m.close = nil
	return err
}

// Open opens a GGUF file (told by its magic) or else a llama2.c checkpoint.
// A FIFO or device is refused without blocking (fileaccess.Open).
func Open(path string) (*Model, error) {
	f, err := fileaccess.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return OpenFile(f)
}

// OpenFile is Open for a file already open (through a script's file access
// policy); f may be closed once it returns.
func OpenFile(f *os.File) (*Model, error) {
	if IsGGUF(f) {
		g, err := gguf.OpenFile(f)
		if err != nil {
			return nil, err
		}
		m, err := FromGGUF(g)
		if err != nil {
			g.Close()
			return nil, err
		}
		m.close = g.Close
		return m, nil
	}
	c, err := llama2c.OpenFile(f)
	if err != nil {
		return nil, err
	}
	m, err := FromLlama2c(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	m.close = c.Close
	return m, nil
}

// IsGGUF reports whether an open file starts with GGUF's magic.
func IsGGUF(f *os.File) bool {
	var magic [4]byte
	n, _ := f.ReadAt(magic[:], 0)
	return n == 4 && string(magic[:]) == gguf.Magic
}

// Llama2cNormEps is run.c's RMSNorm epsilon, the float32 1e-5f (GGUF also
// stores it as a float32, so a converted model has the same value).
const Llama2cNormEps = float64(float32(1e-5))

// FromLlama2c views a llama2.c checkpoint as a Model (RoPE theta 10000,
// RMSNorm epsilon Llama2cNormEps, as run.c has them). Closing the Model does
// not close the checkpoint.
func FromLlama2c(c *llama2c.Checkpoint) (*Model, error) {
	m := &Model{Path: c.Name, Format: "llama2c", Tensors: map[string]*Tensor{}, Config: Config{
		Dim: c.Dim, HiddenDim: c.HiddenDim, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads,
		VocabSize: c.VocabSize, ContextLength: c.SeqLen, RopeDim: c.HeadSize(), RopeTheta: 10000,
		NormEps: Llama2cNormEps, Tied: c.SharedClassifier,
	}}
	for i := range c.Tensors {
		t := &c.Tensors[i]
		m.Tensors[t.Name] = &Tensor{Name: t.Name, Type: quant.F32, Shape: t.Shape, Data: t.Data}
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", c.Name, err)
	}
	return m, nil
}

// FromGGUF reads the llama.* hyperparameters of a GGUF file and views its
// tensors as a Model. Closing the Model does not close the file.
func FromGGUF(f *gguf.File) (*Model, error) {
	// The getters' errors name the file and key already; bad adds the
	// file to this function's own.
	bad := func(format string, args ...any) error {
		return fmt.Errorf("gguf: %s: "+format, append([]any{f.Name}, args...)...)
	}
	arch, err := f.GetString("general.architecture")
	if err != nil {
		return nil, err
	}
	if arch != "llama" {
		return nil, bad("general.architecture is %q; only \"llama\" is supported", arch)
	}
	m := &Model{Path: f.Name, Format: "gguf", GGUF: f, Tensors: map[string]*Tensor{}}
	c := &m.Config
	ints := []struct {
		key      string
		dst      *int
		optional bool
	}{
		{"llama.context_length", &c.ContextLength, false},
		{"llama.embedding_length", &c.Dim, false},
		{"llama.block_count", &c.Layers, false},
		{"llama.feed_forward_length", &c.HiddenDim, false},
		{"llama.attention.head_count", &c.Heads, false},
		{"llama.attention.head_count_kv", &c.KVHeads, true},
		{"llama.rope.dimension_count", &c.RopeDim, true},
	}
	for _, k := range ints {
		if _, ok := f.Lookup(k.key); !ok && k.optional {
			continue
		}
		v, err := f.GetInt(k.key)
		if err != nil {
			return nil, err
		}
		if v <= 0 || v > math.MaxInt32 {
			return nil, bad("metadata %q is %d, must be positive", k.key, v)
		}
		*k.dst = int(v)
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.Dim%c.Heads != 0 {
		return nil, bad("llama.embedding_length %d is not a multiple of llama.attention.head_count %d", c.Dim, c.Heads)
	}
	if c.RopeDim == 0 {
		c.RopeDim = c.HeadDim()
	}
	if c.NormEps, err = f.GetFloat("llama.attention.layer_norm_rms_epsilon"); err != nil {
		return nil, err
	}
	c.RopeTheta = 10000
	if _, ok := f.Lookup("llama.rope.freq_base"); ok {
		if c.RopeTheta, err = f.GetFloat("llama.rope.freq_base"); err != nil {
			return nil, err
		}
	}
	if !(c.NormEps > 0) || !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return nil, bad("layer_norm_rms_epsilon %v and rope.freq_base %v must be positive", c.NormEps, c.RopeTheta)
	}
	for _, key := range []string{"llama.attention.key_length", "llama.attention.value_length"} {
		if _, ok := f.Lookup(key); ok {
			if v, err := f.GetInt(key); err != nil || v != int64(c.HeadDim()) {
				return nil, bad("metadata %q must equal the head size %d (embedding_length/head_count)", key, c.HeadDim())
			}
		}
	}
	if c.RopeLinear, err = ropeScaling(f); err != nil {
		return nil, bad("%w", err)
	}
	_, c.RopeFactors = f.Tensor("rope_freqs.weight")
	for i := range f.Tensors {
		t := &f.Tensors[i]
		m.Tensors[t.Name] = &Tensor{Name: t.Name, Type: t.Type, Shape: t.Shape(), Data: t.Data}
	}
	emb, ok := m.Tensors["token_embd.weight"]
	if !ok || len(emb.Shape) != 2 {
		return nil, bad("tensor \"token_embd.weight\" is missing or not a matrix")
	}
	c.VocabSize = emb.Shape[0]
	if v, err := f.GetInt("llama.vocab_size"); err == nil && v != int64(c.VocabSize) {
		return nil, bad("llama.vocab_size is %d, but token_embd.weight has %d rows", v, c.VocabSize)
	}
	_, hasOutput := m.Tensors["output.weight"]
	c.Tied = !hasOutput
	if err := m.check(); err != nil {
		return nil, bad("%w", err)
	}
	if c.RopeFactors {
		if err := checkRopeFactors(m.Tensors["rope_freqs.weight"]); err != nil {
			return nil, bad("%w", err)
		}
	}
	return m, nil
}

// ropeScaling reads llama.rope.scaling.type and its factor: the linear
// scaling's factor, or 0 for none. llama.cpp's older key
// llama.rope.scale_linear means the same. YaRN and the other types change
// more than the angles (attention temperature, ramps) and are refused.
func ropeScaling(f *gguf.File) (float64, error) {
	typ := "none"
	if _, ok := f.Lookup("llama.rope.scaling.type"); ok {
		var err error
		if typ, err = f.GetString("llama.rope.scaling.type"); err != nil {
			return 0, err
		}
	}
	key := "llama.rope.scaling.factor"
	switch typ {
	case "none":
		if _, ok := f.Lookup("llama.rope.scale_linear"); !ok {
			return 0, nil
		}
		key = "llama.rope.scale_linear"
	case "linear":
	default:
		return 0, fmt.Errorf("llama.rope.scaling.type %q is not supported (supported: none, linear; Llama 3.1's scaling comes as rope_freqs.weight)", typ)
	}
	factor, err := f.GetFloat(key)
	if err != nil {
		return 0, err
	}
	if !(factor > 0) || math.IsInf(factor, 0) {
		return 0, fmt.Errorf("metadata %q is %v, must be positive", key, factor)
	}
	if factor == 1 {
		return 0, nil
	}
	return factor, nil
}

// checkRopeFactors refuses rope_freqs.weight unless it is float32 (as
// llama.cpp writes and reads it) and every divisor is positive and finite.
func checkRopeFactors(t *Tensor) error {
	if t.Type != quant.F32 {
		return fmt.Errorf("tensor \"rope_freqs.weight\" is %s; it must be F32", t.Type)
	}
	x, err := t.Floats()
	if err != nil {
		return err
	}
	for i, v := range x {
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("tensor \"rope_freqs.weight\" element %d is %v; each pair's frequency divisor must be positive", i, v)
		}
	}
	return nil
}

// Weight names a weight and its shape.
type Weight struct {
	Name  string
	Shape []int
}

// Weights lists every weight of the config with its shape, in the order
// llama.cpp writes them.
func (c Config) Weights() []Weight {
	hd := c.HeadDim()
	w := []Weight{{"token_embd.weight", []int{c.VocabSize, c.Dim}}}
	for l := range c.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		w = append(w,
			Weight{p + "attn_norm.weight", []int{c.Dim}},
			Weight{p + "attn_q.weight", []int{c.Heads * hd, c.Dim}},
			Weight{p + "attn_k.weight", []int{c.KVHeads * hd, c.Dim}},
			Weight{p + "attn_v.weight", []int{c.KVHeads * hd, c.Dim}},
			Weight{p + "attn_output.weight", []int{c.Dim, c.Heads * hd}},
			Weight{p + "ffn_norm.weight", []int{c.Dim}},
			Weight{p + "ffn_gate.weight", []int{c.HiddenDim, c.Dim}},
			Weight{p + "ffn_down.weight", []int{c.Dim, c.HiddenDim}},
			Weight{p + "ffn_up.weight", []int{c.HiddenDim, c.Dim}})
	}
	w = append(w, Weight{"output_norm.weight", []int{c.Dim}})
	if c.RopeFactors {
		w = append(w, Weight{"rope_freqs.weight", []int{c.RopeDim / 2}})
	}
	if !c.Tied {
		w = append(w, Weight{"output.weight", []int{c.VocabSize, c.Dim}})
	}
	return w
}

// check validates the config and that every weight is present with its
// shape.
func (m *Model) check() error {
	c := m.Config
	switch {
	case c.Heads <= 0 || c.KVHeads <= 0 || c.Dim%c.Heads != 0:
		return fmt.Errorf("%d heads do not divide dim %d", c.Heads, c.Dim)
	case c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("%d heads are not a multiple of %d key/value heads", c.Heads, c.KVHeads)
	case c.RopeDim <= 0 || c.RopeDim > c.HeadDim() || c.RopeDim%2 != 0:
		return fmt.Errorf("rope dimension %d must be even and at most the head size %d", c.RopeDim, c.HeadDim())
	}
	for _, w := range c.Weights() {
		t, ok := m.Tensors[w.Name]
		if !ok {
			return fmt.Errorf("tensor %q is missing", w.Name)
		}
		if !reflect.DeepEqual(t.Shape, w.Shape) {
			return fmt.Errorf("tensor %q has shape %v, want %v", w.Name, t.Shape, w.Shape)
		}
	}
	return nil
}
