package generate

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// nucleusReference is top-k and top-p sampling by their definitions:
// every token's probability, all of them sorted (stable, largest first),
// the first top_k of them (0: all), the shortest prefix of those reaching
// top_p of their sum, one uniform draw over it.
func nucleusReference(logits []float32, temperature, topP float64, topK int, rng *rand.Rand) int {
	m := math.Inf(-1)
	for _, x := range logits {
		m = max(m, float64(x))
	}
	ids := make([]int, len(logits))
	ps := make([]float64, len(logits))
	var sum float64
	for i, x := range logits {
		ids[i], ps[i] = i, math.Exp((float64(x)-m)/temperature)
		sum += ps[i]
	}
	sort.SliceStable(ids, func(a, b int) bool { return ps[ids[a]] > ps[ids[b]] })
	if topK > 0 && topK < len(ids) {
		ids = ids[:topK]
		sum = 0
		for _, id := range ids {
			sum += ps[id]
		}
	}
	var kept float64
	n := 0
	for n < len(ids) && (n == 0 || kept < topP*sum) {
		kept += ps[ids[n]]
		n++
	}
	r := rng.Float64() * kept
	for _, id := range ids[:n] {
		if r -= ps[id]; r < 0 {
			return id
		}
	}
	return ids[n-1]
}

// TestSamplerMatchesReference: the sampler, which sorts only the tokens
// that can be in the nucleus (or the top k, picked with a heap), draws
// exactly the reference's tokens from the same seed: peaked, flat and tied
// logits and logits a float32 ulp apart, several temperatures, top_p values
// (1 included) and, with top_p 0.9 and 1, top_k values (0, 1, 40, the
// vocabulary and more; at 32000 at one temperature), vocabularies of 1 to
// 32000.
func TestSamplerMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(i int) float32{
		"normal": func(int) float32 { return float32(r.NormFloat64() * 3) },
		"flat":   func(int) float32 { return float32(r.Float64() * 0.01) },
		"ties":   func(i int) float32 { return float32(i % 4) },
		"peaked": func(i int) float32 { return float32(-i) * 0.5 },
		// logits a float32 ulp apart: probabilities that differ in float64
		// but round to one float32 (the radix sort's keys)
		"ulps": func(i int) float32 { return math.Float32frombits(math.Float32bits(1) + uint32(i%977)) },
	}
	for name, gen := range shapes {
		for _, vocab := range []int{1, 2, 7, 500, 32000} {
			logits := make([]float32, vocab)
			for i := range logits {
				logits[i] = gen(i)
			}
			for _, temp := range []float64{0.3, 0.8, 1.5} {
				for _, topP := range []float64{0.1, 0.5, 0.9, 0.99, 1} {
					topKs := []int{0}
					if topP >= 0.9 && (vocab <= 500 || temp == 0.8) {
						topKs = append(topKs, 1, 40, vocab, vocab+1)
					}
					for _, topK := range topKs {
						s, err := NewSampler(temp, topP, topK, 42)
						if err != nil {
							t.Fatal(err)
						}
						ref := rand.New(rand.NewPCG(42, 42^0x5851f42d4c957f2d))
						for draw := 0; draw < 5; draw++ {
							got, want := next(t, s, logits), nucleusReference(logits, temp, topP, topK, ref)
							if got != want {
								t.Fatalf("%s, vocab %d, temperature %v, top-p %v, top-k %d, draw %d: token %d, want %d", name, vocab, temp, topP, topK, draw, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestSamplerReusesBuffers: one sampler, whose buffers serve every draw,
// draws the reference's tokens across vocabularies that grow and shrink
// and logits that change at every draw, and a draw after the first
// allocates nothing.
func TestSamplerReusesBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s, err := NewSampler(0.8, 0.9, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	ref := rand.New(rand.NewPCG(7, 7^0x5851f42d4c957f2d))
	for _, vocab := range []int{500, 7, 32000, 2, 500, 1, 32000} {
		for draw := 0; draw < 4; draw++ {
			logits := make([]float32, vocab)
			for i := range logits {
				logits[i] = float32(r.NormFloat64() * 2)
			}
			if got, want := next(t, s, logits), nucleusReference(logits, 0.8, 0.9, 0, ref); got != want {
				t.Fatalf("vocabulary %d, draw %d: token %d, want %d", vocab, draw, got, want)
			}
		}
	}
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	if a := testing.AllocsPerRun(10, func() { _, _ = s.Next(logits) }); a != 0 {
		t.Errorf("a draw from 32000 logits allocates %v times, want 0", a)
	}
	s.TopK = 40
	if a := testing.AllocsPerRun(10, func() { _, _ = s.Next(logits) }); a != 0 {
		t.Errorf("a top-40 draw from 32000 logits allocates %v times, want 0", a)
	}
}

func BenchmarkSampler32000(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	s, _ := NewSampler(0.8, 0.9, 0, 1)
	for b.Loop() {
		_, _ = s.Next(logits)
	}
}

// next is s.Next, which must not fail on these logits.
func next(t *testing.T, s *Sampler, logits []float32) int {
	t.Helper()
	id, err := s.Next(logits)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSamplerRefusesNonFinite: logits with a NaN or +Inf give an error
// naming the first such id, and logits with no finite value one too,
// greedy or not (they made a sampling draw index its candidates at -1);
// a -Inf logit is a token never drawn.
func TestSamplerRefusesNonFinite(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, temp := range []float64{0, 0.8} {
		s, err := NewSampler(temp, 0.9, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			logits []float32
			want   string
		}{
			{[]float32{1, nan, 2}, "logit for id 1 of 3 is NaN"},
			{[]float32{1, 2, inf}, "logit for id 2 of 3 is +Inf"},
			{[]float32{-inf, -inf}, "none of the model's 2 logits is finite"},
			{nil, "none of the model's 0 logits"},
		} {
			if _, err := s.Next(c.logits); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("temperature %v, logits %v: error %v, want one naming %q", temp, c.logits, err, c.want)
			}
		}
		for range 20 {
			if id, err := s.Next([]float32{-inf, 5, 4.5, -inf}); err != nil || (temp == 0 && id != 1) || id == 0 || id == 3 {
				t.Fatalf("temperature %v, logits with -Inf: %d, %v", temp, id, err)
			}
		}
	}
}
