package tokenizer

import (
	"reflect"
	"testing"

	"tgc/pkg/gguf"
)

// FuzzEncode checks on a small vocabulary with byte fallback that any bytes
// encode without panicking, decode back to themselves, and merge as
// llama2.c's plain scan does. Seeds live in testdata/fuzz/FuzzEncode.
func FuzzEncode(f *testing.F) {
	f.Add("abc ab aaa é")
	f.Add("\x80\xff <s>x")
	tk := synthetic()
	f.Fuzz(func(t *testing.T, s string) {
		got := tk.Encode(s, true, true)
		back, err := tk.Decode(got)
		if err != nil || back != s {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", s, back, err)
		}
		want := append(append([]int{1}, naiveEncode(tk, s)...), 2)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Encode(%q) = %v, the naive scan gives %v", s, got, want)
		}
	})
}

// FuzzFromGGUF: a GGUF file's tokenizer metadata, however damaged, is a
// tokenizer or an error (no panic, as `tgc info` and `tgc generate` read
// it from any file), and an accepted one encodes and decodes a text
// without an error from its own pieces: BOS and EOS are ids of its
// vocabulary (or -1). Seeds: a byte-level BPE vocabulary and a small
// SentencePiece one (checked in under testdata/fuzz/FuzzFromGGUF).
func FuzzFromGGUF(f *testing.F) {
	for _, md := range [][]gguf.KV{tinyGGUF("gpt-2"), {
		{Key: "tokenizer.ggml.model", Value: gguf.String("llama")},
		{Key: "tokenizer.ggml.tokens", Value: gguf.ArrayOf([]string{"<unk>", "<s>", "</s>", "▁a", "b", "<0x41>"})},
		{Key: "tokenizer.ggml.scores", Value: gguf.ArrayOf([]float32{0, 0, 0, -1, -2, -3})},
		{Key: "tokenizer.ggml.token_type", Value: gguf.ArrayOf([]int32{2, 3, 3, 1, 1, 6})},
	}} {
		f.Add(ggufBytes(f, md))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := gguf.Parse("fuzz.gguf", b)
		if err != nil {
			return
		}
		tk, err := FromGGUF(file)
		if err != nil {
			return
		}
		for _, id := range []int{tk.BOS(), tk.EOS()} {
			if id < -1 || id >= tk.Len() {
				t.Fatalf("BOS %d, EOS %d of %d tokens", tk.BOS(), tk.EOS(), tk.Len())
			}
		}
		ids := tk.Encode("ab A", tk.BOS() >= 0, false)
		for _, id := range ids {
			if id < 0 || id >= tk.Len() {
				t.Fatalf("Encode gave id %d of %d tokens", id, tk.Len())
			}
		}
		if _, err := tk.Decode(ids); err != nil {
			t.Fatalf("Decode(Encode) = %v", err)
		}
	})
}
