package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/bench"
	"tgc/pkg/gguf"
	"tgc/pkg/llama"
	"tgc/pkg/llama2c"
	"tgc/pkg/llamatest"
	"tgc/pkg/quant"
	"tgc/pkg/testmodels"
	"tgc/pkg/tokenizer"
)

// TestGenerateIDs: ids in, ids out, greedy: stories260K's first 40 ids
// are llama2.c's, and the final line reports the rates.
func TestGenerateIDs(t *testing.T) {
	model := testmodels.Path(t, "stories260K.bin")
	want := testmodels.LoadExpected(t).Stories260K.Greedy.IDs[:40]
	setup(t)
	out, errOut, status := tgc(t, "generate", model, "--prompt-ids", "1", "-n", "40", "--ids", "--temperature", "0", "--device", "CPU")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	var got []int
	for _, f := range strings.Fields(out) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("output %q is not ids", out)
		}
		got = append(got, n)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ids %v, want %v", got, want)
	}
	for _, w := range []string{"prompt 1 tokens", "prefill", "decode", "tok/s", "GB/s", "the read bandwidth", "sampling"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("final line %q lacks %q", errOut, w)
		}
	}
}

// TestGenerateHalfKVCache: with --kv-cache f16 stories260K's greedy ids
// are llama2.c's up to its 38th token, where llama2.c's own top two
// logits are 0.0029 apart and the cache's rounding tips them (llama.cpp's
// arithmetic leaves llama2.c's ids there too, docs/performance.md): the
// rounding reaches the kernels, and nothing else changes.
func TestGenerateHalfKVCache(t *testing.T) {
	model := testmodels.Path(t, "stories260K.bin")
	want := testmodels.LoadExpected(t).Stories260K.Greedy.IDs[:40]
	setup(t)
	out, errOut, status := tgc(t, "generate", model, "--prompt-ids", "1", "-n", "40", "--ids", "--temperature", "0", "--device", "CPU", "--kv-cache", "f16")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	got := strings.Fields(out)
	if len(got) != len(want) {
		t.Fatalf("%d ids, want %d: %q", len(got), len(want), out)
	}
	for i, w := range want {
		if same := got[i] == strconv.Itoa(w); same != (i < 37) {
			t.Errorf("id %d: %s, llama2.c's %d (the same: %v, want %v)", i+1, got[i], w, same, i < 37)
		}
	}
}

// TestGenerateSavedReadBandwidth: the final line's read bandwidth is the
// one the cache directory keeps for this host (measured once a week, not
// on every run), and a run without one measures it and keeps it.
func TestGenerateSavedReadBandwidth(t *testing.T) {
	model := testmodels.Path(t, "stories260K.bin")
	setup(t)
	dir := os.Getenv("TGC_CACHE")
	size := min(bench.ReadBufferBytes(backend.Host()), generateReadBuffer)
	bench.SaveReadBandwidth(dir, bench.ThisHost(), size, 123.4, time.Now())
	_, errOut, status := tgc(t, "generate", model, "--prompt-ids", "1", "-n", "8", "--ids", "--device", "CPU")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	if !strings.Contains(errOut, "the read bandwidth (123.4 GB/s)") {
		t.Errorf("final line %q does not use the saved 123.4 GB/s", errOut)
	}
	// another host's figure is not used: this run measures and keeps its own
	bench.SaveReadBandwidth(dir, "another host", size, 123.4, time.Now())
	if _, errOut, status = tgc(t, "generate", model, "--prompt-ids", "1", "-n", "8", "--ids", "--device", "CPU"); status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	if strings.Contains(errOut, "123.4 GB/s") || !strings.Contains(errOut, "the read bandwidth (") {
		t.Errorf("final line %q: want a measured read bandwidth", errOut)
	}
	gbps, saved := bench.HostReadBandwidth(dir, size)
	if !saved || gbps <= 0 || gbps == 123.4 {
		t.Errorf("after the run the cache keeps %g GB/s (saved %v), want the run's measurement", gbps, saved)
	}
}

// textModel writes a random llama2.c model with the 32000-token vocabulary
// of shared/models/tokenizer.bin.
func textModel(t *testing.T) (model, tok string) {
	tok = testmodels.Path(t, "tokenizer.bin")
	cfg := llama.Config{Dim: 64, HiddenDim: 128, Layers: 1, Heads: 2, KVHeads: 1, VocabSize: 32000, ContextLength: 48,
		RopeDim: 32, RopeTheta: 10000, NormEps: llama.Llama2cNormEps} // untied: logits of std 3, sampling varies
	var buf bytes.Buffer
	if err := llamatest.WriteLlama2c(&buf, 0, cfg, llamatest.RandomWeights(cfg, 3)); err != nil {
		t.Fatal(err)
	}
	model = filepath.Join(t.TempDir(), "text.bin")
	if err := os.WriteFile(model, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return model, tok
}

// TestGenerateText: the streamed text is the tokenizer's decoding of the
// prompt and the generated ids; sampling is reproducible from the seed
// (fixed by default) and changes with it.
func TestGenerateText(t *testing.T) {
	model, tokPath := textModel(t)
	setup(t)
	run := func(args ...string) string {
		t.Helper()
		out, errOut, status := tgc(t, append([]string{"generate", model, "--tokenizer", tokPath, "--device", "CPU", "-n", "12", "--quiet"}, args...)...)
		if status != 0 {
			t.Fatalf("%v: status %d: %s", args, status, errOut)
		}
		return out
	}
	ids := run("--prompt", "Once upon a time", "--ids")
	text := run("--prompt", "Once upon a time")
	v, err := llama2c.ReadTokenizer(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := tokenizer.FromLlama2c(v)
	if err != nil {
		t.Fatal(err)
	}
	all := tk.Encode("Once upon a time", true, false)
	for _, f := range strings.Fields(ids) {
		n, _ := strconv.Atoi(f)
		all = append(all, n)
	}
	want, err := tk.Decode(all)
	if err != nil {
		t.Fatal(err)
	}
	if text != want+"\n" {
		t.Errorf("text %q, want the decoding of the ids %q", text, want+"\n")
	}
	if again := run("--prompt", "Once upon a time"); again != text {
		t.Errorf("two runs with the default seed differ: %q and %q", text, again)
	}
	if other := run("--prompt", "Once upon a time", "--seed", "7", "--temperature", "1.5", "--top-p", "1"); other == text {
		t.Errorf("another seed and temperature gave the same text %q", text)
	}
	// top-k 1 keeps the most likely token alone: greedy, whatever the seed
	if k1, greedy := run("--prompt", "Once upon a time", "--seed", "7", "--temperature", "1.5", "--top-k", "1"), run("--prompt", "Once upon a time", "--temperature", "0"); k1 != greedy {
		t.Errorf("--top-k 1 gave %q, --temperature 0 %q", k1, greedy)
	}
	p := filepath.Join(t.TempDir(), "p.txt")
	os.WriteFile(p, []byte("Once upon a time"), 0o644)
	if fromFile := run("--prompt-file", p); fromFile != text {
		t.Errorf("--prompt-file gave %q, --prompt %q", fromFile, text)
	}
}

// TestGenerateErrors: bad input gets one line naming the file, no panic.
func TestGenerateErrors(t *testing.T) {
	model := testmodels.Path(t, "stories260K.bin")
	tokPath := testmodels.Path(t, "tokenizer.bin")
	dir := setup(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full, _ := os.ReadFile(model)
	cfg := llama.Config{Dim: 32, HiddenDim: 64, Layers: 1, Heads: 2, KVHeads: 2, VocabSize: 16, ContextLength: 8,
		RopeDim: 16, RopeTheta: 10000, NormEps: llama.Llama2cNormEps, Tied: true}
	ggufWith := func(md func([]gguf.KV) []gguf.KV, typ quant.Type, fill ...byte) []byte {
		var buf bytes.Buffer
		var tensors []gguf.Tensor
		for _, w := range cfg.Weights() {
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			data := make([]byte, n*4)
			if len(fill) > 0 {
				for i := range data {
					data[i] = fill[i%len(fill)]
				}
			}
			dims := make([]int64, len(w.Shape))
			for i, d := range w.Shape {
				dims[len(dims)-1-i] = int64(d)
			}
			tensors = append(tensors, gguf.Tensor{Name: w.Name, Dims: dims, Type: typ, Data: data})
		}
		if err := gguf.Write(&buf, 3, md(llamatest.GGUFMetadata(cfg)), tensors); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	same := func(kv []gguf.KV) []gguf.KV { return kv }
	qwen := write("qwen.gguf", ggufWith(func(kv []gguf.KV) []gguf.KV {
		kv[0].Value = gguf.String("qwen2")
		return kv
	}, quant.F32))
	noHeads := write("noheads.gguf", ggufWith(func(kv []gguf.KV) []gguf.KV {
		var out []gguf.KV
		for _, e := range kv {
			if e.Key != "llama.attention.head_count" {
				out = append(out, e)
			}
		}
		return out
	}, quant.F32))
	good := write("good.gguf", ggufWith(same, quant.F32))
	nan := write("nan.gguf", ggufWith(same, quant.F32, 0, 0, 0xc0, 0x7f)) // every weight a float32 NaN
	fifo := filepath.Join(dir, "fifo.bin")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{write("text.bin", []byte("hello, this file is not a model at all"))}, "text.bin"},
		{[]string{write("short.gguf", []byte("GGUF\x03\x00\x00\x00"))}, "short.gguf"},
		{[]string{write("trunc.bin", full[:len(full)-100])}, "truncated"},
		{[]string{fifo}, "not a regular file"},
		{[]string{qwen}, `general.architecture is "qwen2"; only "llama" is supported`},
		{[]string{noHeads}, "llama.attention.head_count"},
		{[]string{model, "--tokenizer", tokPath, "--prompt", "hi"}, "the tokenizer has 32000 tokens"},
		{[]string{model, "--prompt", "hi"}, "has no tokenizer"},
		{[]string{model, "--prompt-ids", "1,2,3,4,5,6,7,8,9", "--ids", "--context", "8"}, "more than the context"},
		{[]string{model, "--prompt-ids", "1,600", "--ids"}, "outside the vocabulary of 512"},
		{[]string{model, "--ids", "--top-p", "0"}, "top-p"},
		{[]string{model, "--ids", "--top-k", "-1"}, "top-k -1: must be 0 (all tokens) or positive"},
		{[]string{model, "--ids", "--temperature", "-1"}, "temperature"},
		{[]string{model, "--ids", "--kv-cache", "q8"}, `--kv-cache "q8": want one of f32, f16, bf16`},
		{[]string{model, "--prompt", "a", "--prompt-ids", "1"}, "give one of"},
		{[]string{good, "--prompt", "hi"}, "has no tokenizer"},
		{[]string{nan, "--prompt-ids", "1", "--ids"}, "nan.gguf: position 1: the model's logit for id 0 of 16 is NaN"},
		{[]string{nan, "--prompt-ids", "1", "--ids", "--temperature", "0"}, "nan.gguf: position 1: the model's logit for id 0 of 16 is NaN"},
	}
	for _, c := range cases {
		_, errOut, status := tgc(t, append([]string{"generate", "--device", "CPU"}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if status == 0 || !strings.Contains(errOut, c.want) || len(lines) > 2 {
			t.Errorf("generate %v: status %d, %q; want one line with %q", c.args, status, errOut, c.want)
		}
	}
	// -n past the context: stops there and says so, and how to get more.
	out, errOut, status := tgc(t, "generate", model, "--device", "CPU", "--prompt-ids", "1,2,3", "--ids", "-n", "100", "--context", "8", "--quiet")
	if status != 0 || len(strings.Fields(out)) != 6 || !strings.Contains(errOut, "the context of 8 positions is full") ||
		!strings.Contains(errOut, "the model was trained for 512: --context") {
		t.Errorf("-n past the context: status %d, %q, %q", status, out, errOut)
	}
	// Without --context, a model trained for more than defaultContext
	// positions (Llama 3.1's 131072) gets defaultContext, as llama.cpp's
	// n_ctx: its KV cache and a prompt's attention scratch are sized by it.
	cfg.ContextLength = defaultContext + 4
	long := write("long.gguf", ggufWith(same, quant.F32))
	out, errOut, status = tgc(t, "generate", long, "--device", "CPU", "--prompt-ids", "1", "--ids", "-n", strconv.Itoa(defaultContext+2), "--quiet")
	want := fmt.Sprintf("the context of %d positions is full (-n %d asked for more); the model was trained for %d: --context", defaultContext, defaultContext+2, defaultContext+4)
	if status != 0 || len(strings.Fields(out)) != defaultContext || !strings.Contains(errOut, want) {
		t.Errorf("a long model's default context: status %d, %d ids, %q; want %d ids and %q", status, len(strings.Fields(out)), errOut, defaultContext, want)
	}
}

// TestEmitLlama: tgc emit models/llama.tg -- MODEL writes the decode
// step: kernels that read start_pos from their vars, and a KV cache write
// into the cache's own buffer.
func TestEmitLlama(t *testing.T) {
	model := testmodels.Path(t, "stories260K.bin")
	script, err := filepath.Abs("../../models/llama.tg")
	if err != nil {
		t.Fatal(err)
	}
	dir := setup(t)
	_, errOut, status := tgc(t, "emit", script, "--device", "CPU", "--out", filepath.Join(dir, "out"), "--allow-path", filepath.Dir(model), "--", model)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	var plan struct {
		Version int `json:"version"`
		Kernels []struct {
			Name     string   `json:"name"`
			Args     []int    `json:"args"`
			VarNames []string `json:"var_names"`
		} `json:"kernels"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &plan); err != nil {
		t.Fatal(err)
	}
	symbolic := 0
	written := map[int]int{} // buffer -> kernels writing it
	for _, k := range plan.Kernels {
		written[k.Args[0]]++
		if fmt.Sprint(k.VarNames) == "[start_pos]" {
			symbolic++
		}
	}
	cacheWrites := 0
	for _, n := range written {
		if n > 1 { // the cache: zeroed once, then a slot written in place
			cacheWrites++
		}
	}
	if plan.Version != 2 || symbolic == 0 || cacheWrites == 0 {
		t.Errorf("plan version %d, %d kernels reading start_pos, %d buffers written twice (KV caches)", plan.Version, symbolic, cacheWrites)
	}
}

// TestGenStatsLine: the final line's decode rate is the steps' after the
// first two, and the sampler's time a token is its own figure, the mean of
// its draws (absent when nothing was drawn).
func TestGenStatsLine(t *testing.T) {
	g := genStats{prompt: 3, prefill: time.Second, weightBytes: 1e9}
	for _, d := range []time.Duration{time.Second, time.Second, 10 * time.Millisecond, 30 * time.Millisecond} {
		g.step(d)
	}
	if line := g.line("CPU"); !strings.Contains(line, "decode 50.0 tok/s (2 tokens, after 2 warm-up steps)") || strings.Contains(line, "sampling") {
		t.Errorf("without draws: %q", line)
	}
	g.draw(time.Millisecond)
	g.draw(3 * time.Millisecond)
	if line := g.line("CPU"); !strings.HasSuffix(line, ", sampling 2 ms a token") || !strings.Contains(line, "decode 50.0 tok/s") {
		t.Errorf("with two draws of 1 and 3 ms: %q", line)
	}
}
