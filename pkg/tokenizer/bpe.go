package tokenizer

import (
	"fmt"
	"strings"
)

// Byte-level BPE (GPT-2's, which GGUF calls tokenizer.ggml.model "gpt2"):
// text is cut into words by a pre-tokenizer, each byte of a word becomes
// the token of its character in GPT-2's byte alphabet, then the adjacent
// pair with the lowest merge rank is merged (the leftmost on ties) until no
// pair has a merge. Tokens are spelled in the byte alphabet, so decoding
// maps each character of a token back to its byte.

// byteAlphabet is GPT-2's bytes_to_unicode: the printable bytes '!'..'~',
// '¡'..'¬' and '®'..'ÿ' stand for themselves, and the other 68 bytes, in
// increasing order, for U+0100, U+0101, ... (so ' ' is 'Ġ' U+0120 and '\n'
// is 'Ċ' U+010A). Every character of the alphabet is below U+0144.
func byteAlphabet() (toRune [256]rune) {
	next := rune(256)
	for b := range 256 {
		if '!' <= b && b <= '~' || '¡' <= b && b <= '¬' || '®' <= b && b <= 'ÿ' {
			toRune[b] = rune(b)
		} else {
			toRune[b] = next
			next++
		}
	}
	return toRune
}

// MergeError is a merge that is malformed or names a piece that is not in
// the vocabulary.
type MergeError struct {
	Index  int    // rank: position in the list of merges
	Merge  string // as given, "left right"
	Reason string
}

func (e *MergeError) Error() string {
	return fmt.Sprintf("merges[%d] %q: %s", e.Index, e.Merge, e.Reason)
}

// bpeModel is the byte-level part of a Tokenizer.
type bpeModel struct {
	pre          preTokenizer
	ignoreMerges bool
	alphabet     [256]rune
	bytes        [256 + 68]int16    // the byte of each character of the alphabet, or -1
	byteTok      [256]int32         // the token of each byte's character, or UNK
	merges       map[[2]int32]merge // by the ids of the left and right pieces
	decoded      []string           // the bytes each token stands for
}

// merge is what a pair of tokens merges into, and its rank (lower first).
type merge struct {
	rank, id int32
}

// newBPE finishes New for a vocabulary with merges. t.ids already maps the
// encodable pieces (normal and user-defined) to their ids.
func newBPE(t *Tokenizer) (*Tokenizer, error) {
	v := t.v
	stages, ok := preTokenizers[v.Pre]
	if !ok {
		return nil, fmt.Errorf("unknown pre-tokenizer %q; supported: %s", v.Pre, strings.Join(PreTokenizers(), ", "))
	}
	if v.AddSpacePrefix {
		return nil, fmt.Errorf("a space prefix is not used with byte-level BPE")
	}
	m := &bpeModel{pre: stages.stages, ignoreMerges: stages.ignoreMerges, alphabet: byteAlphabet(),
		merges: make(map[[2]int32]merge, len(v.Merges)), decoded: make([]string, len(v.Pieces))}
	for i := range m.bytes {
		m.bytes[i] = -1
	}
	for b, r := range m.alphabet {
		m.bytes[r] = int16(b)
	}
	// Encoding reaches only normal tokens, whose text decodes byte by byte;
	// other types decode as themselves (user-defined, unknown) or as nothing.
	t.ids = make(map[string]int32, len(v.Pieces))
	for id, p := range v.Pieces {
		switch v.Types[id] {
		case Normal, Byte: // GPT-2 vocabularies have no <0xXX> tokens: a byte type is normal text
			if _, dup := t.ids[p]; !dup {
				t.ids[p] = int32(id)
			}
			m.decoded[id] = m.decode(p)
		case UserDefined, Unknown:
			m.decoded[id] = p
		case Control, Unused:
		default:
			return nil, fmt.Errorf("token %d has type %d, which byte-level BPE does not use", id, v.Types[id])
		}
	}
	for b, r := range m.alphabet {
		id, ok := t.ids[string(r)]
		if !ok {
			if v.UNK < 0 {
				return nil, fmt.Errorf("no token for byte %#02x (%q) and no unknown token: some text could not be encoded", b, r)
			}
			id = -1 // UNK, which never merges
		}
		m.byteTok[b] = id
	}
	all := make(map[string]int32, len(v.Pieces)) // merges may name any piece
	for id, p := range v.Pieces {
		if _, dup := all[p]; !dup {
			all[p] = int32(id)
		}
	}
	for rank, s := range v.Merges {
		bad := func(format string, a ...any) error {
			return &MergeError{Index: rank, Merge: s, Reason: fmt.Sprintf(format, a...)}
		}
		// As llama.cpp reads them: the separator is the first space after
		// the first byte.
		k := -1
		if len(s) > 1 {
			if j := strings.IndexByte(s[1:], ' '); j >= 0 {
				k = 1 + j
			}
		}
		if k < 0 || k == len(s)-1 {
			return nil, bad("not two pieces separated by a space")
		}
		left, right := s[:k], s[k+1:]
		l, lok := all[left]
		r, rok := all[right]
		switch {
		case !lok:
			return nil, bad("%q is not a token", left)
		case !rok:
			return nil, bad("%q is not a token", right)
		}
		id, ok := t.ids[left+right]
		if !ok {
			if _, any := all[left+right]; !any {
				return nil, bad("the merged %q is not a token", left+right)
			}
			continue // a merge into a control or user-defined token is never applied
		}
		key := [2]int32{l, r}
		if _, dup := m.merges[key]; !dup { // the first (lowest rank) wins
			m.merges[key] = merge{int32(rank), id}
		}
	}
	t.bpe = m
	return t, nil
}

// decode maps the characters of a piece back to their bytes; a character
// outside the byte alphabet stays as it is.
func (m *bpeModel) decode(p string) string {
	var sb strings.Builder
	for _, r := range p {
		if b, ok := m.byteOf(r); ok {
			sb.WriteByte(b)
		} else {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// byteOf inverts the byte alphabet.
func (m *bpeModel) byteOf(r rune) (byte, bool) {
	if r < 0 || int(r) >= len(m.bytes) || m.bytes[r] < 0 {
		return 0, false
	}
	return byte(m.bytes[r]), true
}

// encode appends the tokens of text.
func (t *Tokenizer) encodeBPE(text string, out []int) []int {
	m := t.bpe
	var syms []symbol
	m.pre.split(text, func(word string) {
		if m.ignoreMerges {
			if id, ok := t.ids[m.spell(word)]; ok {
				out = append(out, int(id))
				return
			}
		}
		syms = syms[:0]
		for i := range len(word) {
			id, ok := m.byteTok[word[i]], true
			if id < 0 {
				id, ok = int32(t.v.UNK), false
			}
			syms = append(syms, symbol{start: i, end: i + 1, id: id, prev: i - 1, next: i + 1, alive: true, mergeable: ok})
		}
		syms[len(syms)-1].next = -1
		mergeSymbols(syms, func(a, b *symbol) (float64, int32, bool) {
			mg, ok := m.merges[[2]int32{a.id, b.id}]
			return -float64(mg.rank), mg.id, ok // the lowest rank first
		})
		for _, s := range syms {
			if s.alive {
				out = append(out, int(s.id))
			}
		}
	})
	return out
}

// spell writes text in the byte alphabet, as tokens are spelled.
func (m *bpeModel) spell(text string) string {
	var sb strings.Builder
	sb.Grow(2 * len(text))
	for i := range len(text) {
		sb.WriteRune(m.alphabet[text[i]])
	}
	return sb.String()
}

// pieceBPE is Piece for byte-level BPE: the bytes a token stands for.
func (t *Tokenizer) pieceBPE(id int) string { return t.bpe.decoded[id] }
