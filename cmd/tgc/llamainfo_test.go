package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tgc/pkg/gguf"
	"tgc/pkg/llama"
	"tgc/pkg/llamatest"
)

// TestInfoLlama: `tgc info` describes a GGUF file (a Q4_K_M mix with a
// SentencePiece tokenizer: its hyperparameters, its tensors by type, the
// tokenizer, the KV cache) and a llama2.c checkpoint without running
// them; a GGUF file tgc cannot run is described with the loader's reason
// (status 0), and a truncated one is an error of one line. `tgc run`,
// `emit` and `train` given a checkpoint name `tgc generate`.
func TestInfoLlama(t *testing.T) {
	dir := setup(t)
	cfg := llama.Config{Dim: 256, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 256, ContextLength: 8192,
		RopeDim: 64, RopeTheta: 500000, NormEps: 1e-5}
	weights := llamatest.RandomWeights(cfg, 7)
	pieces := make([]string, cfg.VocabSize)
	for i := range pieces {
		pieces[i] = string(rune('a'+i%26)) + strings.Repeat("x", i/26)
	}
	write := func(name string, extra ...gguf.KV) string {
		var buf bytes.Buffer
		if err := llamatest.WriteGGUF(&buf, cfg, weights, llamatest.MixQ4KM, extra...); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withTok := write("mix.gguf", gguf.KV{Key: "tokenizer.ggml.model", Value: gguf.String("llama")},
		gguf.KV{Key: "tokenizer.ggml.tokens", Value: gguf.ArrayOf(pieces)})
	// general.name "tgc random llama" with an escape sequence in it: shown quoted
	mix, _ := os.ReadFile(withTok)
	if err := os.WriteFile(withTok, bytes.Replace(mix, []byte("random"), []byte("\x1b[2J\a\a"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	noTok := write("notok.gguf")
	var bin bytes.Buffer
	c2 := cfg // what a llama2.c file holds: run.c's theta and epsilon
	c2.RopeTheta, c2.NormEps = 10000, llama.Llama2cNormEps
	if err := llamatest.WriteLlama2c(&bin, 0, c2, weights); err != nil {
		t.Fatal(err)
	}
	l2c := filepath.Join(dir, "model.bin")
	if err := os.WriteFile(l2c, bin.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// 2 layers of 7 matrices: q, k, v, o, gate, up, down; Q6_K for v and
	// down, Q4_K for the rest and the token embedding (untied: output too)
	for _, c := range []struct {
		file string
		want []string
	}{
		{withTok, []string{`model:     "tgc \x1b[2J\a\a llama" (GGUF v3, `, "arch:      llama: 2 layers, dim 256, 4 heads (2 key/value heads, head size 64), feed-forward 512, vocabulary 256",
			"RoPE base 500000 over 64 of 64 head dimensions; RMSNorm epsilon 1e-05", "weights:   21 tensors, ", "  Q4_K     12 tensors", "  Q6_K      4 tensors", "  F32       5 tensors",
			"classifier: output.weight (Q4_K)", "context:   8192 positions trained; tgc generate's KV cache holds 4096 by default, float32 keys and values: 8.0 MiB (--kv-cache f16: 4.0 MiB); --context up to 8192: 16.0 MiB",
			"tokenizer: llama (SentencePiece), 256 tokens, BOS 1, EOS 2, adds BOS", "tgc generate: runs it"}},
		{noTok, []string{"tokenizer: none in the file", "tgc generate: runs it"}},
		{l2c, []string{"model:     model.bin (llama2.c checkpoint, version 0)", "arch:      llama: 2 layers, dim 256", "  F32      21 tensors",
			"context:   8192 positions trained", "tokenizer: none in the file (llama2.c's tokenizer.bin", "tgc generate: runs it"}},
	} {
		out, errs, st := tgc(t, "info", c.file)
		if st != 0 {
			t.Fatalf("%s: status %d: %s", c.file, st, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: info lacks %q:\n%s", filepath.Base(c.file), w, out)
			}
		}
	}
	// general.architecture is the first key: its value the file's first "llama"
	noTokBytes, _ := os.ReadFile(noTok)
	qwen := filepath.Join(dir, "qwen.gguf")
	if err := os.WriteFile(qwen, bytes.Replace(noTokBytes, []byte("llama"), []byte("qwen2"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, st := tgc(t, "info", qwen)
	if st != 0 || !strings.Contains(out, "tgc generate: cannot run it: ") || !strings.Contains(out, `arch:      "qwen2"`) || !strings.Contains(out, "weights:   21 tensors") {
		t.Errorf("qwen2: status %d, stdout:\n%s\nstderr: %s", st, out, errs)
	}
	cut := filepath.Join(dir, "cut.gguf")
	if err := os.WriteFile(cut, noTokBytes[:len(noTokBytes)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, st = tgc(t, "info", cut)
	if st != 1 || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "cut.gguf") {
		t.Errorf("truncated: status %d, stdout %q, stderr %q", st, out, errs)
	}
	if _, errs, st = tgc(t, "info", dir); st != 1 || !strings.Contains(errs, "is a directory, not a model file") {
		t.Errorf("a directory: status %d, stderr %q", st, errs)
	}
	// a checkpoint where a script goes: the command that takes it, not
	// its bytes read as a script
	for _, c := range [][]string{{"run", noTok}, {"emit", noTok}, {"run", l2c}, {"train", l2c}} {
		if _, errs, st := tgc(t, c...); st != 1 || !strings.Contains(errs, "tgc generate "+c[1]) || strings.Contains(errs, "NUL") {
			t.Errorf("tgc %s %s: status %d, stderr %q", c[0], filepath.Base(c[1]), st, errs)
		}
	}
}
