package generate

import (
	"path/filepath"
	"strings"
	"testing"

	"tgc/models"
	"tgc/pkg/backend"
	"tgc/pkg/fileaccess"
	"tgc/pkg/llamatest"
	"tgc/pkg/quant"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
	"tgc/pkg/testmodels"
)

// open loads a model through models/llama.tg on a device.
func open(t *testing.T, device, model, tok string, maxContext int) (*Session, *realize.Engine) {
	t.Helper()
	ctx, eng, err := realize.NewContext(device, realize.Options{})
	if err != nil {
		t.Skipf("%s: %v", device, err)
	}
	return openIn(t, ctx, model, tok, maxContext), eng
}

func openIn(t *testing.T, ctx *tensor.Context, model, tok string, maxContext int) *Session {
	t.Helper()
	return openWith(t, ctx, Options{Model: model, Tokenizer: tok, MaxContext: maxContext})
}

// openWith opens o's model with models/llama.tg in ctx, the folders of its
// files allowed.
func openWith(t *testing.T, ctx *tensor.Context, o Options) *Session {
	t.Helper()
	src, err := models.Script("llama.tg")
	if err != nil {
		t.Fatal(err)
	}
	files := fileaccess.ForScript("")
	for _, p := range []string{o.Model, o.Tokenizer} {
		if p != "" {
			if err := files.Allow(filepath.Dir(p), "test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	o.Script, o.ScriptName, o.Context, o.Files = src, "llama.tg", ctx, files
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// greedy generates n ids after BOS.
func greedy(t *testing.T, s *Session, n int) []int {
	t.Helper()
	logits, err := s.Prefill([]int{1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for pos := 1; ; pos++ {
		id := Argmax(logits)
		ids = append(ids, id)
		if len(ids) == n {
			return ids
		}
		if logits, err = s.Decode(id, pos); err != nil {
			t.Fatalf("position %d: %v", pos, err)
		}
	}
}

// TestStories260K: stories260K.bin generates, greedily after BOS, the 200
// ids of llama2.c's run.c (expected.json) on the CPU and CUDA; on GO and
// CL the first 24 (the interpreter is slow; the CL device is PoCL on the CPU).
func TestStories260K(t *testing.T) {
	dir := testmodels.Dir(t)
	want := testmodels.LoadExpected(t).Stories260K.Greedy.IDs
	for _, c := range []struct {
		device string
		n      int
	}{{"CPU", 200}, {"GO", 24}, {"CL", 24}, {"CUDA", 200}} {
		t.Run(c.device, func(t *testing.T) {
			s, _ := open(t, c.device, filepath.Join(dir, "stories260K.bin"), "", 0)
			got := greedy(t, s, c.n)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("id %d is %d, llama2.c's is %d (got %v)", i, got[i], want[i], got[:i+1])
				}
			}
		})
	}
}

// TestChunkedPrefillStories260K: BOS and the first 149 of llama2.c's
// greedy ids as the prompt (chunks of 22 and 128, the second at a bound
// Variable), then greedy decoding: the ids after the prompt are llama2.c's
// next ones, on every device.
func TestChunkedPrefillStories260K(t *testing.T) {
	dir := testmodels.Dir(t)
	want := testmodels.LoadExpected(t).Stories260K.Greedy.IDs
	const k, more = 149, 6
	prompt := append([]int{1}, want[:k]...)
	for _, device := range []string{"CPU", "GO", "CL", "CUDA"} {
		t.Run(device, func(t *testing.T) {
			s, _ := open(t, device, filepath.Join(dir, "stories260K.bin"), "", 0)
			logits, err := s.Prefill(prompt)
			if err != nil {
				t.Fatal(err)
			}
			for i := k; i < k+more; i++ {
				if got := Argmax(logits); got != want[i] {
					t.Fatalf("id %d after the chunked prompt is %d, llama2.c's is %d", i, got, want[i])
				}
				if logits, err = s.Decode(want[i], i+1); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeCompilesOnce: decoding compiles one set of kernels for every
// position: from the 3rd generated token to the 100th nothing is
// scheduled or compiled, and the steps are TinyJit replays.
func TestDecodeCompilesOnce(t *testing.T) {
	s, eng := open(t, "CPU", testmodels.Path(t, "stories260K.bin"), "", 0)
	logits, err := s.Prefill([]int{1})
	if err != nil {
		t.Fatal(err)
	}
	var compiled, scheduled, replays int
	for pos := 1; pos <= 100; pos++ {
		if pos == 3 {
			compiled, scheduled, replays = eng.Stats.Compiled, eng.Stats.Scheduled, eng.Stats.JitReplays
			if compiled == 0 {
				t.Fatal("no kernels were compiled")
			}
		}
		if logits, err = s.Decode(Argmax(logits), pos); err != nil {
			t.Fatal(err)
		}
	}
	if eng.Stats.Compiled != compiled || eng.Stats.Scheduled != scheduled {
		t.Errorf("tokens 3..100 compiled %d kernels in %d new schedules, want none", eng.Stats.Compiled-compiled, eng.Stats.Scheduled-scheduled)
	}
	if r := eng.Stats.JitReplays - replays; r != 98 {
		t.Errorf("%d of the 98 decode steps from token 3 were TinyJit replays", r)
	}
}

// TestOneTokenPromptIsTheStep: a prompt of one token runs as the jitted
// decode step at position 0, so the decode steps after it schedule and
// compile nothing: the step after the prompt is the TinyJit's capture and
// every later one a replay (a prompt through the batch path would be
// one schedule and the first decode step another).
func TestOneTokenPromptIsTheStep(t *testing.T) {
	s, eng := open(t, "CPU", testmodels.Path(t, "stories260K.bin"), "", 0)
	logits, err := s.Prefill([]int{1})
	if err != nil {
		t.Fatal(err)
	}
	compiled, scheduled, replays := eng.Stats.Compiled, eng.Stats.Scheduled, eng.Stats.JitReplays
	if compiled == 0 || scheduled == 0 {
		t.Fatal("the prompt compiled nothing")
	}
	for pos := 1; pos <= 4; pos++ {
		if logits, err = s.Decode(Argmax(logits), pos); err != nil {
			t.Fatal(err)
		}
	}
	if eng.Stats.Compiled != compiled || eng.Stats.Scheduled != scheduled {
		t.Errorf("the decode steps after a one-token prompt compiled %d kernels in %d new schedules, want none", eng.Stats.Compiled-compiled, eng.Stats.Scheduled-scheduled)
	}
	if r := eng.Stats.JitReplays - replays; r != 3 {
		t.Errorf("%d of the 4 decode steps after a one-token prompt were TinyJit replays, want 3 (the first captures)", r)
	}
}

// TestWarmUpCompilesTheStep: Session.WarmUp (tgc generate runs it before
// a prompt of several tokens) compiles the decode step while the cache is
// empty, so the decode steps after the prompt schedule and compile
// nothing: the first is the TinyJit's capture, the later ones replays.
// The prompt's logits are the same bits as without it (its cache
// position is the prompt's first, written again by the prompt).
func TestWarmUpCompilesTheStep(t *testing.T) {
	model := testmodels.Path(t, "stories260K.bin")
	for _, prompt := range [][]int{{1, 7}, {1, 7, 100, 5, 33, 9}} {
		ref, _ := open(t, "CPU", model, "", 0)
		want, err := ref.Prefill(prompt)
		if err != nil {
			t.Fatal(err)
		}
		s, eng := open(t, "CPU", model, "", 0)
		if err := s.WarmUp(prompt[0]); err != nil {
			t.Fatal(err)
		}
		logits, err := s.Prefill(prompt)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if logits[i] != want[i] {
				t.Fatalf("%d-token prompt: logit %d is %g after a warm-up, %g without", len(prompt), i, logits[i], want[i])
			}
		}
		compiled, scheduled, replays := eng.Stats.Compiled, eng.Stats.Scheduled, eng.Stats.JitReplays
		pos := len(prompt)
		for range 4 {
			if logits, err = s.Decode(Argmax(logits), pos); err != nil {
				t.Fatal(err)
			}
			pos++
		}
		if eng.Stats.Compiled != compiled || eng.Stats.Scheduled != scheduled {
			t.Errorf("%d-token prompt: the decode steps after it compiled %d kernels in %d new schedules, want none", len(prompt), eng.Stats.Compiled-compiled, eng.Stats.Scheduled-scheduled)
		}
		if r := eng.Stats.JitReplays - replays; r != 3 {
			t.Errorf("%d-token prompt: %d of the 4 decode steps after it were TinyJit replays, want 3", len(prompt), r)
		}
	}
}

// TestDecodeReusesLogits: a session reads every step's logits into one
// buffer (the logits were most of a step's garbage); each step's values
// are its own (a fresh session's logits at the same positions).
func TestDecodeReusesLogits(t *testing.T) {
	s, _ := open(t, "CPU", testmodels.Path(t, "stories260K.bin"), "", 0)
	ref, _ := open(t, "CPU", testmodels.Path(t, "stories260K.bin"), "", 0)
	first, err := s.Prefill([]int{1})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Prefill([]int{1})
	if err != nil {
		t.Fatal(err)
	}
	id := Argmax(want)
	for pos := 1; pos <= 3; pos++ {
		got, err := s.Decode(id, pos)
		if err != nil {
			t.Fatal(err)
		}
		if &got[0] != &first[0] {
			t.Errorf("position %d: the logits are a new slice, not the session's buffer", pos)
		}
		if want, err = ref.Decode(id, pos); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("position %d: logit %d is %v, another session's %v", pos, i, got[i], want[i])
			}
		}
		id = Argmax(want)
	}
}

// TestDecodeReleasesLogits: a replayed decode step's logits, once copied
// out, go back to the device (Tensor.Release), so the next step writes
// that memory again: the device's live bytes do not grow by the logits
// from step to step. A fresh mapping per step cost ~20 page faults inside the
// classifier's kernel on the 110M model (docs/performance.md, `cls`).
func TestDecodeReleasesLogits(t *testing.T) {
	s, eng := open(t, "CPU", testmodels.Path(t, "stories260K.bin"), "", 0)
	mem, ok := eng.Dev.(backend.MemoryCounter)
	if !ok {
		t.Skip("the device keeps no account of its buffers")
	}
	logits, err := s.Prefill([]int{1})
	if err != nil {
		t.Fatal(err)
	}
	var live int64
	for pos := 1; pos <= 8; pos++ {
		if logits, err = s.Decode(Argmax(logits), pos); err != nil {
			t.Fatal(err)
		}
		// (the step's token id, a 4-byte input, waits for the collector)
		if got := mem.Memory().Live; pos > 3 && got-live >= int64(4*len(logits)) {
			t.Errorf("position %d: %d bytes live on the device, %d after the step before (the logits are %d)", pos, got, live, 4*len(logits))
		}
		live = mem.Memory().Live
	}
}

// TestDecodeStepLaunches pins the decode step's launches: per layer one
// matrix-vector product for q, k and v together (the loader fuses their
// weights when they share a type: blk.N.attn_qkv.weight) with the
// attention's RMSNorm computed in its prologue (fuse's prologues: once per
// launch piece, into a scratch row), the RoPE of q, the RoPE of k and the
// copy of v into the caches, the scores, the softmax (its max, sum and
// division in one kernel, a row per head: fuse's row kernels), the values,
// wo, the FFN's gate and up with the residual and the FFN's RMSNorm in
// their prologue, its down with the residual; then the classifier with
// the final RMSNorm in its prologue; before the layers, the token's
// embedding row. A model whose v has another type (Q4_K_M's Q6_K), or
// whose q, k and v are of a packed type (Q4_K), keeps three products (the
// v product writes the cache itself) and the attention's RMSNorm in a
// kernel of its own (three products would each compute it).
func TestDecodeStepLaunches(t *testing.T) {
	stories := testmodels.Path(t, "stories260K.bin")
	dir := t.TempDir()
	q4km, _ := writeRandom(t, dir, randomCase{"Q4_K_M", "gguf", llamatest.MixQ4KM, 2, false}, 7)
	q8, _ := writeRandom(t, dir, randomCase{"Q8_0", "gguf", llamatest.AllAs(quant.Q8_0), 2, false}, 7)
	q4k, _ := writeRandom(t, dir, randomCase{"Q4_K", "gguf", llamatest.AllAs(quant.Q4_K), 2, false}, 7)
	for _, c := range []struct {
		name, path     string
		layers, launch int // launches per layer
	}{{"stories260K", stories, 5, 10}, {"Q4_K_M", q4km, small.Layers, 12},
		{"Q8_0", q8, small.Layers, 10}, {"Q4_K", q4k, small.Layers, 12}} {
		t.Run(c.name, func(t *testing.T) {
			s, eng := open(t, "CPU", c.path, "", 0)
			logits, err := s.Prefill([]int{1})
			if err != nil {
				t.Fatal(err)
			}
			for pos := 1; pos <= 3; pos++ {
				before := eng.Stats.Kernels
				if logits, err = s.Decode(Argmax(logits), pos); err != nil {
					t.Fatal(err)
				}
				if n, want := eng.Stats.Kernels-before, c.layers*c.launch+2; n != want {
					t.Errorf("the step at %d ran %d launches, want %d (%d per layer)", pos, n, want, c.launch)
				}
			}
		})
	}
}

// TestOpenRefusesKVCacheType: an element type for the KV cache that the
// script does not take is refused first, before the model is opened.
func TestOpenRefusesKVCacheType(t *testing.T) {
	_, err := Open(Options{Model: "/nonexistent/model.gguf", KVCache: "q8_0"})
	if err == nil || !strings.Contains(err.Error(), `KV cache type "q8_0": must be one of f32, f16, bf16`) {
		t.Fatalf("got %v", err)
	}
}
