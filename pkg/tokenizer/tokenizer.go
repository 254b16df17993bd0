// Package tokenizer turns text into LLaMA token ids and back, with one of
// two vocabularies:
//
//   - SentencePiece BPE (pieces with scores), as llama2.c's run.c does: an
//     optional space prefix, one symbol per UTF-8 character (bytes of a
//     character missing from the vocabulary fall back to <0xXX> byte
//     tokens), then repeatedly merging the adjacent pair whose
//     concatenation is the vocabulary piece of highest score (the leftmost
//     on ties).
//   - Byte-level BPE (GPT-2's, Llama 3's): a pre-tokenizer cuts the text
//     into words, each byte of a word is one symbol, and the adjacent pair
//     of lowest merge rank is merged until none is left (see bpe.go).
//
// The vocabulary comes from llama2.c's tokenizer.bin or from a GGUF file's
// tokenizer.ggml.* metadata (model "llama" or "gpt2").
package tokenizer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"tgc/pkg/gguf"
	"tgc/pkg/llama2c"
)

// TokenType classifies a token, with GGUF's numbering.
type TokenType int32

const (
	Normal      TokenType = 1
	Unknown     TokenType = 2
	Control     TokenType = 3 // BOS, EOS, ...: never produced from text, decoded as ""
	UserDefined TokenType = 4
	Unused      TokenType = 5
	Byte        TokenType = 6 // <0xXX>: one raw byte
)

// Vocab is what a Tokenizer is built from. Pieces use ' ' for a space (not
// SentencePiece's '▁'). Scores and Types may be nil (all 0, all Normal).
// BOS, EOS and UNK are token ids, or -1 for none.
type Vocab struct {
	Pieces         []string
	Scores         []float32
	Types          []TokenType
	BOS, EOS, UNK  int
	AddBOS, AddEOS bool
	// AddSpacePrefix: encoding puts a space before non-empty text, and
	// decoding drops the space that starts the piece after BOS.
	AddSpacePrefix bool
	// Merges, when not nil, make the vocabulary byte-level BPE: pieces are
	// spelled in GPT-2's byte alphabet, each merge is "left right" and its
	// rank is its index (lowest first), Pre names the pre-tokenizer (see
	// PreTokenizers), and Scores are not used.
	Merges []string
	Pre    string
}

// Tokenizer encodes and decodes text. It is immutable and safe for
// concurrent use.
type Tokenizer struct {
	v     Vocab
	ids   map[string]int32 // pieces text can be made of
	bytes [256]int32       // the <0xXX> token of each byte, or -1
	bpe   *bpeModel        // byte-level BPE, or nil for SentencePiece
}

// New checks a vocabulary and builds its tokenizer.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Pieces)
	if n == 0 {
		return nil, fmt.Errorf("empty vocabulary")
	}
	if v.Scores == nil {
		v.Scores = make([]float32, n)
	}
	if v.Types == nil {
		v.Types = make([]TokenType, n)
		for i := range v.Types {
			v.Types[i] = Normal
		}
	}
	if len(v.Scores) != n || len(v.Types) != n {
		return nil, fmt.Errorf("%d pieces, %d scores and %d token types", n, len(v.Scores), len(v.Types))
	}
	for _, s := range []struct {
		name string
		id   int
	}{{"BOS", v.BOS}, {"EOS", v.EOS}, {"unknown", v.UNK}} {
		if s.id < -1 || s.id >= n {
			return nil, fmt.Errorf("%s token id %d is outside the vocabulary of %d", s.name, s.id, n)
		}
	}
	if v.AddBOS && v.BOS < 0 {
		return nil, fmt.Errorf("add_bos is set but there is no BOS token")
	}
	if v.AddEOS && v.EOS < 0 {
		return nil, fmt.Errorf("add_eos is set but there is no EOS token")
	}
	t := &Tokenizer{v: v, ids: make(map[string]int32, n)}
	if v.Merges != nil {
		return newBPE(t)
	}
	for i := range t.bytes {
		t.bytes[i] = -1
	}
	for id, p := range v.Pieces {
		switch v.Types[id] {
		case Normal, UserDefined:
			if _, dup := t.ids[p]; !dup { // the first of duplicates wins
				t.ids[p] = int32(id)
			}
		case Byte:
			b, ok := byteOf(p)
			if !ok {
				return nil, fmt.Errorf("token %d has type byte, but its piece %q is not <0xXX>", id, p)
			}
			if t.bytes[b] < 0 {
				t.bytes[b] = int32(id)
			}
		case Unknown, Control, Unused:
		default:
			return nil, fmt.Errorf("token %d has unknown type %d", id, v.Types[id])
		}
	}
	if v.UNK < 0 {
		for b, id := range t.bytes {
			if id < 0 {
				return nil, fmt.Errorf("no unknown token and no byte token for byte %#02x: some text could not be encoded", b)
			}
		}
	}
	return t, nil
}

// byteOf parses a byte token's piece, "<0x0A>".
func byteOf(p string) (byte, bool) {
	if len(p) != 6 || !strings.HasPrefix(p, "<0x") || p[5] != '>' {
		return 0, false
	}
	b, err := strconv.ParseUint(p[3:5], 16, 8)
	return byte(b), err == nil
}

// Len returns the vocabulary size.
func (t *Tokenizer) Len() int { return len(t.v.Pieces) }

// BOS returns the beginning-of-sequence token id, or -1.
func (t *Tokenizer) BOS() int { return t.v.BOS }

// EOS returns the end-of-sequence token id, or -1.
func (t *Tokenizer) EOS() int { return t.v.EOS }

// AddBOS reports whether the vocabulary asks for BOS before a prompt.
func (t *Tokenizer) AddBOS() bool { return t.v.AddBOS }

// AddEOS reports whether the vocabulary asks for EOS after a prompt.
func (t *Tokenizer) AddEOS() bool { return t.v.AddEOS }

// Encode returns the token ids of text, with BOS first and EOS last if asked
// for (see AddBOS and AddEOS for what the vocabulary wants).
func (t *Tokenizer) Encode(text string, bos, eos bool) []int {
	var out []int
	if bos && t.v.BOS >= 0 {
		out = append(out, t.v.BOS)
	}
	if t.bpe != nil {
		out = t.encodeBPE(text, out)
		if eos && t.v.EOS >= 0 {
			out = append(out, t.v.EOS)
		}
		return out
	}
	if text != "" && t.v.AddSpacePrefix {
		text = " " + text
	}
	syms := t.symbols(text)
	mergeSymbols(syms, func(a, b *symbol) (float64, int32, bool) {
		id, ok := t.ids[text[a.start:b.end]]
		return float64(t.v.Scores[id]), id, ok
	})
	for _, s := range syms {
		if s.alive {
			out = append(out, int(s.id))
		}
	}
	if eos && t.v.EOS >= 0 {
		out = append(out, t.v.EOS)
	}
	return out
}

// symbol is one token of the text while merging: a doubly linked list over
// the slice, merged symbols folding into their left neighbour. Its text is
// text[start:end] (symbols always cover adjacent stretches of the text).
type symbol struct {
	start, end int
	id         int32
	prev, next int // -1 at the ends
	alive      bool
	mergeable  bool // byte-fallback tokens never merge
	gen        int  // bumped when the symbol changes, to spot stale pairs
}

// symbols splits text as llama2.c does: a UTF-8 lead byte with up to three
// continuation bytes forms one character; a character that is not a piece
// becomes byte tokens (or the unknown token).
func (t *Tokenizer) symbols(text string) []symbol {
	syms := make([]symbol, 0, len(text))
	add := func(start, end int, id int32, mergeable bool) {
		syms = append(syms, symbol{start: start, end: end, id: id, prev: len(syms) - 1, next: len(syms) + 1, alive: true, mergeable: mergeable})
	}
	for i := 0; i < len(text); {
		j := i + 1
		for j < len(text) && j-i < 4 && text[j]&0xC0 == 0x80 {
			j++
		}
		c := text[i:j]
		if id, ok := t.ids[c]; ok {
			add(i, j, id, true)
		} else {
			for k := i; k < j; k++ {
				id := t.bytes[text[k]]
				if id < 0 {
					id = int32(t.v.UNK)
				}
				add(k, k+1, id, false)
			}
		}
		i = j
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

// pair is a candidate merge of symbols left and right into token id.
type pair struct {
	score       float64
	left, right int
	lgen, rgen  int
	id          int32
}

// pairHeap is a binary max-heap of pairs (written out rather than through
// container/heap, whose interface boxing dominated encoding time).
type pairHeap []pair

// before orders the heap: highest score first, then leftmost, as
// llama2.c's scan picks.
func before(a, b pair) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.left < b.left
}

func (h *pairHeap) push(p pair) {
	*h = append(*h, p)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !before(q[i], q[parent]) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *pairHeap) pop() pair {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		best, l, r := i, 2*i+1, 2*i+2
		if l < n && before(q[l], q[best]) {
			best = l
		}
		if r < n && before(q[r], q[best]) {
			best = r
		}
		if best == i {
			break
		}
		q[i], q[best] = q[best], q[i]
		i = best
	}
	*h = q
	return top
}

// mergeSymbols applies the best merge until none is left; find says
// whether two adjacent symbols merge, into which token and with what score.
// A heap of candidate pairs gives the same merges as llama2.c's repeated
// scan of all pairs (highest score, leftmost on ties) in O(n log n).
func mergeSymbols(syms []symbol, find func(a, b *symbol) (score float64, id int32, ok bool)) {
	h := make(pairHeap, 0, len(syms))
	try := func(l int) {
		if l < 0 || syms[l].next < 0 {
			return
		}
		a, b := &syms[l], &syms[syms[l].next]
		if !a.mergeable || !b.mergeable {
			return
		}
		if score, id, ok := find(a, b); ok {
			h.push(pair{score, l, a.next, a.gen, b.gen, id})
		}
	}
	for i := range syms {
		try(i)
	}
	for len(h) > 0 {
		p := h.pop()
		a, b := &syms[p.left], &syms[p.right]
		if !a.alive || !b.alive || a.next != p.right || a.gen != p.lgen || b.gen != p.rgen {
			continue // one side has changed since the pair was found
		}
		a.end = b.end
		a.id = p.id
		a.gen++
		b.alive = false
		a.next = b.next
		if b.next >= 0 {
			syms[b.next].prev = p.left
		}
		try(a.prev)
		try(p.left)
	}
}

// Piece returns the text of token id when it follows token prev (-1 for
// none), as llama2.c prints it: control tokens are empty, byte tokens are
// their byte, and the text right after BOS loses its leading space (the
// prefix Encode added). Unlike llama2.c that also holds for a space byte
// token, which Encode gives for a space followed by stray UTF-8 continuation
// bytes, so that decoding always inverts encoding. The result may be part of
// a UTF-8 character.
func (t *Tokenizer) Piece(prev, id int) (string, error) {
	if id < 0 || id >= len(t.v.Pieces) {
		return "", fmt.Errorf("token id %d is outside the vocabulary of %d", id, len(t.v.Pieces))
	}
	if t.bpe != nil {
		return t.pieceBPE(id), nil
	}
	p := t.v.Pieces[id]
	switch t.v.Types[id] {
	case Control:
		return "", nil
	case Byte:
		b, _ := byteOf(p)
		p = string([]byte{b})
	}
	if prev == t.v.BOS && prev >= 0 && t.v.AddSpacePrefix {
		p = strings.TrimPrefix(p, " ")
	}
	return p, nil
}

// Decode returns the text of a token sequence. The sequence starts as if
// after BOS, so the space prefix of Encode is dropped whether or not the
// sequence begins with BOS: Decode(Encode(s, ...)) == s.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var sb strings.Builder
	prev := t.v.BOS
	for _, id := range ids {
		p, err := t.Piece(prev, id)
		if err != nil {
			return "", err
		}
		sb.WriteString(p)
		prev = id
	}
	return sb.String(), nil
}

// FromLlama2c builds the tokenizer of a llama2.c tokenizer.bin: token 0 is
// <unk>, 1 BOS and 2 EOS (control), <0xXX> pieces are byte tokens, BOS is
// added to prompts and text gets a space prefix.
func FromLlama2c(v *llama2c.Vocab) (*Tokenizer, error) {
	if len(v.Pieces) < 3 {
		return nil, fmt.Errorf("tokenizer: %d tokens, fewer than <unk>, BOS and EOS", len(v.Pieces))
	}
	types := make([]TokenType, len(v.Pieces))
	for i, p := range v.Pieces {
		switch _, isByte := byteOf(p); {
		case i == 0:
			types[i] = Unknown
		case i <= 2:
			types[i] = Control
		case isByte:
			types[i] = Byte
		default:
			types[i] = Normal
		}
	}
	t, err := New(Vocab{Pieces: v.Pieces, Scores: v.Scores, Types: types, BOS: 1, EOS: 2, UNK: 0, AddBOS: true, AddSpacePrefix: true})
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

// FromGGUF builds the tokenizer described by a GGUF file's tokenizer.ggml.*
// metadata: model "llama" (SentencePiece) or "gpt2" (byte-level BPE with
// merges and the pre-tokenizer named by tokenizer.ggml.pre; "default"
// when the key is missing, as llama.cpp does).
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	t, err := fromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

func fromGGUF(f *gguf.File) (*Tokenizer, error) {
	model, err := f.GetString("tokenizer.ggml.model")
	if err != nil {
		return nil, err
	}
	if model != "llama" && model != "gpt2" {
		return nil, fmt.Errorf("gguf: %s: tokenizer.ggml.model is %q; supported: \"llama\" (SentencePiece), \"gpt2\" (byte-level BPE)", f.Name, model)
	}
	tokens, err := f.GetStrings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	v := Vocab{Pieces: tokens, BOS: -1, EOS: -1, UNK: -1}
	if model == "llama" {
		// Without the id keys, SentencePiece's defaults: <unk> 0, BOS 1, EOS 2.
		v.AddSpacePrefix = true
		for id, dst := range []*int{&v.UNK, &v.BOS, &v.EOS} {
			if id < len(tokens) {
				*dst = id
			}
		}
		v.AddBOS = v.BOS >= 0
		v.Pieces = make([]string, len(tokens))
		for i, p := range tokens {
			v.Pieces[i] = strings.ReplaceAll(p, "▁", " ")
		}
	} else {
		// Byte-level BPE has no default ids; whether BOS is added by
		// default depends on the pre-tokenizer (Llama 3's adds it).
		v.Pre = "default"
		if _, ok := f.Lookup("tokenizer.ggml.pre"); ok {
			if v.Pre, err = f.GetString("tokenizer.ggml.pre"); err != nil {
				return nil, err
			}
		}
		pre, ok := preTokenizers[v.Pre]
		if !ok {
			return nil, fmt.Errorf("gguf: %s: tokenizer.ggml.pre is %q, a pre-tokenizer tgc does not know; supported: %s", f.Name, v.Pre, strings.Join(PreTokenizers(), ", "))
		}
		v.AddBOS = pre.addBOS
		if v.Merges, err = f.GetStrings("tokenizer.ggml.merges"); err != nil {
			return nil, err
		}
	}
	if _, ok := f.Lookup("tokenizer.ggml.scores"); ok {
		if v.Scores, err = f.GetFloat32s("tokenizer.ggml.scores"); err != nil {
			return nil, err
		}
		if len(v.Scores) != len(tokens) {
			return nil, fmt.Errorf("gguf: %s: tokenizer.ggml.scores has %d entries for %d tokens", f.Name, len(v.Scores), len(tokens))
		}
	}
	if _, ok := f.Lookup("tokenizer.ggml.token_type"); ok {
		types, err := f.GetInts("tokenizer.ggml.token_type")
		if err != nil {
			return nil, err
		}
		if len(types) != len(tokens) {
			return nil, fmt.Errorf("gguf: %s: tokenizer.ggml.token_type has %d entries for %d tokens", f.Name, len(types), len(tokens))
		}
		v.Types = make([]TokenType, len(types))
		for i, x := range types {
			if x < int64(Normal) || x > int64(Byte) {
				return nil, fmt.Errorf("gguf: %s: tokenizer.ggml.token_type[%d] is %d, not 1..6", f.Name, i, x)
			}
			v.Types[i] = TokenType(x)
		}
	}
	for _, id := range []struct {
		key string
		dst *int
	}{{"tokenizer.ggml.bos_token_id", &v.BOS}, {"tokenizer.ggml.eos_token_id", &v.EOS}, {"tokenizer.ggml.unknown_token_id", &v.UNK}} {
		if _, ok := f.Lookup(id.key); !ok {
			continue
		}
		n, err := f.GetInt(id.key)
		if err != nil {
			return nil, err
		}
		if n < 0 || n >= int64(len(tokens)) {
			return nil, fmt.Errorf("gguf: %s: %s is %d, outside the vocabulary of %d", f.Name, id.key, n, len(tokens))
		}
		*id.dst = int(n)
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"tokenizer.ggml.add_bos_token", &v.AddBOS}, {"tokenizer.ggml.add_eos_token", &v.AddEOS}, {"tokenizer.ggml.add_space_prefix", &v.AddSpacePrefix}} {
		if _, ok := f.Lookup(b.key); !ok || model == "gpt2" && b.dst == &v.AddSpacePrefix {
			continue
		}
		if *b.dst, err = f.GetBool(b.key); err != nil {
			return nil, err
		}
	}
	t, err := New(v)
	var merr *MergeError
	switch {
	case errors.As(err, &merr):
		return nil, fmt.Errorf("gguf: %s: tokenizer.ggml.%w", f.Name, merr)
	case err != nil:
		return nil, fmt.Errorf("gguf: %s: %w", f.Name, err)
	}
	return t, nil
}
