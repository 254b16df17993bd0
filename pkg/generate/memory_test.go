package generate

import (
	"runtime"
	"testing"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/llama"
	"tgc/pkg/llamatest"
	"tgc/pkg/quant"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

// TestPeakDeviceMemory: generating from a Q4_K model (a prompt of several
// tokens as one batch, then decode steps) holds at most 1.2× the weights
// as stored plus the KV cache, and 64 KiB, in device buffers at any
// moment (the CPU device's account of its live bytes). The model's shape
// gives the checks their weight: a vocabulary whose embedding as floats
// (4 MiB) is more than the 20 % allowance, as it is for a 32000-token
// model, and layers small next to the whole, as in one of 110M
// parameters (a prefill dequantizes one layer's weights at a time).
func TestPeakDeviceMemory(t *testing.T) {
	cfg := llama.Config{Dim: 256, HiddenDim: 512, Layers: 6, Heads: 8, KVHeads: 8, VocabSize: 4096,
		ContextLength: 512, RopeDim: 32, RopeTheta: 10000, NormEps: llama.Llama2cNormEps, Tied: true}
	path := writeRandomConfig(t, t.TempDir(), randomCase{name: "q4_k", format: "gguf", typeOf: llamatest.AllAs(quant.Q4_K)}, cfg, 7)

	ctx, mem := cpuMemory(t)
	// The device is the package's: buffers of earlier tests that are
	// garbage leave its account once collected.
	before := settled(mem)
	mem.ResetPeak()
	s := openWith(t, ctx, Options{Model: path, StepPrompt: -1})
	prompt := []int{1, 400, 4095, 17, 2048, 5, 99, 3000}
	logits, err := s.Prefill(prompt)
	if err != nil {
		t.Fatal(err)
	}
	for pos := len(prompt); pos < len(prompt)+6; pos++ {
		if logits, err = s.Decode(Argmax(logits), pos); err != nil {
			t.Fatal(err)
		}
	}
	u := mem.Memory()
	kv := int64(cfg.Layers * 2 * cfg.ContextLength * cfg.KVHeads * (cfg.Dim / cfg.Heads) * 4)
	model := s.WeightBytes + kv
	if live := u.Live - before; live < model {
		t.Fatalf("the device accounts for %d bytes after loading, less than the weights and KV cache (%d)", live, model)
	}
	const extra = 64 << 10
	peak := u.Peak - before
	t.Logf("peak %d bytes = %.3f× weights %d + KV cache %d", peak, float64(peak)/float64(model), s.WeightBytes, kv)
	if limit := model*12/10 + extra; peak > limit {
		t.Errorf("peak device memory %d bytes (%.2f× the weights and KV cache, %d bytes), more than 1.2× + %d", peak, float64(peak)/float64(model), model, extra)
	}
}

// cpuMemory is a context on the CPU device and the device's account of
// its buffers' bytes.
func cpuMemory(t *testing.T) (*tensor.Context, backend.MemoryCounter) {
	t.Helper()
	ctx, eng, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	mem, ok := eng.Dev.(backend.MemoryCounter)
	if !ok {
		t.Fatalf("%s keeps no account of its memory", eng.Dev.Name())
	}
	return ctx, mem
}

// settled collects garbage until the device's live bytes stop changing
// (buffers left by earlier tests are freed by their cleanups).
func settled(mem backend.MemoryCounter) int64 {
	live := mem.Memory().Live
	for range 20 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		now := mem.Memory().Live
		if now == live {
			break
		}
		live = now
	}
	return live
}

// TestLongContextPromptScratch: a chunked prompt's attention scratch is
// sized by the prompt, not by the context: with a cache of 65536
// positions, a 300-token prompt in chunks of 128 holds a few MB of device
// buffers beside the weights and cache, where the chunks' scores sized by
// the context would be (4 heads, 128, 65536) float32, 134 MB, twice.
func TestLongContextPromptScratch(t *testing.T) {
	cfg := llama.Config{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 1, VocabSize: 512,
		ContextLength: 65536, RopeDim: 16, RopeTheta: 10000, NormEps: llama.Llama2cNormEps, Tied: true}
	path := writeRandomConfig(t, t.TempDir(), randomCase{name: "long", format: "gguf"}, cfg, 8)
	ctx, mem := cpuMemory(t)
	before := settled(mem)
	mem.ResetPeak()
	s := openWith(t, ctx, Options{Model: path, PrefillChunk: 128})
	prompt := make([]int, 300)
	for i := range prompt {
		prompt[i] = 1 + i*37%511
	}
	if _, err := s.Prefill(prompt); err != nil {
		t.Fatal(err)
	}
	kv := int64(cfg.Layers * 2 * cfg.ContextLength * cfg.KVHeads * cfg.HeadDim() * 4)
	scratch := mem.Memory().Peak - before - s.WeightBytes - kv
	t.Logf("the prompt's scratch peaked at %d bytes", scratch)
	if scratch > 16<<20 {
		t.Errorf("a 300-token prompt held %d bytes of scratch beside the weights and a %d-position cache: sized by the context", scratch, cfg.ContextLength)
	}
}

// TestReleaseMemory: once the step replays, ReleaseMemory gives back the
// device's pooled buffers (the scratch of the steps run before the
// capture), which nothing else frees during a generation. (Its garbage
// collection may free more buffers, whose cleanups run after it: at most
// those are pooled after the call.)
func TestReleaseMemory(t *testing.T) {
	path, _ := writeRandom(t, t.TempDir(), randomCase{name: "q4_k", format: "gguf", typeOf: llamatest.AllAs(quant.Q4_K), kvHeads: 2}, 3)
	ctx, mem := cpuMemory(t)
	s := openWith(t, ctx, Options{Model: path, StepPrompt: -1})
	logits, err := s.Prefill([]int{1, 40, 7})
	if err != nil {
		t.Fatal(err)
	}
	for pos := 3; pos < 6; pos++ {
		if logits, err = s.Decode(Argmax(logits), pos); err != nil {
			t.Fatal(err)
		}
	}
	before := mem.Memory()
	if before.Pooled == 0 {
		t.Fatal("nothing pooled after the steps before the capture: the test cannot tell")
	}
	s.ReleaseMemory()
	after := mem.Memory()
	if freed := before.Live - after.Live; after.Pooled > freed || freed < 0 {
		t.Fatalf("after ReleaseMemory: %d bytes pooled (%d before), %d live (%d before); want no more pooled than freed during the call", after.Pooled, before.Pooled, after.Live, before.Live)
	}
	next, err := s.Decode(Argmax(logits), 6)
	if err != nil || len(next) != s.Vocab {
		t.Fatalf("the step after ReleaseMemory: %d logits, %v", len(next), err)
	}
}

// TestHalfKVCacheMemory: a KV cache of float16 or bfloat16 (--kv-cache)
// holds half the device memory of a float32 one: the live bytes after
// loading a model whose 16384-position cache is most of it (the weights
// and the rotary tables, ~1 MB, besides) are the weights plus half the
// float32 cache's bytes, and 2 MiB.
func TestHalfKVCacheMemory(t *testing.T) {
	cfg := llama.Config{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 4, VocabSize: 256,
		ContextLength: 16384, RopeDim: 16, RopeTheta: 10000, NormEps: llama.Llama2cNormEps, Tied: true}
	path := writeRandomConfig(t, t.TempDir(), randomCase{name: "kv", format: "gguf"}, cfg, 9)
	ctx, mem := cpuMemory(t)
	kv32 := int64(cfg.Layers * 2 * cfg.ContextLength * cfg.KVHeads * cfg.HeadDim() * 4)
	for _, c := range []struct {
		kv   string
		want int64 // the cache's bytes
	}{{"f32", kv32}, {"f16", kv32 / 2}, {"bf16", kv32 / 2}} {
		before := settled(mem)
		s := openWith(t, ctx, Options{Model: path, KVCache: c.kv})
		cache := settled(mem) - before - s.WeightBytes
		t.Logf("%s: %d bytes beside the weights, the cache %d", c.kv, cache, c.want)
		if cache < c.want || cache > c.want+2<<20 {
			t.Errorf("--kv-cache %s: %d bytes beside the weights, want the cache's %d and at most 2 MiB", c.kv, cache, c.want)
		}
		s.Close()
	}
}
