package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tgc/pkg/gguf"
	"tgc/pkg/llama"
	"tgc/pkg/llamatest"
	"tgc/pkg/tokenizer"
)

// TestGenerateBPE: a GGUF model whose own tokenizer is byte-level BPE
// (tokenizer.ggml.model "gpt2", Llama 3's pre-tokenizer, which adds BOS):
// the prompt is encoded with it (its token count is on the final line) and
// the streamed text is the decoding of the prompt and the generated ids.
func TestGenerateBPE(t *testing.T) {
	// The 256 byte characters of GPT-2's alphabet (printable bytes stand for
	// themselves, the others for U+0100 on, in order), three merges and
	// <|end_of_text|>.
	var tokens []string
	next := rune(256)
	for b := range 256 {
		if '!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF {
			tokens = append(tokens, string(rune(b)))
		} else {
			tokens = append(tokens, string(next))
			next++
		}
	}
	merges := []string{"Ġ t", "h e", "Ġt he"}
	tokens = append(tokens, "Ġt", "he", "Ġthe", "<|end_of_text|>")
	types := make([]int32, len(tokens))
	for i := range types {
		types[i] = 1
	}
	types[259] = 3 // control
	cfg := llama.Config{Dim: 32, HiddenDim: 64, Layers: 1, Heads: 2, KVHeads: 1, VocabSize: len(tokens), ContextLength: 32,
		RopeDim: 16, RopeTheta: 10000, NormEps: 1e-5}
	var buf bytes.Buffer
	err := llamatest.WriteGGUF(&buf, cfg, llamatest.RandomWeights(cfg, 5), nil,
		gguf.KV{Key: "tokenizer.ggml.model", Value: gguf.String("gpt2")},
		gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.String("llama-bpe")},
		gguf.KV{Key: "tokenizer.ggml.tokens", Value: gguf.ArrayOf(tokens)},
		gguf.KV{Key: "tokenizer.ggml.token_type", Value: gguf.ArrayOf(types)},
		gguf.KV{Key: "tokenizer.ggml.merges", Value: gguf.ArrayOf(merges)},
		gguf.KV{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Uint32(259)},
		gguf.KV{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Uint32(259)})
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(t.TempDir(), "bpe.gguf")
	if err := os.WriteFile(model, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	setup(t)
	const prompt = " the hello 🦙"
	run := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, status := tgc(t, append([]string{"generate", model, "--device", "CPU", "-n", "8", "--prompt", prompt}, args...)...)
		if status != 0 {
			t.Fatalf("%v: status %d: %s", args, status, errOut)
		}
		return out, errOut
	}
	// BOS, "Ġthe", then " hello" as Ġ he l l o, then " " and 🦙's 4 bytes.
	ids, final := run("--ids")
	if !strings.Contains(final, "prompt 12 tokens") {
		t.Errorf("final line %q: want prompt 12 tokens", final)
	}
	text, _ := run("--quiet")
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	all := tk.Encode(prompt, true, false)
	for _, s := range strings.Fields(ids) {
		n, _ := strconv.Atoi(s)
		all = append(all, n)
	}
	want, err := tk.Decode(all)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, prompt) || text != want+"\n" {
		t.Errorf("text %q, want the prompt and then the decoding of the ids: %q", text, want+"\n")
	}
}
