// Package llama2c reads and writes the checkpoint and tokenizer files of
// Andrej Karpathy's llama2.c.
//
// A checkpoint (version 0, "legacy", the one run.c reads) is seven
// little-endian int32 — dim, hidden_dim, n_layers, n_heads, n_kv_heads,
// vocab_size, seq_len; a negative vocab_size means the classifier is not
// shared with the token embedding — then float32 weights, each stacked over
// the layers: token embedding, attention RMS weights, wq, wk, wv, wo, FFN
// RMS weights, w1, w2, w3, the final RMS weight, two RoPE tables of
// seq_len*head_size/2 floats (ignored: the model computes RoPE itself) and,
// if not shared, the classifier. export.py's version 1 has a 256-byte header
// ("ak42" magic, version, the seven ints with a positive vocab_size, a
// shared-classifier byte), no RoPE tables, and the order norms, embedding,
// wq, wk, wv, wo, w1, w2, w3, classifier.
//
// Tensors are exposed under GGUF's names (token_embd.weight,
// blk.N.attn_q.weight, ...; w1 is ffn_gate, w2 ffn_down, w3 ffn_up) with
// row-major shapes, so a loader treats both formats alike.
package llama2c

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"

	"tgc/pkg/fileaccess"
	"tgc/pkg/mmap"
)

// Config is a checkpoint's header.
type Config struct {
	Dim, HiddenDim, Layers, Heads, KVHeads, VocabSize, SeqLen int
	// SharedClassifier: the output projection is the token embedding.
	SharedClassifier bool
}

// HeadSize is the dimension of one attention head.
func (c Config) HeadSize() int { return c.Dim / c.Heads }

// KVDim is the width of the key and value projections.
func (c Config) KVDim() int { return c.KVHeads * c.HeadSize() }

// Tensor is one weight of a checkpoint.
type Tensor struct {
	Name  string
	Shape []int // row-major, outermost first
	// Data holds the little-endian float32 elements; in a Checkpoint from
	// Open it aliases the mapped file and is valid until Close.
	Data []byte
}

// Floats decodes the elements.
func (t *Tensor) Floats() []float32 {
	out := make([]float32, len(t.Data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return out
}

// Checkpoint is a parsed checkpoint.
type Checkpoint struct {
	Name    string // the path, for messages
	Version int    // 0 (legacy) or 1
	Config
	Tensors []Tensor

	byName map[string]int
	unmap  func() error
}

// magic starts version 1 and later files: "ak42" as a little-endian uint32.
const magic = 0x616b3432

const v1HeaderSize = 256

// Open maps the checkpoint at path and parses it. Tensor data is read in
// place; Close releases it.
func Open(path string) (*Checkpoint, error) {
	fd, err := fileaccess.Open(path)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %w", err)
	}
	defer fd.Close()
	return OpenFile(fd)
}

// OpenFile is Open for a file already open (through a script's file access
// policy); fd may be closed once it returns.
func OpenFile(fd *os.File) (*Checkpoint, error) {
	path := fd.Name()
	b, unmap, err := mmap.MapFile(fd)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", path, err)
	}
	c, err := Parse(path, b)
	if err != nil {
		unmap()
		return nil, err
	}
	c.unmap = unmap
	return c, nil
}

// Close releases the checkpoint's memory. Tensor data must not be used
// after it.
func (c *Checkpoint) Close() error {
	if c.unmap == nil {
		return nil
	}
	err := c.unmap()
	c.unmap = nil
	return err
}

// Tensor returns the tensor called name.
func (c *Checkpoint) Tensor(name string) (*Tensor, bool) {
	i, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return &c.Tensors[i], true
}

// Parse parses a checkpoint held in b; name is used in messages. Tensor data
// aliases b.
func Parse(name string, b []byte) (*Checkpoint, error) {
	c, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", name, err)
	}
	c.Name = name
	return c, nil
}

func parse(b []byte) (*Checkpoint, error) {
	c := &Checkpoint{byName: map[string]int{}}
	header := 28
	ints := b
	if len(b) >= 8 && binary.LittleEndian.Uint32(b) == magic {
		c.Version = int(int32(binary.LittleEndian.Uint32(b[4:])))
		if c.Version != 1 {
			return nil, fmt.Errorf("header: export version %d is not supported (versions 0 and 1 are; export.py --version 0 writes the legacy format run.c reads)", c.Version)
		}
		header = v1HeaderSize
		ints = b[8:]
	}
	if len(b) < header {
		return nil, fmt.Errorf("header: file is %d bytes, shorter than the %d-byte header", len(b), header)
	}
	var h [7]int
	names := [7]string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}
	for i := range h {
		h[i] = int(int32(binary.LittleEndian.Uint32(ints[4*i:])))
	}
	cfg := Config{Dim: h[0], HiddenDim: h[1], Layers: h[2], Heads: h[3], KVHeads: h[4], VocabSize: h[5], SeqLen: h[6]}
	if c.Version == 0 {
		cfg.SharedClassifier = cfg.VocabSize > 0
		if cfg.VocabSize < 0 {
			cfg.VocabSize = -cfg.VocabSize
		}
	} else {
		switch ints[28] {
		case 0, 1:
			cfg.SharedClassifier = ints[28] == 1
		default:
			return nil, fmt.Errorf("header: shared_classifier byte is %d, not 0 or 1", ints[28])
		}
	}
	for i, v := range [7]int{cfg.Dim, cfg.HiddenDim, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.VocabSize, cfg.SeqLen} {
		if v <= 0 {
			return nil, fmt.Errorf("header: %s is %d, must be positive", names[i], h[i])
		}
	}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	c.Config = cfg

	_, total, err := cfg.layout(c.Version, false)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if want := uint64(header) + total*4; uint64(len(b)) != want {
		what := "truncated"
		if uint64(len(b)) > want {
			what = "trailing data"
		}
		return nil, fmt.Errorf("size: %s: the file has %d bytes, but %s needs %d", what, len(b), cfg, want)
	}
	// The sizes match the file, so the layout's length is bounded by it.
	layout, _, _ := cfg.layout(c.Version, true)
	pos := header
	for _, e := range layout {
		n := 4 * e.elements()
		if e.name != "" {
			c.byName[e.name] = len(c.Tensors)
			c.Tensors = append(c.Tensors, Tensor{Name: e.name, Shape: e.shape, Data: b[pos : pos+n : pos+n]})
		}
		pos += n
	}
	return c, nil
}

// check tests the relations between the header's sizes.
func (c Config) check() error {
	switch {
	case c.Dim%c.Heads != 0:
		return fmt.Errorf("dim %d is not a multiple of n_heads %d", c.Dim, c.Heads)
	case c.HeadSize()%2 != 0:
		return fmt.Errorf("head size %d (dim/n_heads) is odd; RoPE rotates pairs", c.HeadSize())
	case c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("n_heads %d is not a multiple of n_kv_heads %d", c.Heads, c.KVHeads)
	}
	return nil
}

func (c Config) String() string {
	cls := "shared classifier"
	if !c.SharedClassifier {
		cls = "separate classifier"
	}
	return fmt.Sprintf("dim %d, hidden_dim %d, %d layers, %d heads, %d kv heads, vocab %d, seq_len %d, %s",
		c.Dim, c.HiddenDim, c.Layers, c.Heads, c.KVHeads, c.VocabSize, c.SeqLen, cls)
}

// entry is one tensor of the file layout; an empty name is skipped data.
type entry struct {
	name  string
	shape []int
}

func (e entry) elements() int {
	n := 1
	for _, d := range e.shape {
		n *= d
	}
	return n
}

// layout returns the total number of floats of a file of this config and,
// if build is set, its tensors in file order. The header's ints are
// untrusted: sizes are checked for overflow, and the entries (one per layer
// and weight) should be built only once the total has been checked against
// the file's size.
func (c Config) layout(version int, build bool) ([]entry, uint64, error) {
	const limit = math.MaxInt / 8 // floats, so that bytes fit an int
	var total uint64
	var overflow bool
	add := func(shape ...int) {
		n := uint64(1)
		for _, d := range shape {
			hi, lo := bits.Mul64(n, uint64(d))
			overflow = overflow || hi != 0 || lo > limit
			n = lo
		}
		total += min(n, limit) // cannot wrap: at most a few dozen terms
		overflow = overflow || total > limit
	}
	var out []entry
	stacked := func(gguf string, shape ...int) {
		add(append([]int{c.Layers}, shape...)...)
		if !build {
			return
		}
		for l := range c.Layers {
			out = append(out, entry{fmt.Sprintf("blk.%d.%s.weight", l, gguf), shape})
		}
	}
	one := func(name string, shape ...int) {
		add(shape...)
		if build {
			out = append(out, entry{name, shape})
		}
	}
	d, h, kv, v := c.Dim, c.HiddenDim, c.KVDim(), c.VocabSize
	matrices := func() {
		stacked("attn_q", d, d)
		stacked("attn_k", kv, d)
		stacked("attn_v", kv, d)
		stacked("attn_output", d, d)
	}
	if version == 0 {
		one("token_embd.weight", v, d)
		stacked("attn_norm", d)
		matrices()
		stacked("ffn_norm", d)
		stacked("ffn_gate", h, d)
		stacked("ffn_down", d, h)
		stacked("ffn_up", h, d)
		one("output_norm.weight", d)
		one("", c.SeqLen, c.HeadSize()/2) // RoPE cos table
		one("", c.SeqLen, c.HeadSize()/2) // RoPE sin table
	} else {
		stacked("attn_norm", d)
		stacked("ffn_norm", d)
		one("output_norm.weight", d)
		one("token_embd.weight", v, d)
		matrices()
		stacked("ffn_gate", h, d)
		stacked("ffn_down", d, h)
		stacked("ffn_up", h, d)
	}
	if !c.SharedClassifier {
		one("output.weight", v, d)
	}
	if overflow {
		return nil, 0, errors.New("the weights of this config overflow any file size")
	}
	return out, total, nil
}
