package llamatest

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"tgc/pkg/quant"

	"tgc/pkg/llama"
	"tgc/pkg/testmodels"
)

// TestStories260KGreedy: the reference, reading the llama2.c checkpoint,
// generates exactly the 200 ids llama2.c's run.c generated after BOS.
func TestStories260KGreedy(t *testing.T) {
	exp := testmodels.LoadExpected(t).Stories260K.Greedy
	m, err := llama.Open(testmodels.Path(t, "stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, err := NewReference(m)
	if err != nil {
		t.Fatal(err)
	}
	ids, gap, err := r.Greedy(exp.PromptIDs, exp.Steps)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids, exp.IDs) {
		for i := range ids {
			if ids[i] != exp.IDs[i] {
				t.Fatalf("greedy ids differ first at step %d: got %v, want %v", i, ids[i:min(i+5, len(ids))], exp.IDs[i:min(i+5, len(ids))])
			}
		}
	}
	t.Logf("smallest top-1/top-2 logit gap over the 200 steps: %.4g", gap)
}

func openStories(t *testing.T) *llama.Model {
	t.Helper()
	m, err := llama.Open(testmodels.Path(t, "stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func reference(t *testing.T, m *llama.Model) *Reference {
	t.Helper()
	r, err := NewReference(m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// logitsAt runs the reference over ids and returns the logits after each.
func logitsAt(t *testing.T, r *Reference, ids []int) [][]float64 {
	t.Helper()
	s := r.NewState()
	var out [][]float64
	for pos, id := range ids {
		l, err := r.Forward(s, id, pos)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func maxRelDiff(a, b [][]float64) float64 {
	var worst float64
	for i := range a {
		var scale float64
		for _, v := range b[i] {
			scale = max(scale, math.Abs(v))
		}
		for j := range a[i] {
			worst = max(worst, math.Abs(a[i][j]-b[i][j])/scale)
		}
	}
	return worst
}

// TestStories260KAsGGUF converts the checkpoint to GGUF (F32): the GGUF
// path gives bit-identical logits and the same greedy ids.
func TestStories260KAsGGUF(t *testing.T) {
	m := openStories(t)
	w, err := Weights(m)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteGGUF(&buf, m.Config, w, nil); err != nil {
		t.Fatal(err)
	}
	g, err := OpenBytes("stories260K.gguf", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if g.Config != m.Config {
		t.Fatalf("GGUF config %+v, llama2.c %+v", g.Config, m.Config)
	}
	exp := testmodels.LoadExpected(t).Stories260K.Greedy
	ids := append([]int{1}, exp.IDs[:20]...)
	if d := maxRelDiff(logitsAt(t, reference(t, g), ids), logitsAt(t, reference(t, m), ids)); d != 0 {
		t.Errorf("GGUF and llama2.c logits differ by %g", d)
	}
	got, _, err := reference(t, g).Greedy(exp.PromptIDs, 40)
	if err != nil || !reflect.DeepEqual(got, exp.IDs[:40]) {
		t.Errorf("greedy from the GGUF file: %v, %v", got, err)
	}
}

var small = llama.Config{Dim: 256, HiddenDim: 512, Layers: 2, Heads: 8, KVHeads: 2, VocabSize: 96,
	ContextLength: 32, RopeDim: 32, RopeTheta: 10000, NormEps: 0x1p-17} // float32-exact, as GGUF stores it

// TestEveryType writes a random model in every tensor type (and the Q4_K_M
// mix): read back through GGUF it must give exactly the logits of the same
// weights quantized and dequantized in memory, and stay near the F32
// logits.
func TestEveryType(t *testing.T) {
	w := RandomWeights(small, 1)
	ids := []int{1, 17, 42, 5, 88, 3}
	f32, err := ModelOf(small, w)
	if err != nil {
		t.Fatal(err)
	}
	exact := logitsAt(t, reference(t, f32), ids)
	for _, tc := range []struct {
		name   string
		typeOf TypeFunc
		near   float64 // bound on the relative difference to F32
	}{
		{"F32", AllAs(quant.F32), 0}, {"F16", AllAs(quant.F16), 2e-3}, {"BF16", AllAs(quant.BF16), 2e-2},
		{"Q8_0", AllAs(quant.Q8_0), 2e-2}, {"Q4_0", AllAs(quant.Q4_0), 0.5}, {"Q4_1", AllAs(quant.Q4_1), 0.5},
		{"Q2_K", AllAs(quant.Q2_K), 2}, {"Q3_K", AllAs(quant.Q3_K), 1},
		{"Q4_K", AllAs(quant.Q4_K), 0.5}, {"Q6_K", AllAs(quant.Q6_K), 0.2}, {"Q4_K_M", MixQ4KM, 0.5},
		{"IQ4_NL", AllAs(quant.IQ4_NL), 0.5}, {"IQ4_XS", AllAs(quant.IQ4_XS), 0.5},
	} {
		var buf bytes.Buffer
		if err := WriteGGUF(&buf, small, w, tc.typeOf); err != nil {
			t.Fatal(err)
		}
		m, err := OpenBytes(tc.name+".gguf", buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		for name, tn := range m.Tensors {
			if tn.Type != tc.typeOf(name) {
				t.Fatalf("%s: tensor %q is %v", tc.name, name, tn.Type)
			}
		}
		// The same rounding done in memory.
		rounded := map[string][]float32{}
		for name, x := range w {
			typ := tc.typeOf(name)
			q, _ := quant.Quantize(typ, x)
			y := make([]float32, len(x))
			quant.Dequantize(typ, y, q)
			rounded[name] = y
		}
		mem, _ := ModelOf(small, rounded)
		got := logitsAt(t, reference(t, m), ids)
		if d := maxRelDiff(got, logitsAt(t, reference(t, mem), ids)); d != 0 {
			t.Errorf("%s: the file's logits differ from the same weights in memory by %g", tc.name, d)
		}
		if d := maxRelDiff(got, exact); d > tc.near || (tc.near > 0 && d == 0) {
			t.Errorf("%s: logits differ from F32 by %g (bound %g)", tc.name, d, tc.near)
		}
	}
}

// TestGQAIsSharedMHA: a grouped-query model equals the multi-head model
// whose key/value heads are copies, each serving its group of query heads
// (consecutive query heads share a key/value head).
func TestGQAIsSharedMHA(t *testing.T) {
	gqa := small
	w := RandomWeights(gqa, 2)
	mha := gqa
	mha.KVHeads = mha.Heads
	wm := map[string][]float32{}
	hd, group := gqa.HeadDim(), gqa.Heads/gqa.KVHeads
	for name, x := range w {
		if !strings.HasSuffix(name, "attn_k.weight") && !strings.HasSuffix(name, "attn_v.weight") {
			wm[name] = x
			continue
		}
		var y []float32
		for h := range mha.Heads {
			kv := h / group
			y = append(y, x[kv*hd*gqa.Dim:(kv+1)*hd*gqa.Dim]...)
		}
		wm[name] = y
	}
	a, _ := ModelOf(gqa, w)
	b, _ := ModelOf(mha, wm)
	ids := []int{3, 9, 27, 81, 50}
	if d := maxRelDiff(logitsAt(t, reference(t, a), ids), logitsAt(t, reference(t, b), ids)); d > 1e-12 {
		t.Errorf("GQA and the equivalent MHA differ by %g", d)
	}
	// And the mapping matters: interleaving the copies instead changes the
	// result, so the test can tell.
	for name, x := range wm {
		if strings.HasSuffix(name, "attn_k.weight") {
			var y []float32
			for h := range mha.Heads {
				kv := h % gqa.KVHeads
				y = append(y, w[name][kv*hd*gqa.Dim:(kv+1)*hd*gqa.Dim]...)
			}
			_ = x
			wm[name] = y
		}
	}
	c, _ := ModelOf(mha, wm)
	if d := maxRelDiff(logitsAt(t, reference(t, a), ids), logitsAt(t, reference(t, c), ids)); d < 1e-3 {
		t.Errorf("interleaved key heads change the logits by only %g", d)
	}
}

// TestClassifierAndLlama2c: an untied model stores output.weight; with a copy
// of the embedding it equals the tied model. Both round-trip through
// llama2.c files (v0 and v1) and GGUF with identical logits.
func TestClassifierAndLlama2c(t *testing.T) {
	tied := small
	tied.Tied = true
	tied.RopeDim = tied.HeadDim()
	tied.NormEps = llama.Llama2cNormEps
	w := RandomWeights(tied, 3)
	untied := tied
	untied.Tied = false
	wu := map[string][]float32{"output.weight": w["token_embd.weight"]}
	for k, v := range w {
		wu[k] = v
	}
	ids := []int{1, 2, 3, 95, 0}
	var base [][]float64
	for _, tc := range []struct {
		cfg     llama.Config
		w       map[string][]float32
		version int // llama2.c version, -1 for GGUF
	}{{tied, w, 0}, {tied, w, 1}, {tied, w, -1}, {untied, wu, 0}, {untied, wu, 1}, {untied, wu, -1}} {
		var buf bytes.Buffer
		var err error
		if tc.version < 0 {
			err = WriteGGUF(&buf, tc.cfg, tc.w, nil)
		} else {
			err = WriteLlama2c(&buf, tc.version, tc.cfg, tc.w)
		}
		if err != nil {
			t.Fatal(err)
		}
		m, err := OpenBytes("m", buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if m.Tied != tc.cfg.Tied {
			t.Fatalf("tied = %v, want %v", m.Tied, tc.cfg.Tied)
		}
		got := logitsAt(t, reference(t, m), ids)
		if base == nil {
			base = got
		} else if d := maxRelDiff(got, base); d != 0 {
			t.Errorf("tied %v, version %d: logits differ by %g", tc.cfg.Tied, tc.version, d)
		}
	}
	// A different classifier does change the logits.
	wu["output.weight"] = RandomWeights(untied, 4)["output.weight"]
	m, _ := ModelOf(untied, wu)
	if d := maxRelDiff(logitsAt(t, reference(t, m), ids), base); d < 0.1 {
		t.Errorf("a separate classifier changed the logits by only %g", d)
	}
}

// DecisiveSeed gives a random model of the small config whose greedy
// decoding from BOS has top-1/top-2 gaps of at least 0.1 over 16 steps
// (seeds 1-12 range from 0.011 to 0.146), so that implementations that
// round differently still agree on the ids.
const DecisiveSeed = 6

func TestRandomModelIsDecisive(t *testing.T) {
	m, _ := ModelOf(small, RandomWeights(small, DecisiveSeed))
	_, gap, err := reference(t, m).Greedy([]int{1}, 16)
	if err != nil {
		t.Fatal(err)
	}
	if gap < 0.1 {
		t.Errorf("smallest greedy logit gap %g; pick another seed", gap)
	}
	t.Logf("smallest greedy gap %.3g", gap)
}

// TestLlama3RopeFactors: the divisors of Llama 3.1's scaling (factor 8,
// low/high frequency factors 1 and 4) for a head of 8 rotated dimensions,
// theta 10000 (pair frequencies 1, 0.1, 0.01, 0.001) and an original
// context of 128 (wavelengths under 32 kept, over 128 slowed 8x): pair 1's
// wavelength 20π is between, blended by s = (128·0.1/2π − 1)/3.
func TestLlama3RopeFactors(t *testing.T) {
	s := (128*0.1/(2*math.Pi) - 1) / 3
	want := []float64{1, 1 / ((1-s)/8 + s), 8, 8}
	got := Llama3RopeFactors(8, 10000, 8, 1, 4, 128)
	if len(got) != len(want) {
		t.Fatalf("%d factors, want %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-6*want[i] {
			t.Errorf("factor %d is %v, want %v", i, got[i], want[i])
		}
	}
}
