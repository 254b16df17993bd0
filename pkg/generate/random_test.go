package generate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/llama"
	"tgc/pkg/llamatest"
	"tgc/pkg/quant"
	"tgc/pkg/realize"
)

// A small model whose rows are whole Q4_K/Q6_K super-blocks (256).
var small = llama.Config{Dim: 256, HiddenDim: 512, Layers: 2, Heads: 8, KVHeads: 2, VocabSize: 96,
	ContextLength: 32, RopeDim: 32, RopeTheta: 10000, NormEps: llama.Llama2cNormEps}

type randomCase struct {
	name    string
	format  string // "gguf" or "llama2c"
	typeOf  llamatest.TypeFunc
	kvHeads int
	tied    bool
}

// randomCases covers every tensor type, grouped-query and multi-head
// attention, tied and separate classifiers, and both file formats.
func randomCases() []randomCase {
	var cs []randomCase
	for i, typ := range quant.SupportedTypes() {
		kv := []int{2, 8}[i%2]
		tied := i/2%2 == 0
		cs = append(cs, randomCase{typ.String(), "gguf", llamatest.AllAs(typ), kv, tied})
	}
	cs = append(cs,
		randomCase{"Q4_K_M", "gguf", llamatest.MixQ4KM, 2, false},
		randomCase{"Q5_K_M", "gguf", llamatest.MixQ5KM, 8, true},
		randomCase{"llama2c-tied", "llama2c", nil, 2, true},
		randomCase{"llama2c-untied-mha", "llama2c", nil, 8, false})
	return cs
}

// writeRandom writes a random model of the case into dir.
func writeRandom(t *testing.T, dir string, c randomCase, seed uint64) (string, llama.Config) {
	t.Helper()
	cfg := small
	cfg.KVHeads, cfg.Tied = c.kvHeads, c.tied
	return writeRandomConfig(t, dir, c, cfg, seed), cfg
}

// writeRandomConfig writes a random model of shape cfg in the case's
// format and types into dir.
func writeRandomConfig(t *testing.T, dir string, c randomCase, cfg llama.Config, seed uint64) string {
	t.Helper()
	w := llamatest.RandomWeights(cfg, seed)
	path := filepath.Join(dir, c.name+"."+map[string]string{"gguf": "gguf", "llama2c": "bin"}[c.format])
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if c.format == "gguf" {
		err = llamatest.WriteGGUF(f, cfg, w, c.typeOf)
	} else {
		err = llamatest.WriteLlama2c(f, 0, cfg, w)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// referenceAfter opens path's float64 reference (pkg/llamatest) and runs
// prompt through it: the reference, its state and the logits after the
// prompt. The model stays open until the test ends.
func referenceAfter(t *testing.T, path string, prompt []int) (*llamatest.Reference, *llamatest.State, []float64) {
	t.Helper()
	return referenceRounding(t, path, prompt, nil)
}

// referenceRounding is referenceAfter with the reference's cache rounding
// its keys and values by round (nil: not rounded).
func referenceRounding(t *testing.T, path string, prompt []int, round func(float64) float64) (*llamatest.Reference, *llamatest.State, []float64) {
	t.Helper()
	m, err := llama.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ref, err := llamatest.NewReference(m)
	if err != nil {
		t.Fatal(err)
	}
	ref.KVRound = round
	st := ref.NewState()
	var want []float64
	for pos, id := range prompt {
		if want, err = ref.Forward(st, id, pos); err != nil {
			t.Fatal(err)
		}
	}
	return ref, st, want
}

// batchPrompts opens path on the CPU with every prompt of several tokens
// run as one batch (as a long prompt's chunks are), however short.
func batchPrompts(t *testing.T, path string) *Session {
	t.Helper()
	ctx, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	return openWith(t, ctx, Options{Model: path, StepPrompt: -1})
}

// relErr is max |a-b| over max |b|.
func relErr[F float32 | float64](a []F, b []float64) float64 {
	var scale, worst float64
	for _, v := range b {
		scale = max(scale, math.Abs(v))
	}
	for i := range b {
		worst = max(worst, math.Abs(float64(a[i])-b[i]))
	}
	return worst / scale
}

// TestRandomModelsMatchReference: tgc's logits (models/llama.tg on the
// engine) agree with pkg/llamatest's float64 reference within 1e-4
// relative (float32 arithmetic) on random models of every kind: the prompt
// as one batch (causal mask), then decode steps under TinyJit with the
// position a variable. The reference reads the same file, dequantized.
func TestRandomModelsMatchReference(t *testing.T) {
	dir := t.TempDir()
	prompt := []int{1, 17, 42, 5, 88, 3}
	for i, c := range randomCases() {
		t.Run(c.name, func(t *testing.T) {
			path, _ := writeRandom(t, dir, c, uint64(10+i))
			matchReference(t, path, prompt, 4)
		})
	}
}

// matchReference runs prompt as one batch and then steps greedy decode
// steps on path's model, and checks every step's logits against the
// float64 reference within 1e-4 relative. It returns the reference's
// logits after the prompt.
func matchReference(t *testing.T, path string, prompt []int, steps int) []float64 {
	t.Helper()
	return matchReferenceKV(t, path, prompt, steps, "", nil)
}

// matchReferenceKV is matchReference with a KV cache of type kv (""
// the default), whose rounding of the keys and values the reference does
// by round.
func matchReferenceKV(t *testing.T, path string, prompt []int, steps int, kv string, round func(float64) float64) []float64 {
	t.Helper()
	ref, st, want := referenceRounding(t, path, prompt, round)
	after := want
	ctx, _, err := realize.NewContext("CPU", realize.Options{})
	if err != nil {
		t.Skipf("CPU: %v", err)
	}
	s := openWith(t, ctx, Options{Model: path, StepPrompt: -1, KVCache: kv})
	got, err := s.Prefill(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	check := func(what string) {
		t.Helper()
		e := relErr(got, want)
		if e > 1e-4 {
			t.Fatalf("%s: logits differ from the reference by %.3g (relative)", what, e)
		}
		worst = max(worst, e)
	}
	check("prefill")
	for pos := len(prompt); pos < len(prompt)+steps; pos++ {
		next, _ := llamatest.Argmax(want)
		if want, err = ref.Forward(st, next, pos); err != nil {
			t.Fatal(err)
		}
		if got, err = s.Decode(next, pos); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("decode at %d", pos))
	}
	t.Logf("largest relative difference %.2g", worst)
	return after
}

// TestHalfKVCacheMatchesReference: with a KV cache of float16 or bfloat16
// (tgc generate --kv-cache f16, bf16) the logits of a prompt and of decode
// steps agree within 1e-4 with the float64 reference whose cache rounds
// the keys and values to the same type, on a float32, a Q4_K_M and a
// llama2.c model (GQA and MHA). The rounding is seen: bfloat16's logits
// are further from the unrounded reference's than the check allows.
func TestHalfKVCacheMatchesReference(t *testing.T) {
	dir := t.TempDir()
	prompt := []int{1, 17, 42, 5, 88, 3}
	rounding := map[string]func(float64) float64{
		"f16":  func(x float64) float64 { return float64(ir.Float16ToFloat32(ir.Float16FromFloat32(float32(x)))) },
		"bf16": func(x float64) float64 { return float64(ir.BFloat16ToFloat32(ir.BFloat16FromFloat32(float32(x)))) },
	}
	for i, c := range randomCases() {
		if c.name != "F32" && c.name != "Q4_K_M" && c.name != "llama2c-untied-mha" {
			continue
		}
		path, _ := writeRandom(t, dir, c, uint64(70+i))
		_, _, plain := referenceAfter(t, path, prompt)
		for _, kv := range []string{"f16", "bf16"} {
			t.Run(kv+"/"+c.name, func(t *testing.T) {
				got := matchReferenceKV(t, path, prompt, 4, kv, rounding[kv])
				t.Logf("the rounded reference's logits after the prompt differ from the unrounded by %.2g", relErr(got, plain))
				if kv == "bf16" && relErr(got, plain) < 1e-4 {
					t.Errorf("a bfloat16 cache changed the logits by %.2g only: not rounded", relErr(got, plain))
				}
			})
		}
	}
}

// TestChunkedPrefillMatchesReference: a prompt longer than the prefill
// chunk runs in chunks (the first what the others leave, at position 0;
// the others at a bound Variable, one schedule for all of them), and its
// logits and the decode after it agree with the float64 reference as the
// whole prompt's do, and with the prompt run as one batch. Chunks of 4
// over 11 tokens: 3, 4, 4 (two chunks at the Variable: its schedule is
// replayed at a second position).
func TestChunkedPrefillMatchesReference(t *testing.T) {
	dir := t.TempDir()
	prompt := []int{1, 17, 42, 5, 88, 3, 25, 9, 64, 7, 12}
	for i, c := range randomCases() {
		if c.name != "F32" && c.name != "Q4_K_M" && c.name != "llama2c-untied-mha" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			path, _ := writeRandom(t, dir, c, uint64(40+i))
			ref, st, want := referenceAfter(t, path, prompt)
			ctx, eng, err := realize.NewContext("CPU", realize.Options{})
			if err != nil {
				t.Skipf("CPU: %v", err)
			}
			s := openWith(t, ctx, Options{Model: path, PrefillChunk: 4})
			compiled := eng.Stats.Compiled
			got, err := s.Prefill(prompt)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(got, want); e > 1e-4 {
				t.Fatalf("chunked prefill: logits differ from the reference by %.3g (relative)", e)
			}
			whole := batchPrompts(t, path)
			one, err := whole.Prefill(prompt)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(got, float64s(one)); e > 1e-5 {
				t.Errorf("chunked prefill: logits differ from the whole prompt's by %.3g (relative)", e)
			}
			for pos := len(prompt); pos < len(prompt)+3; pos++ {
				next, _ := llamatest.Argmax(want)
				if want, err = ref.Forward(st, next, pos); err != nil {
					t.Fatal(err)
				}
				if got, err = s.Decode(next, pos); err != nil {
					t.Fatal(err)
				}
				if e := relErr(got, want); e > 1e-4 {
					t.Fatalf("decode at %d after a chunked prefill: logits differ from the reference by %.3g (relative)", pos, e)
				}
			}
			t.Logf("%d kernels compiled for the chunked prompt and 3 steps", eng.Stats.Compiled-compiled)
			// A prompt of 15 (chunks 3, 4, 4, 4): the same two schedules,
			// nothing compiled.
			compiled = eng.Stats.Compiled
			if _, err := s.Prefill(append(prompt, 2, 3, 4, 5)); err != nil {
				t.Fatal(err)
			}
			if n := eng.Stats.Compiled - compiled; n != 0 {
				t.Errorf("a prompt of one more chunk compiled %d kernels, want none", n)
			}
		})
	}
}

func float64s(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// TestDecodeKernelsIndependentOfDepth: a model of 8 layers compiles as
// many distinct kernels as one of 2 for the one-token prompt's step and
// the decode steps after it, for F32 and Q4_K weights: every layer's kernels
// have one structure, compiled once. models/llama.tg stores the residual
// stream after each half of a block; kept fused, each later kernel summed
// every earlier layer's output, and each layer's kernels compiled apart
// (13 more at 8 layers).
func TestDecodeKernelsIndependentOfDepth(t *testing.T) {
	for _, typ := range []quant.Type{quant.F32, quant.Q4_K} {
		t.Run(typ.String(), func(t *testing.T) {
			var counts []int
			for _, layers := range []int{2, 8} {
				cfg := small
				cfg.Layers = layers
				path := writeRandomConfig(t, t.TempDir(), randomCase{name: "m", format: "gguf", typeOf: llamatest.AllAs(typ)}, cfg, 5)
				s, eng := open(t, "CPU", path, "", 0)
				before := eng.Stats.Compiled // the load's (a KV cache's realize is one a layer)
				logits, err := s.Prefill([]int{1})
				if err != nil {
					t.Fatal(err)
				}
				for pos := 1; pos < 4; pos++ {
					if logits, err = s.Decode(Argmax(logits), pos); err != nil {
						t.Fatal(err)
					}
				}
				counts = append(counts, eng.Stats.Compiled-before)
			}
			if counts[0] != counts[1] {
				t.Errorf("distinct kernels compiled: %d at 2 layers, %d at 8; want the same", counts[0], counts[1])
			}
		})
	}
}

// TestRopeScalingMatchesReference: Llama 3.1's rope_freqs.weight (each
// pair's frequency divided by its factor) and linear RoPE scaling (the
// positions divided by the factor) turn q and k as llama.cpp does: tgc's
// logits after a prompt and over decode steps agree with the float64
// reference that applies them, and that reference is far from the same
// weights' unscaled model (so a script that ignored the scaling fails).
// small's context of 32 puts its 16 pairs' divisors in all three of
// Llama 3's ranges (1, blended, 8). The head-128 case has Llama 3.2 3B's
// heads of 128 dimensions (64 divisors), two query heads on one key/value
// head, in Q4_K_M's types.
func TestRopeScalingMatchesReference(t *testing.T) {
	dir := t.TempDir()
	prompt := []int{1, 17, 42, 5, 88, 3, 25, 9, 64, 7, 12, 30, 2, 51, 77, 19}
	head128 := small
	head128.Heads, head128.KVHeads, head128.RopeDim = 2, 1, 128
	for i, tc := range []struct {
		name    string
		shape   llama.Config
		typeOf  llamatest.TypeFunc
		factors bool
		linear  float64
	}{
		{"rope_freqs", small, llamatest.AllAs(quant.F32), true, 0},
		{"rope_freqs-Q8_0", small, llamatest.AllAs(quant.Q8_0), true, 0},
		{"linear", small, llamatest.AllAs(quant.F32), false, 4},
		{"rope_freqs-head128-Q4_K_M", head128, llamatest.MixQ4KM, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(60 + i)
			c := randomCase{name: tc.name, format: "gguf", typeOf: tc.typeOf}
			cfg := tc.shape
			cfg.RopeFactors, cfg.RopeLinear = tc.factors, tc.linear
			path := writeRandomConfig(t, dir, c, cfg, seed)
			want := matchReference(t, path, prompt, 8)
			c.name += "-unscaled"
			_, _, unscaled := referenceAfter(t, writeRandomConfig(t, dir, c, tc.shape, seed), prompt)
			if e := relErr(want, unscaled); e < 1e-2 {
				t.Fatalf("the scaling moves the reference's logits by only %.3g: the test cannot tell", e)
			} else {
				t.Logf("the scaled reference is %.2g (relative) from the unscaled one", e)
			}
		})
	}
}

// TestShortPromptSteps: a short prompt of a quantized model runs token by
// token through the jitted decode step (Session.Stepped): its logits agree
// with the float64 reference, are the very bits of the same tokens fed as
// decode steps, and no schedule but the step's compiles for it. A prompt
// one token longer than DefaultStepPrompt, or of an F32 model, is a batch.
func TestShortPromptSteps(t *testing.T) {
	dir := t.TempDir()
	prompt := []int{1, 17, 42, 5, 88, 3}
	q8 := randomCase{"Q8_0", "gguf", llamatest.AllAs(quant.Q8_0), 2, true}
	path, _ := writeRandom(t, dir, q8, 70)
	_, _, want := referenceAfter(t, path, prompt)
	s, eng := open(t, "CPU", path, "", 0)
	if !s.Stepped(len(prompt)) || s.Stepped(1) || s.Stepped(DefaultStepPrompt+1) {
		t.Fatalf("Stepped(%d) %v, Stepped(1) %v, Stepped(%d) %v", len(prompt), s.Stepped(len(prompt)), s.Stepped(1), DefaultStepPrompt+1, s.Stepped(DefaultStepPrompt+1))
	}
	got, err := s.Prefill(prompt)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(got, want); e > 1e-4 {
		t.Fatalf("stepped prefill: logits differ from the reference by %.3g (relative)", e)
	}
	stepped := append([]float32(nil), got...)
	compiled := eng.Stats.Compiled
	steps, eng2 := open(t, "CPU", path, "", 0)
	logits, err := steps.Prefill(prompt[:1])
	for pos := 1; pos < len(prompt) && err == nil; pos++ {
		logits, err = steps.Decode(prompt[pos], pos)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range stepped {
		if stepped[i] != logits[i] {
			t.Fatalf("logit %d is %g after the stepped prompt, %g after the same decode steps", i, stepped[i], logits[i])
		}
	}
	if compiled != eng2.Stats.Compiled {
		t.Errorf("the stepped prompt compiled %d kernels, the decode steps alone %d", compiled, eng2.Stats.Compiled)
	}
	f32Path, _ := writeRandom(t, dir, randomCase{"F32", "gguf", nil, 2, true}, 71)
	if f32, _ := open(t, "CPU", f32Path, "", 0); f32.Stepped(len(prompt)) {
		t.Errorf("an F32 model's %d-token prompt runs as steps", len(prompt))
	}
}
