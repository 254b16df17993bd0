// Package llamatest holds what tests of LLaMA models need: an independent
// float64 reference forward pass written as plain loops (the oracle for tgc's
// tensor-engine forward), random-weight models scaled so that mistakes show,
// and writers that store them as GGUF (any tensor type) or llama2.c files.
package llamatest

import (
	"fmt"
	"math"

	"tgc/pkg/llama"
)

// Reference is a model's weights widened to float64, and the forward pass
// over them, one token at a time, as llama2.c's run.c computes it.
type Reference struct {
	llama.Config
	emb, cls  [][]float64 // [vocab][dim]; cls is emb when tied
	layers    []refLayer
	finalNorm []float64
	// ropeFactors divide the pairs' frequencies (rope_freqs.weight; nil: 1)
	ropeFactors []float64
	// KVRound, when not nil, rounds every key and value as the cache
	// stores it (a cache of 16-bit floats: tgc generate --kv-cache f16).
	KVRound func(float64) float64
}

type refLayer struct {
	attnNorm, ffnNorm []float64
	wq, wk, wv, wo    [][]float64 // [out][in]
	gate, down, up    [][]float64
}

// NewReference dequantizes every weight of m (in float32, as ggml does)
// and widens it to float64.
func NewReference(m *llama.Model) (*Reference, error) {
	r := &Reference{Config: m.Config}
	get := func(name string) ([][]float64, error) {
		t, ok := m.Tensors[name]
		if !ok {
			return nil, fmt.Errorf("tensor %q is missing", name)
		}
		x, err := t.Floats()
		if err != nil {
			return nil, err
		}
		cols := t.Shape[len(t.Shape)-1]
		rows := make([][]float64, len(x)/cols)
		for i := range rows {
			rows[i] = make([]float64, cols)
			for j := range cols {
				rows[i][j] = float64(x[i*cols+j])
			}
		}
		return rows, nil
	}
	vec := func(name string) ([]float64, error) {
		rows, err := get(name)
		if err != nil {
			return nil, err
		}
		return rows[0], nil
	}
	var err error
	if r.emb, err = get("token_embd.weight"); err != nil {
		return nil, err
	}
	r.cls = r.emb
	if !m.Tied {
		if r.cls, err = get("output.weight"); err != nil {
			return nil, err
		}
	}
	if r.finalNorm, err = vec("output_norm.weight"); err != nil {
		return nil, err
	}
	if m.RopeFactors {
		if r.ropeFactors, err = vec("rope_freqs.weight"); err != nil {
			return nil, err
		}
	}
	for l := range m.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		var L refLayer
		for _, w := range []struct {
			name string
			dst  *[][]float64
		}{{"attn_q", &L.wq}, {"attn_k", &L.wk}, {"attn_v", &L.wv}, {"attn_output", &L.wo},
			{"ffn_gate", &L.gate}, {"ffn_down", &L.down}, {"ffn_up", &L.up}} {
			if *w.dst, err = get(p + w.name + ".weight"); err != nil {
				return nil, err
			}
		}
		if L.attnNorm, err = vec(p + "attn_norm.weight"); err != nil {
			return nil, err
		}
		if L.ffnNorm, err = vec(p + "ffn_norm.weight"); err != nil {
			return nil, err
		}
		r.layers = append(r.layers, L)
	}
	return r, nil
}

// State is the key/value cache of one sequence.
type State struct {
	k, v [][][]float64 // [layer][pos][kvdim]
}

// NewState returns an empty cache.
func (r *Reference) NewState() *State {
	return &State{k: make([][][]float64, r.Layers), v: make([][][]float64, r.Layers)}
}

// Forward runs token at position pos (which must be the number of tokens
// already in s) and returns the logits of the next token.
func (r *Reference) Forward(s *State, token, pos int) ([]float64, error) {
	if token < 0 || token >= r.VocabSize {
		return nil, fmt.Errorf("token %d is outside the vocabulary of %d", token, r.VocabSize)
	}
	if pos != len(s.k[0]) {
		return nil, fmt.Errorf("position %d, but the cache holds %d tokens", pos, len(s.k[0]))
	}
	hd := r.HeadDim()
	group := r.Heads / r.KVHeads // query heads per key/value head
	x := append([]float64(nil), r.emb[token]...)
	for l, L := range r.layers {
		xb := rmsNorm(x, L.attnNorm, r.NormEps)
		q, k, v := matVec(L.wq, xb), matVec(L.wk, xb), matVec(L.wv, xb)
		for h := range r.Heads {
			r.rope(q[h*hd:(h+1)*hd], pos)
		}
		for h := range r.KVHeads {
			r.rope(k[h*hd:(h+1)*hd], pos)
		}
		if r.KVRound != nil {
			for i := range k {
				k[i], v[i] = r.KVRound(k[i]), r.KVRound(v[i])
			}
		}
		s.k[l] = append(s.k[l], k)
		s.v[l] = append(s.v[l], v)

		out := make([]float64, r.Heads*hd)
		for h := range r.Heads {
			kv := h / group
			qh := q[h*hd : (h+1)*hd]
			att := make([]float64, pos+1)
			for t := range pos + 1 {
				kt := s.k[l][t][kv*hd : (kv+1)*hd]
				for i := range hd {
					att[t] += qh[i] * kt[i]
				}
				att[t] /= math.Sqrt(float64(hd))
			}
			softmax(att)
			oh := out[h*hd : (h+1)*hd]
			for t := range pos + 1 {
				vt := s.v[l][t][kv*hd : (kv+1)*hd]
				for i := range hd {
					oh[i] += att[t] * vt[i]
				}
			}
		}
		add(x, matVec(L.wo, out))

		xb = rmsNorm(x, L.ffnNorm, r.NormEps)
		gate, up := matVec(L.gate, xb), matVec(L.up, xb)
		for i := range gate {
			gate[i] = gate[i] / (1 + math.Exp(-gate[i])) * up[i] // SiLU(gate) * up
		}
		add(x, matVec(L.down, gate))
	}
	return matVec(r.cls, rmsNorm(x, r.finalNorm, r.NormEps)), nil
}

// rope rotates the pairs (2i, 2i+1) of one head's first RopeDim dimensions
// by pos * theta^(-2i/RopeDim), the position divided by the linear scaling
// factor and the frequency by the pair's rope_freqs divisor where the model
// has them (llama.cpp's ggml_rope_ext: theta/ff, times freq_scale).
func (r *Reference) rope(head []float64, pos int) {
	p := float64(pos)
	if r.RopeLinear > 0 {
		p /= r.RopeLinear
	}
	for i := 0; i < r.RopeDim; i += 2 {
		angle := p * math.Pow(r.RopeTheta, -float64(i)/float64(r.RopeDim))
		if r.ropeFactors != nil {
			angle /= r.ropeFactors[i/2]
		}
		c, s := math.Cos(angle), math.Sin(angle)
		a, b := head[i], head[i+1]
		head[i], head[i+1] = a*c-b*s, a*s+b*c
	}
}

// Greedy feeds prompt, then generates n tokens, each the argmax of the
// logits (the lowest id on ties), and returns them. It also returns the
// smallest gap between the best and second-best logit over the n choices,
// which tells how robust the sequence is to rounding.
func (r *Reference) Greedy(prompt []int, n int) (ids []int, minGap float64, err error) {
	if len(prompt) == 0 {
		return nil, 0, fmt.Errorf("empty prompt")
	}
	if len(prompt)+n-1 > r.ContextLength {
		return nil, 0, fmt.Errorf("%d prompt tokens and %d new ones exceed the context of %d", len(prompt), n, r.ContextLength)
	}
	s := r.NewState()
	minGap = math.Inf(1)
	tok := prompt[0]
	for pos := 0; len(ids) < n; pos++ {
		logits, err := r.Forward(s, tok, pos)
		if err != nil {
			return nil, 0, err
		}
		if pos+1 < len(prompt) {
			tok = prompt[pos+1]
			continue
		}
		best, gap := Argmax(logits)
		minGap = min(minGap, gap)
		ids = append(ids, best)
		tok = best
	}
	return ids, minGap, nil
}

// Argmax returns the index of the largest value (the first on ties) and
// its margin over the second largest.
func Argmax(x []float64) (int, float64) {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	second := math.Inf(-1)
	for i, v := range x {
		if i != best && v > second {
			second = v
		}
	}
	return best, x[best] - second
}

func rmsNorm(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	scale := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = w[i] * x[i] * scale
	}
	return out
}

func matVec(w [][]float64, x []float64) []float64 {
	out := make([]float64, len(w))
	for i, row := range w {
		var sum float64
		for j, v := range row {
			sum += v * x[j]
		}
		out[i] = sum
	}
	return out
}

func softmax(x []float64) {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		x[i] = math.Exp(v - m)
		sum += x[i]
	}
	for i := range x {
		x[i] /= sum
	}
}

func add(x, y []float64) {
	for i := range x {
		x[i] += y[i]
	}
}
