package tokenizer

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"tgc/pkg/gguf"
)

// pythonBytesToUnicode is GPT-2's bytes_to_unicode transcribed as its
// encoder.py writes it: the list bs of printable bytes, then every other
// byte appended with the next code point from 256 on.
func pythonBytesToUnicode() map[byte]rune {
	var bs []int
	for c := '!'; c <= '~'; c++ {
		bs = append(bs, int(c))
	}
	for c := '¡'; c <= '¬'; c++ {
		bs = append(bs, int(c))
	}
	for c := '®'; c <= 'ÿ'; c++ {
		bs = append(bs, int(c))
	}
	cs := slices.Clone(bs)
	n := 0
	for b := range 256 {
		if !slices.Contains(bs, b) {
			bs = append(bs, b)
			cs = append(cs, 256+n)
			n++
		}
	}
	m := map[byte]rune{}
	for i := range bs {
		m[byte(bs[i])] = rune(cs[i])
	}
	return m
}

func TestByteAlphabet(t *testing.T) {
	got := byteAlphabet()
	want := pythonBytesToUnicode()
	if len(want) != 256 {
		t.Fatalf("reference has %d bytes", len(want))
	}
	seen := map[rune]bool{}
	for b := range 256 {
		if got[b] != want[byte(b)] {
			t.Errorf("byte %#02x -> %U, bytes_to_unicode gives %U", b, got[b], want[byte(b)])
		}
		if seen[got[b]] {
			t.Errorf("%U stands for two bytes", got[b])
		}
		seen[got[b]] = true
	}
	// Values known from GPT-2's vocabulary: "Ġ" is a space, "Ċ" a newline.
	for _, c := range []struct {
		b byte
		r rune
	}{{' ', 'Ġ'}, {'\n', 'Ċ'}, {0, 'Ā'}, {'!', '!'}, {'A', 'A'}, {0x7F, 'ġ'}, {0xA0, 'ł'}, {0xAD, 'Ń'}, {0xE9, 'é'}, {0xFF, 'ÿ'}} {
		if got[c.b] != c.r {
			t.Errorf("byte %#02x -> %q, want %q", c.b, got[c.b], c.r)
		}
	}
	m := &bpeModel{alphabet: got}
	for i := range m.bytes {
		m.bytes[i] = -1
	}
	for b, r := range got {
		m.bytes[r] = int16(b)
	}
	var all []byte
	for b := range 256 {
		all = append(all, byte(b))
	}
	if back := m.decode(m.spell(string(all))); back != string(all) {
		t.Errorf("decode(spell(all bytes)) = %q", back)
	}
}

// splitWords runs a named pre-tokenizer.
func splitWords(t testing.TB, name, s string) []string {
	t.Helper()
	p, ok := preTokenizers[name]
	if !ok {
		t.Fatalf("no pre-tokenizer %q", name)
	}
	var words []string
	preTokenizer(p.stages).split(s, func(w string) { words = append(words, w) })
	return words
}

// TestPreTokenizers pins the splits on tricky strings. Python's regex
// module is not installed here, so each expectation is derived by hand
// from the expression, as the comments explain.
func TestPreTokenizers(t *testing.T) {
	for _, tc := range []struct {
		pre, text string
		want      []string
		why       string
	}{
		// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
		{"gpt-2", "Hello world", []string{"Hello", " world"}, "a space joins the letters after it"},
		{"gpt-2", "I'm you'll he's they're we've I'd don't", []string{"I", "'m", " you", "'ll", " he", "'s", " they", "'re", " we", "'ve", " I", "'d", " don", "'t"},
			"each contraction is tried first at its apostrophe"},
		{"gpt-2", "'S", []string{"'", "S"}, "contractions are case-sensitive: the apostrophe is an \"other\" run that stops at the letter"},
		{"gpt-2", "'sa", []string{"'s", "a"}, "the contraction wins even inside a word"},
		{"gpt-2", "x 's", []string{"x", " '", "s"}, "the space cannot start a contraction; ' ?[^\\s\\p{L}\\p{N}]+' takes it with the apostrophe"},
		{"gpt-2", "a  b", []string{"a", " ", " b"}, "\\s+(?!\\S) backs off one space, which then starts ' b'"},
		{"gpt-2", "a   b", []string{"a", "  ", " b"}, "the same with three spaces"},
		{"gpt-2", "a\n\nb", []string{"a", "\n", "\n", "b"}, "the run backs off to one newline; the last one alone is followed by b, so only \\s+ takes it"},
		{"gpt-2", "x \ny", []string{"x", " ", "\n", "y"}, "' ?' is a space only, never a newline"},
		{"gpt-2", "a\tb", []string{"a", "\t", "b"}, "a tab does not join the word after it"},
		{"gpt-2", "end  ", []string{"end", "  "}, "whitespace at the end is one run"},
		{"gpt-2", "abc123 4.5 1,000", []string{"abc", "123", " 4", ".", "5", " 1", ",", "000"}, "letters and numbers are separate runs; punctuation is a third"},
		{"gpt-2", "x² ¼", []string{"x", "²", " ¼"}, "\\p{N} includes No: superscripts and fractions"},
		{"gpt-2", "naïve café 日本語", []string{"naïve", " café", " 日本語"}, "\\p{L} is every script's letters"},
		{"gpt-2", "hi!!! ...ok", []string{"hi", "!!!", " ...", "ok"}, "\"other\" runs take one leading space"},
		{"gpt-2", "🦙🦙 ok", []string{"🦙🦙", " ok"}, "emoji are symbols: an \"other\" run"},
		{"gpt-2", "a\u00a0b", []string{"a", "\u00a0", "b"}, "a no-break space is \\s but not the ' ' of ' ?'"},
		{"gpt-2", "\xffab\xfe", []string{"\xff", "ab", "\xfe"}, "a byte that is not UTF-8 is one \"other\" character"},
		{"gpt2", "it's", []string{"it", "'s"}, "gpt2 is a name for the same expression"},
		// Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
		//           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
		{"llama-bpe", "I'M fine", []string{"I", "'M", " fine"}, "contractions ignore case"},
		{"llama-bpe", "12345 x", []string{"123", "45", " x"}, "numbers go in threes; ' x' is a letter run with one leading character"},
		{"llama-bpe", "(hello) 'x", []string{"(hello", ")", " '", "x"}, "one non-letter, non-number character joins the letters after it; ' 'x' is a space and an apostrophe before a letter"},
		{"llama-bpe", "a\n\n  b", []string{"a", "\n\n", " ", " b"}, "\\s*[\\r\\n]+ ends at the run's last newline"},
		{"llama-bpe", "hi!!\n\nx", []string{"hi", "!!\n\n", "x"}, "punctuation takes the newlines after it"},
		{"llama-bpe", "\tword", []string{"\tword"}, "a tab is a character that may lead a word"},
		{"llama3", "x 1", []string{"x", " ", "1"}, "a space does not join a number"},
		// llama.cpp's default: [\p{P}\$\+<=>\^~\|]+, then GPT-2's, then \p{N}+, then [0-9][0-9][0-9].
		{"default", "Hello, world! 12345", []string{"Hello", ",", " world", "!", " ", "123", "45"},
			"punctuation is cut out first, then \\p{N}+ cuts ' 12345' from its space, then threes of digits"},
		{"default", "a+b $x", []string{"a", "+", "b", " ", "$", "x"}, "the first expression also takes $ + < = > ^ ~ |"},
		// SmolLM: \p{N}, then GPT-2's.
		{"smollm", "abc123 x", []string{"abc", "1", "2", "3", " x"}, "each digit alone"},
	} {
		if got := splitWords(t, tc.pre, tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %q: %q, want %q (%s)", tc.pre, tc.text, got, tc.want, tc.why)
		}
	}
}

// tinyMerges are the merges of tinyBPE, in rank order. Each result is a
// token of its own (ids 256 on, in this order).
var tinyMerges = []string{
	"Ġ t",     // 0 -> 256 Ġt
	"h e",     // 1 -> 257 he
	"Ġt he",   // 2 -> 258 Ġthe
	"e r",     // 3 -> 259 er
	"l o",     // 4 -> 260 lo
	"lo w",    // 5 -> 261 low
	"Ġ low",   // 6 -> 262 Ġlow
	"e s",     // 7 -> 263 es
	"es t",    // 8 -> 264 est
	"low est", // 9 -> 265 lowest
	"1 2",     // 10 -> 266 12
	"a a",     // 11 -> 267 aa
	"' s",     // 12 -> 268 's
	"Ċ Ċ",     // 13 -> 269 ĊĊ (two newlines)
	"ð Ł",     // 14 -> 270 ðŁ (bytes F0 9F, how 🦙 starts)
}

const tinyEOT = 271 // <|endoftext|>, a control token

// tinyVocab spells a byte-level vocabulary with the reference alphabet:
// id b is byte b, then the merges' results, then <|endoftext|>.
func tinyVocab() (tokens []string, types []int32) {
	ref := pythonBytesToUnicode()
	for b := range 256 {
		tokens = append(tokens, string(ref[byte(b)]))
		types = append(types, int32(Normal))
	}
	for _, m := range tinyMerges {
		tokens = append(tokens, strings.Replace(m, " ", "", 1))
		types = append(types, int32(Normal))
	}
	return append(tokens, "<|endoftext|>"), append(types, int32(Control))
}

// tinyGGUF is the GGUF metadata of tinyVocab, as llama.cpp's converter
// writes a gpt2 tokenizer.
func tinyGGUF(pre string) []gguf.KV {
	tokens, types := tinyVocab()
	md := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.String("gpt2")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.ArrayOf(tokens)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.ArrayOf(types)},
		{Key: "tokenizer.ggml.merges", Value: gguf.ArrayOf(tinyMerges)},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Uint32(tinyEOT)},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Uint32(tinyEOT)},
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Bool(false)},
	}
	if pre != "" {
		md = append(md, gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.String(pre)})
	}
	return md
}

func tinyBPE(t testing.TB, pre string) *Tokenizer {
	t.Helper()
	tokens, types := tinyVocab()
	tt := make([]TokenType, len(types))
	for i, x := range types {
		tt[i] = TokenType(x)
	}
	tk, err := New(Vocab{Pieces: tokens, Types: tt, BOS: tinyEOT, EOS: tinyEOT, UNK: -1, Merges: tinyMerges, Pre: pre})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// tinyEncodings are followed by hand through tinyMerges (ranks in
// brackets); the GPT-2 split comes first.
var tinyEncodings = []struct {
	text string
	want []int
	why  string
}{
	{"the lowest lower", []int{'t', 257, 262, 264, 262, 259},
		`"the": h e[1] -> he; no "t he" merge. " lowest": l o[4], lo w[5], Ġ low[6], e s[7], es t[8]: Ġlow est, as "low est"[9] needs "low" alone. ` +
			`" lower": e r[3] comes before l o[4]: Ġlow er`},
	{" the", []int{258}, `Ġ t[0], h e[1], Ġt he[2]`},
	{"lowest", []int{265}, `lo, low, es, est, then low est[9]`},
	{"aaa", []int{267, 'a'}, `a a[11] ties; the leftmost pair merges first`},
	{"aaaa", []int{267, 267}, `the leftmost pair, then the remaining pair`},
	{"it's", []int{'i', 't', 268}, `the split gives "it" and "'s"; ' s[12]`},
	{"a\n\n\nb", []int{'a', 269, '\n', 'b'}, `the split gives "\n\n" and "\n"; Ċ Ċ[13]`},
	{"🦙", []int{270, 0xA6, 0x99}, `bytes F0 9F A6 99: ð Ł[14], the others stay bytes`},
	{" 123", []int{' ', 266, '3'}, `one word " 123": 1 2[10]`},
	{"", nil, ""},
}

func TestBPEEncode(t *testing.T) {
	tk := tinyBPE(t, "gpt-2")
	for _, tc := range tinyEncodings {
		got := tk.Encode(tc.text, false, false)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v (%s)", tc.text, got, tc.want, tc.why)
		}
		if want := naiveBPE(tk, tc.text); !reflect.DeepEqual(got, want) {
			t.Errorf("Encode(%q) = %v, GPT-2's loop gives %v", tc.text, got, want)
		}
		if back, err := tk.Decode(got); err != nil || back != tc.text {
			t.Errorf("Decode(%v) = %q, %v; want %q", got, back, err, tc.text)
		}
	}
	if got := tk.Encode("the", true, true); !reflect.DeepEqual(got, []int{tinyEOT, 't', 257, tinyEOT}) {
		t.Errorf("with BOS and EOS: %v", got)
	}
	for _, c := range []struct {
		id   int
		want string
	}{{258, " the"}, {269, "\n\n"}, {270, "\xf0\x9f"}, {tinyEOT, ""}, {'a', "a"}, {0, "\x00"}} {
		if got, err := tk.Piece(-1, c.id); err != nil || got != c.want {
			t.Errorf("Piece(%d) = %q, %v; want %q", c.id, got, err, c.want)
		}
	}
	if _, err := tk.Piece(-1, 272); err == nil || !strings.Contains(err.Error(), "token id 272 is outside the vocabulary of 272") {
		t.Errorf("Piece(272): %v", err)
	}
	// The literal text of a control token is encoded as text.
	if ids := tk.Encode("<|endoftext|>", false, false); slices.Contains(ids, tinyEOT) {
		t.Errorf("Encode(<|endoftext|>) = %v", ids)
	}
}

// TestBPEIgnoreMerges: Llama 3's pre-tokenizer takes a word that is a
// token as it is, without the merges that would lead elsewhere.
func TestBPEIgnoreMerges(t *testing.T) {
	tokens, types := tinyVocab()
	tt := make([]TokenType, len(types))
	for i, x := range types {
		tt[i] = TokenType(x)
	}
	// "lower" as a token, with no merge that makes it: only a whole word
	// reaches it.
	tokens = append(tokens, "lower")
	tt = append(tt, Normal)
	for _, c := range []struct {
		pre  string
		want []int
	}{{"llama-bpe", []int{272}}, {"gpt-2", []int{261, 259}}} {
		tk, err := New(Vocab{Pieces: tokens, Types: tt, BOS: -1, EOS: -1, UNK: -1, Merges: tinyMerges, Pre: c.pre})
		if err != nil {
			t.Fatal(err)
		}
		if got := tk.Encode("lower", false, false); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Encode(lower) = %v, want %v", c.pre, got, c.want)
		}
	}
}

// naiveBPE is GPT-2's encoder.py loop per word: find the adjacent pair of
// lowest rank, merge every occurrence of it left to right, repeat.
func naiveBPE(tk *Tokenizer, text string) []int {
	rank := map[[2]string]int{}
	for i, m := range tk.v.Merges {
		l, r, _ := strings.Cut(m, " ")
		if _, dup := rank[[2]string{l, r}]; !dup {
			rank[[2]string{l, r}] = i
		}
	}
	ref := pythonBytesToUnicode()
	var out []int
	preTokenizer(preTokenizers[tk.v.Pre].stages).split(text, func(w string) {
		var word []string
		for i := range len(w) {
			word = append(word, string(ref[w[i]]))
		}
		if preTokenizers[tk.v.Pre].ignoreMerges {
			if id, ok := tk.ids[strings.Join(word, "")]; ok {
				out = append(out, int(id))
				return
			}
		}
		for len(word) > 1 {
			best, bestRank := [2]string{}, -1
			for i := 0; i+1 < len(word); i++ {
				if r, ok := rank[[2]string{word[i], word[i+1]}]; ok && (bestRank < 0 || r < bestRank) {
					best, bestRank = [2]string{word[i], word[i+1]}, r
				}
			}
			if bestRank < 0 {
				break
			}
			var next []string
			for i := 0; i < len(word); i++ {
				if i+1 < len(word) && word[i] == best[0] && word[i+1] == best[1] {
					next = append(next, best[0]+best[1])
					i++
				} else {
					next = append(next, word[i])
				}
			}
			word = next
		}
		for _, p := range word {
			out = append(out, int(tk.ids[p]))
		}
	})
	return out
}

// TestFromGGUFBPE loads tinyBPE from a GGUF file written by the tests'
// writer and checks the hand-computed encodings through it.
func TestFromGGUFBPE(t *testing.T) {
	tk, err := FromGGUF(parseGGUF(t, tinyGGUF("gpt-2")))
	if err != nil {
		t.Fatal(err)
	}
	if tk.AddBOS() || tk.BOS() != tinyEOT || tk.EOS() != tinyEOT || tk.Len() != 272 {
		t.Errorf("add_bos %v, BOS %d, EOS %d, %d tokens", tk.AddBOS(), tk.BOS(), tk.EOS(), tk.Len())
	}
	for _, tc := range tinyEncodings {
		if got := tk.Encode(tc.text, tk.AddBOS(), false); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	// Without tokenizer.ggml.pre, llama.cpp's default: "12" is cut in
	// threes of digits, so " 123" is " " and "123" -> Ġ, 12, 3.
	def, err := FromGGUF(parseGGUF(t, tinyGGUF("")))
	if err != nil {
		t.Fatal(err)
	}
	if got := def.Encode("x, 1234", false, false); !reflect.DeepEqual(got, []int{'x', ',', ' ', 266, '3', '4'}) {
		t.Errorf("default pre-tokenizer: %v", got)
	}
	// Llama 3's pre-tokenizer adds BOS unless the file says otherwise.
	md := tinyGGUF("llama-bpe")
	md = slices.DeleteFunc(md, func(kv gguf.KV) bool { return kv.Key == "tokenizer.ggml.add_bos_token" })
	l3, err := FromGGUF(parseGGUF(t, md))
	if err != nil {
		t.Fatal(err)
	}
	if !l3.AddBOS() {
		t.Errorf("llama-bpe: add_bos is off")
	}
}

func TestFromGGUFBPEErrors(t *testing.T) {
	set := func(key string, val gguf.Value) []gguf.KV {
		md := tinyGGUF("gpt-2")
		for i := range md {
			if md[i].Key == key {
				md[i].Value = val
				return md
			}
		}
		return append(md, gguf.KV{Key: key, Value: val})
	}
	merges := func(extra ...string) gguf.Value { return gguf.ArrayOf(append(slices.Clone(tinyMerges), extra...)) }
	tokens, _ := tinyVocab()
	for _, tc := range []struct {
		md   []gguf.KV
		want string
	}{
		{set("tokenizer.ggml.merges", merges("Ġ zz")), `tokenizer.ggml.merges[15] "Ġ zz": "zz" is not a token`},
		{set("tokenizer.ggml.merges", merges("qq Ġ")), `tokenizer.ggml.merges[15] "qq Ġ": "qq" is not a token`},
		{set("tokenizer.ggml.merges", merges("ab")), `tokenizer.ggml.merges[15] "ab": not two pieces separated by a space`},
		{set("tokenizer.ggml.merges", merges("a ")), `tokenizer.ggml.merges[15] "a ": not two pieces separated by a space`},
		{set("tokenizer.ggml.merges", merges("")), `tokenizer.ggml.merges[15] "": not two pieces`},
		{set("tokenizer.ggml.merges", merges("a b")), `tokenizer.ggml.merges[15] "a b": the merged "ab" is not a token`},
		{set("tokenizer.ggml.merges", gguf.ArrayOf([]int32{1})), `"tokenizer.ggml.merges": has type array of int32, want array of string`},
		{slices.DeleteFunc(tinyGGUF("gpt-2"), func(kv gguf.KV) bool { return kv.Key == "tokenizer.ggml.merges" }), `"tokenizer.ggml.merges": missing`},
		{set("tokenizer.ggml.pre", gguf.String("qwen2")), `tokenizer.ggml.pre is "qwen2", a pre-tokenizer tgc does not know; supported: default, gpt-2, gpt2, llama-bpe, llama-v3, llama3, smollm`},
		{set("tokenizer.ggml.pre", gguf.Uint32(1)), `"tokenizer.ggml.pre": has type uint32, want string`},
		{set("tokenizer.ggml.model", gguf.String("bert")), `tokenizer.ggml.model is "bert"; supported: "llama" (SentencePiece), "gpt2" (byte-level BPE)`},
		{set("tokenizer.ggml.tokens", gguf.ArrayOf(append([]string{"x"}, tokens[1:]...))), `no token for byte 0x00 ('Ā') and no unknown token`},
		{set("tokenizer.ggml.token_type", gguf.ArrayOf(make([]int32, 272))), `tokenizer.ggml.token_type[0] is 0, not 1..6`},
		{set("tokenizer.ggml.bos_token_id", gguf.Uint32(272)), `tokenizer.ggml.bos_token_id is 272, outside the vocabulary of 272`},
	} {
		_, err := FromGGUF(parseGGUF(t, tc.md))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "vocab.gguf") {
			t.Errorf("%v, want %q naming vocab.gguf", err, tc.want)
		}
	}
}

func TestNewBPEErrors(t *testing.T) {
	tokens, _ := tinyVocab()
	for _, tc := range []struct {
		v    Vocab
		want string
	}{
		{Vocab{Pieces: tokens, BOS: -1, EOS: -1, UNK: -1, Merges: tinyMerges, Pre: "nope"}, `unknown pre-tokenizer "nope"; supported: default,`},
		{Vocab{Pieces: tokens, BOS: -1, EOS: -1, UNK: -1, Merges: tinyMerges, Pre: "gpt-2", AddSpacePrefix: true}, "space prefix"},
		{Vocab{Pieces: tokens, BOS: -1, EOS: -1, UNK: -1, Merges: []string{"Ġ t", "Ġt"}, Pre: "gpt-2"}, `merges[1] "Ġt": not two pieces`},
	} {
		if _, err := New(tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want %q", err, tc.want)
		}
	}
	// An unknown token stands in for a byte without a token, and never merges.
	tokens2 := slices.Clone(tokens)
	tokens2['a'] = "<unk>"
	tk, err := New(Vocab{Pieces: tokens2, BOS: -1, EOS: -1, UNK: 'a', Merges: tinyMerges[:1], Pre: "gpt-2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("aa t", false, false); !reflect.DeepEqual(got, []int{'a', 'a', 256}) {
		t.Errorf("Encode with UNK = %v", got)
	}
}

// TestBPERoundTrip: any bytes decode back to themselves with every
// pre-tokenizer, and the heap merges as GPT-2's loop does.
func TestBPERoundTrip(t *testing.T) {
	texts := []string{
		"The quick brown fox jumps over the lazy dog; naïve café, 日本語のテキスト, emoji 🦙🦙! 👩‍👩‍👧 🇫🇷",
		"    indented\tcode() { return x->y[2] * 3.14159; }\n\n\r\n  ",
		"\xff\xfe invalid \xc3 utf8 \xe6\x97 '",
		"I'LL WE'VE it's 1234567 ¼ x² 'sss '  '",
	}
	for _, pre := range PreTokenizers() {
		tk := tinyBPE(t, pre)
		for _, s := range texts {
			checkBPE(t, tk, s)
		}
	}
}

func checkBPE(t *testing.T, tk *Tokenizer, s string) {
	t.Helper()
	var words []string
	preTokenizer(preTokenizers[tk.v.Pre].stages).split(s, func(w string) { words = append(words, w) })
	if strings.Join(words, "") != s || slices.Contains(words, "") {
		t.Fatalf("%s: split(%q) = %q", tk.v.Pre, s, words)
	}
	got := tk.Encode(s, true, true)
	back, err := tk.Decode(got)
	if err != nil || back != s {
		t.Fatalf("%s: Decode(Encode(%q)) = %q, %v", tk.v.Pre, s, back, err)
	}
	want := append(append([]int{tinyEOT}, naiveBPE(tk, s)...), tinyEOT)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: Encode(%q) = %v, GPT-2's loop gives %v", tk.v.Pre, s, got, want)
	}
}

// FuzzEncodeBPE: any bytes split into words that cover them, encode
// without panicking, decode back to themselves, and merge as GPT-2's loop
// does, with every pre-tokenizer. Seeds live in testdata/fuzz/FuzzEncodeBPE.
func FuzzEncodeBPE(f *testing.F) {
	f.Add("the lowest lower it's")
	f.Add("a\n\n\nb  \t 🦙 12345 \xff")
	var tks []*Tokenizer
	for _, pre := range PreTokenizers() {
		tks = append(tks, tinyBPE(f, pre))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tk := range tks {
			checkBPE(t, tk, s)
		}
	})
}

func BenchmarkEncodeBPE(b *testing.B) {
	tk := tinyBPE(b, "llama-bpe")
	text := strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside. ", 50)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tk.Encode(text, true, false)
	}
}
