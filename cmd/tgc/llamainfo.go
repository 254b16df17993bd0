package main

// `tgc info model.gguf` and `tgc info model.bin`: what a LLaMA checkpoint
// holds and whether `tgc generate` runs it, without running it.

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"tgc/pkg/gguf"
	"tgc/pkg/llama"
	"tgc/pkg/llama2c"
	"tgc/pkg/quant"
	"tgc/pkg/tokenizer"
)

// checkpointKind is "gguf" for an open GGUF file (by its magic), "llama2c"
// for a .bin (llama2.c's checkpoints have no magic), else "": what `tgc
// info` describes as a LLaMA checkpoint and `tgc run` refuses as a script.
func checkpointKind(f *os.File, file string) string {
	switch {
	case llama.IsGGUF(f):
		return "gguf"
	case strings.EqualFold(filepath.Ext(file), ".bin"):
		return "llama2c"
	}
	return ""
}

// printLlamaInfo describes a GGUF file or a llama2.c checkpoint: its
// format, the architecture's hyperparameters, its weights by type, its
// tokenizer and the KV cache `tgc generate` would allocate, then whether
// tgc runs it (and if not, the loader's reason). A GGUF file whose
// architecture or keys tgc refuses is still described as far as its
// header goes.
func printLlamaInfo(w io.Writer, f *os.File, file string) error {
	if checkpointKind(f, file) == "llama2c" {
		c, err := llama2c.OpenFile(f)
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(w, "model:     %s (llama2.c checkpoint, version %d)\n", filepath.Base(file), c.Version)
		m, err := llama.FromLlama2c(c)
		if err != nil {
			fmt.Fprintf(w, "tgc generate: cannot run it: %v\n", err)
			return nil
		}
		printLlamaModel(w, m)
		fmt.Fprintln(w, "tokenizer: none in the file (llama2.c's tokenizer.bin: --tokenizer FILE; or --prompt-ids and --ids)")
		fmt.Fprintln(w, "tgc generate: runs it")
		return nil
	}
	g, err := gguf.OpenFile(f)
	if err != nil {
		return err
	}
	defer g.Close()
	name, _ := g.GetString("general.name")
	arch, _ := g.GetString("general.architecture")
	if !isPrintable(name) { // the file's own text: no terminal escapes through
		name = strconv.Quote(name)
	}
	fmt.Fprintf(w, "model:     %s (GGUF v%d, %d metadata keys, alignment %d)\n", cmp.Or(name, filepath.Base(file)), g.Version, len(g.Metadata), g.Alignment)
	m, merr := llama.FromGGUF(g)
	if merr != nil {
		fmt.Fprintf(w, "arch:      %s\n", cmp.Or(strconv.Quote(arch), "(none)"))
		var sizes []tensorSize
		for _, t := range g.Tensors {
			sizes = append(sizes, tensorSize{t.Type, len(t.Data)})
		}
		printTensorTypes(w, sizes)
		fmt.Fprintf(w, "tgc generate: cannot run it: %v\n", merr)
		return nil
	}
	printLlamaModel(w, m)
	tokModel, _ := g.GetString("tokenizer.ggml.model")
	tok, terr := tokenizer.FromGGUF(g)
	_, hasTok := g.Lookup("tokenizer.ggml.model")
	switch {
	case !hasTok:
		fmt.Fprintln(w, "tokenizer: none in the file (--tokenizer FILE, or --prompt-ids and --ids)")
	case terr != nil:
		fmt.Fprintf(w, "tokenizer: cannot use it: %v (--tokenizer, or --prompt-ids and --ids)\n", terr)
	default:
		kind := map[string]string{"llama": "SentencePiece", "gpt2": "byte-level BPE"}[tokModel]
		adds := ""
		if tok.AddBOS() {
			adds = ", adds BOS"
		}
		fmt.Fprintf(w, "tokenizer: %s (%s), %d tokens, BOS %d, EOS %d%s\n", tokModel, kind, tok.Len(), tok.BOS(), tok.EOS(), adds)
		if tok.Len() != m.VocabSize {
			fmt.Fprintf(w, "tokenizer: its %d tokens are not the model's vocabulary of %d: --tokenizer, or --prompt-ids and --ids\n", tok.Len(), m.VocabSize)
		}
	}
	fmt.Fprintln(w, "tgc generate: runs it")
	return nil
}

// isPrintable says whether s is printable text (no control characters).
func isPrintable(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' })
}

// printLlamaModel prints a model's hyperparameters, weights and KV cache.
func printLlamaModel(w io.Writer, m *llama.Model) {
	c := m.Config
	fmt.Fprintf(w, "arch:      llama: %d layers, dim %d, %d heads (%d key/value heads, head size %d), feed-forward %d, vocabulary %d\n",
		c.Layers, c.Dim, c.Heads, c.KVHeads, c.HeadDim(), c.HiddenDim, c.VocabSize)
	rope := fmt.Sprintf("RoPE base %g over %d of %d head dimensions", c.RopeTheta, c.RopeDim, c.HeadDim())
	if c.RopeLinear > 0 {
		rope += fmt.Sprintf(", positions divided by %g (linear scaling)", c.RopeLinear)
	}
	if c.RopeFactors {
		rope += ", frequency factors (rope_freqs.weight)"
	}
	// epsilon as stored (a float32 in both formats): 1e-05, not 9.99...e-06
	fmt.Fprintf(w, "positions: %s; RMSNorm epsilon %s\n", rope, strconv.FormatFloat(c.NormEps, 'g', -1, 32))
	var sizes []tensorSize
	for _, t := range m.Tensors {
		sizes = append(sizes, tensorSize{t.Type, len(t.Data)})
	}
	printTensorTypes(w, sizes)
	if c.Tied {
		fmt.Fprintf(w, "classifier: the token embedding (tied, %s)\n", m.Tensors["token_embd.weight"].Type)
	} else {
		fmt.Fprintf(w, "classifier: output.weight (%s)\n", m.Tensors["output.weight"].Type)
	}
	ctx := min(c.ContextLength, defaultContext)
	cache := 2 * c.Layers * ctx * c.KVHeads * c.HeadDim() * 4
	more := ""
	if ctx < c.ContextLength {
		more = fmt.Sprintf("; --context up to %d: %s", c.ContextLength, fmtBytes(2*c.Layers*c.ContextLength*c.KVHeads*c.HeadDim()*4))
	}
	fmt.Fprintf(w, "context:   %d positions trained; tgc generate's KV cache holds %d by default, float32 keys and values: %s (--kv-cache f16: %s)%s\n", c.ContextLength, ctx, fmtBytes(cache), fmtBytes(cache/2), more)
}

// tensorSize is a tensor's type and its bytes as stored.
type tensorSize struct {
	t     quant.Type
	bytes int
}

// printTensorTypes prints the tensors' count and bytes, then each type's,
// largest first.
func printTensorTypes(w io.Writer, ts []tensorSize) {
	type use struct {
		t            quant.Type
		count, bytes int
	}
	by := map[quant.Type]*use{}
	total := 0
	for _, t := range ts {
		u := by[t.t]
		if u == nil {
			u = &use{t: t.t}
			by[t.t] = u
		}
		u.count++
		u.bytes += t.bytes
		total += t.bytes
	}
	fmt.Fprintf(w, "weights:   %d tensors, %s\n", len(ts), fmtBytes(total))
	var us []*use
	for _, u := range by {
		us = append(us, u)
	}
	slices.SortFunc(us, func(a, b *use) int { return cmp.Or(b.bytes-a.bytes, strings.Compare(a.t.String(), b.t.String())) })
	for _, u := range us {
		fmt.Fprintf(w, "  %-6s %4d tensors %10s\n", u.t, u.count, fmtBytes(u.bytes))
	}
}
