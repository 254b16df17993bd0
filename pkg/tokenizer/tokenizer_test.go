package tokenizer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"tgc/pkg/gguf"
	"tgc/pkg/llama2c"
	"tgc/pkg/testmodels"
)

func llamaVocab(t testing.TB) *llama2c.Vocab {
	t.Helper()
	v, err := llama2c.ReadTokenizer(testmodels.Path(t, "tokenizer.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestExpectedEncodings compares with the ids llama2.c's encode gave for
// shared/models/tokenizer.bin, and decodes them back.
func TestExpectedEncodings(t *testing.T) {
	tok, err := FromLlama2c(llamaVocab(t))
	if err != nil {
		t.Fatal(err)
	}
	exp := testmodels.LoadExpected(t).Tokenizer.Encodings
	for text, want := range exp {
		got := tok.Encode(text, true, false)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
		back, err := tok.Decode(got)
		if err != nil || back != text {
			t.Errorf("Decode(Encode(%q)) = %q, %v", text, back, err)
		}
	}
}

// naiveEncode is llama2.c's encode written as plainly as run.c has it:
// rescan every adjacent pair after each merge. The heap in merge must make
// the same choices.
func naiveEncode(tk *Tokenizer, text string) []int {
	if text != "" && tk.v.AddSpacePrefix {
		text = " " + text
	}
	type tok struct {
		id        int
		text      string
		mergeable bool
	}
	var toks []tok
	for _, s := range tk.symbols(text) {
		toks = append(toks, tok{int(s.id), text[s.start:s.end], s.mergeable})
	}
	for {
		best, bestScore, bestID := -1, float32(-1e30), 0
		for i := 0; i+1 < len(toks); i++ {
			if !toks[i].mergeable || !toks[i+1].mergeable {
				continue
			}
			if id, ok := tk.ids[toks[i].text+toks[i+1].text]; ok && tk.v.Scores[id] > bestScore {
				best, bestScore, bestID = i, tk.v.Scores[id], int(id)
			}
		}
		if best < 0 {
			break
		}
		toks[best] = tok{bestID, toks[best].text + toks[best+1].text, true}
		toks = append(toks[:best+1], toks[best+2:]...)
	}
	out := []int{}
	for _, x := range toks {
		out = append(out, x.id)
	}
	return out
}

// synthetic is a small vocabulary with byte fallback, equal scores (ties)
// and merges that compete.
func synthetic() *Tokenizer {
	pieces := []string{"<unk>", "<s>", "</s>"}
	types := []TokenType{Unknown, Control, Control}
	for b := range 256 {
		pieces = append(pieces, fmt.Sprintf("<0x%02X>", b))
		types = append(types, Byte)
	}
	scores := make([]float32, len(pieces))
	for i, p := range []string{" ", "a", "b", "c", "é", "ab", "bc", "abc", " a", " ab", "aa", "aaa", "ca", "é ", "<s>x", "<", "s", ">", "<s"} {
		pieces = append(pieces, p)
		types = append(types, Normal)
		scores = append(scores, float32(-(i % 4)))
	}
	tk, err := New(Vocab{Pieces: pieces, Scores: scores, Types: types, BOS: 1, EOS: 2, UNK: 0, AddBOS: true, AddSpacePrefix: true})
	if err != nil {
		panic(err)
	}
	return tk
}

func TestHeapMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	alphabet := []string{"a", "b", "c", " ", "é", "日", "\xff", "\x80", "<", "s", ">", "\n"}
	for _, tk := range []*Tokenizer{synthetic()} {
		for range 3000 {
			var sb strings.Builder
			for range rng.IntN(24) {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			s := sb.String()
			got := tk.Encode(s, false, false)
			if want := naiveEncode(tk, s); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("Encode(%q) = %v, the naive scan gives %v", s, got, want)
			}
			if back, err := tk.Decode(got); err != nil || back != s {
				t.Fatalf("Decode(Encode(%q)) = %q, %v", s, back, err)
			}
		}
	}
}

func TestHeapMatchesNaiveLlama(t *testing.T) {
	tk, err := FromLlama2c(llamaVocab(t))
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"The quick brown fox jumps over the lazy dog; naïve café, 日本語のテキスト, emoji 🦙🦙!",
		"    indented\tcode() { return x->y[2] * 3.14159; }\n\n",
		"\xff\xfe invalid \xc3 utf8 \xe6\x97",
		strings.Repeat("Once upon a time, there was a little girl named Lily. ", 4),
	}
	for _, s := range texts {
		got := tk.Encode(s, true, true)
		want := append(append([]int{1}, naiveEncode(tk, s)...), 2)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Encode(%q) = %v, the naive scan gives %v", s, got, want)
		}
		if back, err := tk.Decode(got); err != nil || back != s {
			t.Errorf("Decode(Encode(%q)) = %q, %v", s, back, err)
		}
	}
}

func TestDecodeRules(t *testing.T) {
	tk, err := FromLlama2c(llamaVocab(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prev, id int
		want     string
	}{
		{1, 9038, "Once"},    // " Once" after BOS loses its space
		{263, 9038, " Once"}, // not after BOS
		{-1, 9038, " Once"},
		{5, 13, "\n"},  // <0x0A>
		{5, 3, "\x00"}, // <0x00>
		{5, 1, ""},     // BOS is a control token
		{5, 2, ""},     // EOS
		{5, 0, "<unk>"},
	} {
		if got, err := tk.Piece(tc.prev, tc.id); err != nil || got != tc.want {
			t.Errorf("Piece(%d, %d) = %q, %v; want %q", tc.prev, tc.id, got, err, tc.want)
		}
	}
	if _, err := tk.Piece(1, 32000); err == nil || !strings.Contains(err.Error(), "token id 32000 is outside the vocabulary of 32000") {
		t.Errorf("Piece(32000): %v", err)
	}
	// A character split into byte tokens decodes back to its bytes.
	ids := tk.Encode("🦙", false, false)
	if s, _ := tk.Decode(ids); s != "🦙" || len(ids) != 5 {
		t.Errorf("🦙 = %v, decoded %q", ids, s)
	}
}

// ggufVocab writes tokenizer.bin's vocabulary as GGUF metadata, as llama.cpp's
// converter does: '▁' for spaces, token types, BOS/EOS/UNK ids.
func ggufVocab(v *llama2c.Vocab, model string) []gguf.KV {
	toks := make([]string, len(v.Pieces))
	types := make([]int32, len(v.Pieces))
	for i, p := range v.Pieces {
		switch _, isByte := byteOf(p); {
		case i == 0:
			types[i] = int32(Unknown)
		case i <= 2:
			types[i] = int32(Control)
			p = map[int]string{1: "<s>", 2: "</s>"}[i]
		case isByte:
			types[i] = int32(Byte)
		default:
			types[i] = int32(Normal)
		}
		toks[i] = strings.ReplaceAll(p, " ", "▁")
	}
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.String(model)},
		{Key: "tokenizer.ggml.tokens", Value: gguf.ArrayOf(toks)},
		{Key: "tokenizer.ggml.scores", Value: gguf.ArrayOf(v.Scores)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.ArrayOf(types)},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Uint32(2)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: gguf.Uint32(0)},
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Bool(true)},
	}
}

// ggufBytes is a GGUF file of metadata md and no tensors.
func ggufBytes(tb testing.TB, md []gguf.KV) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := gguf.Write(&buf, 3, md, nil); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func parseGGUF(t *testing.T, md []gguf.KV) *gguf.File {
	t.Helper()
	f, err := gguf.Parse("vocab.gguf", ggufBytes(t, md))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFromGGUF(t *testing.T) {
	v := llamaVocab(t)
	tk, err := FromGGUF(parseGGUF(t, ggufVocab(v, "llama")))
	if err != nil {
		t.Fatal(err)
	}
	if !tk.AddBOS() || tk.BOS() != 1 || tk.EOS() != 2 || tk.Len() != 32000 {
		t.Errorf("add_bos %v, BOS %d, EOS %d, %d tokens", tk.AddBOS(), tk.BOS(), tk.EOS(), tk.Len())
	}
	for text, want := range testmodels.LoadExpected(t).Tokenizer.Encodings {
		got := tk.Encode(text, true, false)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
		if back, _ := tk.Decode(got); back != text {
			t.Errorf("Decode(Encode(%q)) = %q", text, back)
		}
	}
	// The literal text "<s>" is not BOS.
	if ids := tk.Encode("<s>", false, false); len(ids) < 2 || ids[1] == 1 {
		t.Errorf(`Encode("<s>") = %v`, ids)
	}
}

func TestFromGGUFErrors(t *testing.T) {
	v := &llama2c.Vocab{Pieces: []string{"<unk>", "\n<s>\n", "\n</s>\n", "a"}, Scores: []float32{0, 0, 0, 0}}
	with := func(edit func([]gguf.KV) []gguf.KV) []gguf.KV { return edit(ggufVocab(v, "llama")) }
	set := func(key string, val gguf.Value) func([]gguf.KV) []gguf.KV {
		return func(md []gguf.KV) []gguf.KV {
			for i := range md {
				if md[i].Key == key {
					md[i].Value = val
					return md
				}
			}
			return append(md, gguf.KV{Key: key, Value: val})
		}
	}
	for _, tc := range []struct {
		md   []gguf.KV
		want string
	}{
		{ggufVocab(v, "bert"), `tokenizer.ggml.model is "bert"; supported: "llama" (SentencePiece), "gpt2" (byte-level BPE)`},
		{with(set("tokenizer.ggml.scores", gguf.ArrayOf([]float32{1}))), "tokenizer.ggml.scores has 1 entries for 4 tokens"},
		{with(set("tokenizer.ggml.token_type", gguf.ArrayOf([]int32{1, 3, 3, 9}))), "tokenizer.ggml.token_type[3] is 9"},
		{with(set("tokenizer.ggml.bos_token_id", gguf.Uint32(4))), "tokenizer.ggml.bos_token_id is 4, outside the vocabulary of 4"},
		{with(set("tokenizer.ggml.tokens", gguf.ArrayOf([]float32{1}))), `"tokenizer.ggml.tokens": has type array of float32, want array of string`},
		{with(set("tokenizer.ggml.token_type", gguf.ArrayOf([]int32{2, 3, 3, 6}))), `token 3 has type byte, but its piece "a" is not <0xXX>`},
		{with(set("tokenizer.ggml.unknown_token_id", gguf.String("0"))), `"tokenizer.ggml.unknown_token_id": has type string, want an integer`},
	} {
		_, err := FromGGUF(parseGGUF(t, tc.md))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "vocab.gguf") {
			t.Errorf("%v, want %q naming vocab.gguf", err, tc.want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		v    Vocab
		want string
	}{
		{Vocab{}, "empty vocabulary"},
		{Vocab{Pieces: []string{"a"}, BOS: -1, EOS: -1, UNK: -1}, "no unknown token and no byte token for byte 0x00"},
		{Vocab{Pieces: []string{"a"}, BOS: -1, EOS: -1, UNK: 0, AddBOS: true}, "add_bos is set but there is no BOS token"},
		{Vocab{Pieces: []string{"a"}, Scores: []float32{1, 2}, BOS: -1, EOS: -1, UNK: 0}, "1 pieces, 2 scores"},
	} {
		if _, err := New(tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want %q", err, tc.want)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	tk, err := FromLlama2c(llamaVocab(b))
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside. ", 50)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tk.Encode(text, true, false)
	}
}
