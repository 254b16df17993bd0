package nnlib

import (
	"fmt"
	"math"
	"strings"

	"go.starlark.net/starlark"

	"tgc/pkg/gguf"
	"tgc/pkg/ir"
	"tgc/pkg/llama"
	"tgc/pkg/llama2c"
	"tgc/pkg/mmap"
	"tgc/pkg/nn"
	"tgc/pkg/quant"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tokenizer"
)

// LLaMA checkpoints (docs/llama.md): nn.state.gguf_load(path) and
// nn.state.llama2c_load(path) return (kv, weights) as tinygrad's gguf_load
// does: kv the metadata, with every llama.* hyperparameter the model needs
// filled in (llama2.c files get them from their header), and weights the
// tensors under GGUF's names. A quantized weight is its raw blocks on the
// device and a lazy dequantization expression (nn.Dequant) that fuses into
// the kernel reading it. nn.state.tokenizer(path) reads a tokenizer.bin
// or a GGUF file's tokenizer.

// maxKVArray bounds the arrays copied into kv (the tokenizer's vocabulary
// has its own builtin).
const maxKVArray = 256

func ggufLoad(c *pyrt.Call) (starlark.Value, error)    { return loadLlama(c, true) }
func llama2cLoad(c *pyrt.Call) (starlark.Value, error) { return loadLlama(c, false) }

func loadLlama(c *pyrt.Call, wantGGUF bool) (starlark.Value, error) {
	var path string
	if err := c.Unpack("path", &path); err != nil {
		return nil, err
	}
	f, err := files(c).Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", c.Name, err)
	}
	defer f.Close()
	switch isGGUF := llama.IsGGUF(f); {
	case wantGGUF && !isGGUF:
		return nil, fmt.Errorf("%s: %s is not a GGUF file (no GGUF magic); a llama2.c checkpoint is read by nn.state.llama2c_load", c.Name, path)
	case !wantGGUF && isGGUF:
		return nil, fmt.Errorf("%s: %s is a GGUF file: read it with nn.state.gguf_load", c.Name, path)
	}
	m, err := llama.OpenFile(f)
	if err != nil {
		return nil, err
	}
	kv, err := llamaKV(m)
	if err != nil {
		m.Close()
		return nil, err
	}
	ctx := tensorlib.Context(c)
	weights := starlark.NewDict(len(m.Tensors))
	mapped := false // some weight still reads the mapped file (trace mode)
	for _, w := range m.Config.Weights() {
		t := m.Tensors[w.Name]
		qkv := qkvOf(m, w.Name)
		if qkv == nil && fusedQKVPart(m, w.Name) {
			continue // set with its layer's attn_qkv.weight
		}
		if qkv != nil {
			t = qkv
		}
		data, packed := t.Data, quant.HasPacked(t.Type)
		if packed {
			// The kernel layout (quant.Pack), a copy: the file's pages go now.
			if data, err = quant.Pack(t.Type, t.Data); err != nil {
				m.Close()
				return nil, fmt.Errorf("%s: %s: tensor %q: %v", c.Name, path, t.Name, err)
			}
			mmap.Release(t.Data)
		}
		raw, err := ctx.FromBytes(ir.Uint8, []int{len(data)}, data)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("%s: %s: tensor %q: %v", c.Name, path, w.Name, err)
		}
		b := raw.Node().Realized()
		b.Name, b.Weight = t.Name, true
		if err := raw.Upload(); err != nil {
			m.Close()
			return nil, fmt.Errorf("%s: %s: tensor %q: %v", c.Name, path, w.Name, err)
		}
		if raw.Node().Realized().Host == nil {
			mmap.Release(t.Data) // on the device now: the file's pages may go
		} else if !packed && qkv == nil {
			mapped = true
		}
		if qkv != nil {
			for _, part := range qkvParts(w.Name) {
				mmap.Release(m.Tensors[part].Data) // copied into qkv
			}
		}
		dequant := nn.Dequant
		if packed {
			dequant = nn.DequantPacked
		}
		x, err := dequant(raw, t.Type, t.Shape)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("%s: %s: tensor %q: %v", c.Name, path, t.Name, err)
		}
		if err := weights.SetKey(starlark.String(t.Name), tensorlib.NewTensor(x)); err != nil {
			return nil, err
		}
		if qkv != nil {
			// q, k and v stay under their own names: views of the rows of qkv
			row := 0
			for _, part := range qkvParts(w.Name) {
				rows := m.Tensors[part].Shape[0]
				v := x.Shrink([][2]int{{row, row + rows}, {0, t.Shape[1]}})
				if err := weights.SetKey(starlark.String(part), tensorlib.NewTensor(v)); err != nil {
					return nil, err
				}
				row += rows
			}
		}
	}
	if !mapped {
		m.Close()
	}
	return starlark.Tuple{kv, weights}, nil
}

// A layer's query, key and value projections read the same normalized
// rows, so the loader stores their weights as one matrix when they share
// a type: blk.N.attn_qkv.weight, q's rows then k's then v's (raw blocks
// concatenated row by row, which is exact for every block format: a
// block never spans rows). One matrix-vector launch then streams the three
// (a decode step's 768x768 launches run well under the bus; one of three
// times the size runs near it, docs/performance.md `decodeq8`). The three
// names stay in the dict as row views of it, so a script that reads them
// is unchanged (models/llama.tg's prompts use them: their kernels stay
// those of separate weights). Types that differ (Q4_K_M's Q6_K attn_v) and
// packed types (Q4_K, fusableQKV) stay apart.

// qkvParts is the names of q, k, v of the layer whose attn_q is name
// (nil for any other name).
func qkvParts(name string) []string {
	p, ok := strings.CutSuffix(name, "attn_q.weight")
	if !ok || !strings.HasPrefix(p, "blk.") {
		return nil
	}
	return []string{p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}
}

// qkvOf returns the fused attn_qkv tensor of the layer whose attn_q is
// name, a copy of the three's blocks, or nil when name is not an attn_q
// or the three's types or row lengths differ.
func qkvOf(m *llama.Model, name string) *llama.Tensor {
	parts := qkvParts(name)
	if parts == nil || !fusableQKV(m, parts) {
		return nil
	}
	q := m.Tensors[parts[0]]
	t := &llama.Tensor{Name: strings.TrimSuffix(name, "attn_q.weight") + "attn_qkv.weight", Type: q.Type,
		Shape: []int{0, q.Shape[1]}}
	n := 0
	for _, p := range parts {
		n += len(m.Tensors[p].Data)
	}
	t.Data = make([]byte, 0, n)
	for _, p := range parts {
		t.Data = append(t.Data, m.Tensors[p].Data...)
		t.Shape[0] += m.Tensors[p].Shape[0]
	}
	return t
}

// fusableQKV reports whether the named q, k, v tensors share a type and a
// row length, in a type without a packed layout. (A prompt dequantizes a
// packed Q4_K weight into scratch, fused or not: for the fused one, q, k
// and v together, 7 MB at dim 768 instead of 2.4 MB at a time, which Q4_K's
// peak memory cannot afford; and its decode kernels are compute-bound, where
// the fusion saves little.)
func fusableQKV(m *llama.Model, parts []string) bool {
	q := m.Tensors[parts[0]]
	if q == nil || quant.HasPacked(q.Type) {
		return false
	}
	for _, p := range parts {
		t := m.Tensors[p]
		if t == nil || t.Type != q.Type || len(t.Shape) != 2 || t.Shape[1] != q.Shape[1] {
			return false
		}
	}
	return true
}

// fusedQKVPart reports whether name is a layer's attn_k or attn_v that
// the loader stores inside its attn_qkv.
func fusedQKVPart(m *llama.Model, name string) bool {
	for _, s := range []string{"attn_k.weight", "attn_v.weight"} {
		if p, ok := strings.CutSuffix(name, s); ok && strings.HasPrefix(p, "blk.") {
			return fusableQKV(m, qkvParts(p+"attn_q.weight"))
		}
	}
	return false
}

// llamaKV is the metadata of a model as a dict, with the llama.* keys of
// its Config (defaults filled in; from the header for llama2.c).
func llamaKV(m *llama.Model) (*starlark.Dict, error) {
	kv := starlark.NewDict(32)
	if g := m.GGUF; g != nil {
		for _, e := range g.Metadata {
			if v, ok := ggufValue(e.Value); ok {
				if err := kv.SetKey(starlark.String(e.Key), v); err != nil {
					return nil, err
				}
			}
		}
	}
	c := m.Config
	set := map[string]starlark.Value{
		"general.architecture":                   starlark.String("llama"),
		"general.file_type":                      starlark.String(m.Format),
		"llama.context_length":                   starlark.MakeInt(c.ContextLength),
		"llama.embedding_length":                 starlark.MakeInt(c.Dim),
		"llama.block_count":                      starlark.MakeInt(c.Layers),
		"llama.feed_forward_length":              starlark.MakeInt(c.HiddenDim),
		"llama.attention.head_count":             starlark.MakeInt(c.Heads),
		"llama.attention.head_count_kv":          starlark.MakeInt(c.KVHeads),
		"llama.rope.dimension_count":             starlark.MakeInt(c.RopeDim),
		"llama.rope.freq_base":                   starlark.Float(c.RopeTheta),
		"llama.rope.scaling.type":                starlark.String("none"),
		"llama.rope.scaling.factor":              starlark.Float(1),
		"llama.attention.layer_norm_rms_epsilon": starlark.Float(c.NormEps),
		"llama.vocab_size":                       starlark.MakeInt(c.VocabSize),
		"llama.tied_embeddings":                  starlark.Bool(c.Tied),
	}
	if c.RopeLinear > 0 {
		set["llama.rope.scaling.type"], set["llama.rope.scaling.factor"] = starlark.String("linear"), starlark.Float(c.RopeLinear)
	}
	if m.GGUF != nil {
		delete(set, "general.file_type") // the file's own value stays
	}
	for k, v := range set {
		if err := kv.SetKey(starlark.String(k), v); err != nil {
			return nil, err
		}
	}
	return kv, nil
}

// ggufValue converts a metadata value; arrays longer than maxKVArray are
// left out (ok false).
func ggufValue(v gguf.Value) (starlark.Value, bool) {
	switch d := v.Data.(type) {
	case uint8:
		return starlark.MakeInt(int(d)), true
	case int8:
		return starlark.MakeInt(int(d)), true
	case uint16:
		return starlark.MakeInt(int(d)), true
	case int16:
		return starlark.MakeInt(int(d)), true
	case uint32:
		return starlark.MakeUint64(uint64(d)), true
	case int32:
		return starlark.MakeInt(int(d)), true
	case uint64:
		return starlark.MakeUint64(d), true
	case int64:
		return starlark.MakeInt64(d), true
	case float32:
		return starlark.Float(float64(d)), true
	case float64:
		return starlark.Float(d), true
	case bool:
		return starlark.Bool(d), true
	case string:
		return starlark.String(d), true
	case gguf.Array:
		if d.Len() > maxKVArray {
			return nil, false
		}
		var out []starlark.Value
		switch vals := d.Values.(type) {
		case []gguf.Array:
			for _, a := range vals {
				x, ok := ggufValue(gguf.Value{Type: gguf.TypeArray, Data: a})
				if !ok {
					return nil, false
				}
				out = append(out, x)
			}
		default:
			for i := range d.Len() {
				x, ok := ggufValue(gguf.Value{Type: d.Elem, Data: arrayElem(d, i)})
				if !ok {
					return nil, false
				}
				out = append(out, x)
			}
		}
		return starlark.NewList(out), true
	}
	return nil, false
}

// arrayElem is element i of a scalar array.
func arrayElem(a gguf.Array, i int) any {
	switch v := a.Values.(type) {
	case []uint8:
		return v[i]
	case []int8:
		return v[i]
	case []uint16:
		return v[i]
	case []int16:
		return v[i]
	case []uint32:
		return v[i]
	case []int32:
		return v[i]
	case []uint64:
		return v[i]
	case []int64:
		return v[i]
	case []float32:
		return v[i]
	case []float64:
		return v[i]
	case []bool:
		return v[i]
	case []string:
		return v[i]
	}
	return math.NaN()
}

// tokenizerFn is nn.state.tokenizer(path): the tokenizer of a llama2.c
// tokenizer.bin (SentencePiece) or of a GGUF file's metadata (SentencePiece
// or byte-level BPE).
func tokenizerFn(c *pyrt.Call) (starlark.Value, error) {
	var path string
	if err := c.Unpack("path", &path); err != nil {
		return nil, err
	}
	f, err := files(c).Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %v", err)
	}
	defer f.Close()
	var tok *tokenizer.Tokenizer
	if llama.IsGGUF(f) {
		g, err := gguf.OpenFile(f)
		if err != nil {
			return nil, err
		}
		defer g.Close()
		if tok, err = tokenizer.FromGGUF(g); err != nil {
			return nil, err
		}
	} else {
		v, err := llama2c.ReadTokenizerFile(f)
		if err != nil {
			return nil, err
		}
		if tok, err = tokenizer.FromLlama2c(v); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %v", path, err)
		}
	}
	return &Tokenizer{T: tok, Path: path}, nil
}

// Tokenizer is the Starlark value of a tokenizer: encode(text, bos=True),
// decode(ids), piece(prev, id), bos_id, eos_id, and len() the vocabulary.
type Tokenizer struct {
	T    *tokenizer.Tokenizer
	Path string
}

var _ starlark.HasAttrs = (*Tokenizer)(nil)

func (t *Tokenizer) String() string {
	return fmt.Sprintf("<Tokenizer %s: %d pieces>", t.Path, t.T.Len())
}
func (t *Tokenizer) Type() string          { return "Tokenizer" }
func (t *Tokenizer) Freeze()               {}
func (t *Tokenizer) Truth() starlark.Bool  { return starlark.True }
func (t *Tokenizer) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: Tokenizer") }
func (t *Tokenizer) Len() int              { return t.T.Len() }
func (t *Tokenizer) AttrNames() []string {
	return []string{"bos_id", "decode", "encode", "eos_id", "piece", "vocab_size"}
}

func (t *Tokenizer) Attr(name string) (starlark.Value, error) {
	switch name {
	case "bos_id":
		return starlark.MakeInt(t.T.BOS()), nil
	case "eos_id":
		return starlark.MakeInt(t.T.EOS()), nil
	case "vocab_size":
		return starlark.MakeInt(t.T.Len()), nil
	case "encode":
		return pyrt.Builtin("encode", func(c *pyrt.Call) (starlark.Value, error) {
			var text string
			bos := t.T.AddBOS()
			if err := c.Unpack("text", &text, "bos?", &bos); err != nil {
				return nil, err
			}
			return intsValue(t.T.Encode(text, bos, false)), nil
		}), nil
	case "decode":
		return pyrt.Builtin("decode", func(c *pyrt.Call) (starlark.Value, error) {
			var ids *starlark.List
			if err := c.Unpack("ids", &ids); err != nil {
				return nil, err
			}
			var xs []int
			for i := range ids.Len() {
				n, err := tensorlib.ToInt(ids.Index(i))
				if err != nil {
					return nil, fmt.Errorf("decode: element %d: %v", i, err)
				}
				xs = append(xs, n)
			}
			s, err := t.T.Decode(xs)
			return starlark.String(s), err
		}), nil
	case "piece":
		return pyrt.Builtin("piece", func(c *pyrt.Call) (starlark.Value, error) {
			var prev, id int
			if err := c.Unpack("prev", &prev, "id", &id); err != nil {
				return nil, err
			}
			s, err := t.T.Piece(prev, id)
			return starlark.String(s), err
		}), nil
	}
	return nil, nil
}

func intsValue(xs []int) *starlark.List {
	out := make([]starlark.Value, len(xs))
	for i, x := range xs {
		out[i] = starlark.MakeInt(x)
	}
	return starlark.NewList(out)
}
