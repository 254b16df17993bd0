// Package generate drives a language model script (models/llama.tg): it
// loads the checkpoint through the script, runs the prompt as one batch,
// then one decode step per token, and samples each next token. tgc
// generate is this package plus flags and output; the tests use it to
// compare the engine's logits with pkg/llamatest's reference.
//
// The script owns the model (the architecture, the KV cache, the decode
// step under TinyJit); this package owns what is not the model: tokens,
// sampling, positions and their limits.
package generate

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"unsafe"

	"go.starlark.net/starlark"

	"tgc/pkg/backend"
	"tgc/pkg/fileaccess"
	"tgc/pkg/ir"
	"tgc/pkg/llama"
	"tgc/pkg/realize"
	"tgc/pkg/script"
	"tgc/pkg/script/nnlib"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tensor"
	"tgc/pkg/tokenizer"
)

// Options say what to load.
type Options struct {
	Model string // checkpoint path (GGUF or llama2.c)
	// Tokenizer is a tokenizer.bin or GGUF path ("": the model's own GGUF
	// tokenizer; a llama2.c model has none, so ids only).
	Tokenizer string
	// MaxContext bounds the positions (0: the model's context length).
	MaxContext int
	// PrefillChunk is the most positions of a prompt run as one batch (0:
	// the script's default); a longer prompt runs in chunks of it.
	PrefillChunk int
	// KVCache is the KV cache's element type, one of KVCacheTypes (""
	// the script's default, f32).
	KVCache string
	// StepPrompt: a prompt of at most this many tokens runs token by token
	// through the jitted decode step instead of as one batch (0: up to
	// DefaultStepPrompt tokens for a model with quantized matrices, none
	// otherwise; -1: never).
	StepPrompt int
	// Script is the model script (models/llama.tg) and its file name.
	Script     []byte
	ScriptName string
	Context    *tensor.Context // the run's tensors (engine, device)
	Files      *fileaccess.Policy
	Stdout     io.Writer // the script's print (nil: os.Stdout)
	Stderr     io.Writer // its warnings (nil: os.Stderr)
}

// KVCacheTypes are the KV cache's element types models/llama.tg takes
// (--kv-cache): float32, and float16 and bfloat16 at half the memory.
func KVCacheTypes() []string { return []string{"f32", "f16", "bf16"} }

// Session is a loaded model.
type Session struct {
	mod     *script.Module
	model   starlark.Value // the script's Transformer: model(tokens, start_pos) gives the logits
	ctx     *tensor.Context
	Tok     *tokenizer.Tokenizer // nil: ids only
	Vocab   int
	Context int // positions the KV cache holds
	// stepPrompt is the longest prompt run as decode steps (Options).
	stepPrompt int
	// ModelContext is the positions the model was trained for (Context
	// is at most it).
	ModelContext int
	// WeightBytes is the size of the weights as stored (what a decode
	// step reads).
	WeightBytes int64
	// The logits of the last call, as read and decoded: one buffer of each
	// for every step (a vocabulary's logits were most of a step's garbage).
	raw    []byte
	logits []float32
}

// Open loads the model (and the tokenizer) through the script.
func Open(o Options) (*Session, error) {
	if o.KVCache != "" && !slices.Contains(KVCacheTypes(), o.KVCache) {
		return nil, fmt.Errorf("KV cache type %q: must be one of %s", o.KVCache, strings.Join(KVCacheTypes(), ", "))
	}
	f, err := o.Files.Open(o.Model)
	if err != nil {
		return nil, err
	}
	isGGUF := llama.IsGGUF(f)
	m, err := llama.OpenFile(f) // the header, for checks and sizes (the script maps it too)
	f.Close()
	if err != nil {
		return nil, err
	}
	var weightBytes int64
	quantized := false
	for _, w := range m.Weights() {
		t := m.Tensors[w.Name]
		weightBytes += int64(len(t.Data))
		quantized = quantized || t.Type.BlockSize() > 1
	}
	cfg := m.Config
	ownTokenizer := false
	if m.GGUF != nil {
		_, ownTokenizer = m.GGUF.Lookup("tokenizer.ggml.model")
	}
	m.Close()
	if o.MaxContext < 0 {
		return nil, fmt.Errorf("context %d: must not be negative", o.MaxContext)
	}
	ctxLen := cfg.ContextLength
	if o.MaxContext > 0 {
		ctxLen = min(ctxLen, o.MaxContext)
	}
	if ctxLen < 2 {
		return nil, fmt.Errorf("%s: a context of %d positions leaves no room to generate", o.Model, ctxLen)
	}
	mod, err := script.Load(script.Options{File: o.ScriptName, Src: o.Script, Stdout: o.Stdout, Stderr: o.Stderr, Context: o.Context, Files: o.Files})
	if err != nil {
		return nil, err
	}
	s := &Session{mod: mod, ctx: o.Context, Vocab: cfg.VocabSize, Context: ctxLen, ModelContext: cfg.ContextLength, WeightBytes: weightBytes,
		stepPrompt: o.StepPrompt}
	if o.StepPrompt == 0 && quantized {
		s.stepPrompt = DefaultStepPrompt
	}
	args := starlark.Tuple{starlark.String(o.Model), starlark.MakeInt(ctxLen), starlark.Bool(isGGUF)}
	var kwargs []starlark.Tuple
	if o.PrefillChunk > 0 {
		kwargs = append(kwargs, starlark.Tuple{starlark.String("prefill_chunk"), starlark.MakeInt(o.PrefillChunk)})
	}
	if o.KVCache != "" {
		kwargs = append(kwargs, starlark.Tuple{starlark.String("kv_cache"), starlark.String(o.KVCache)})
	}
	s.model, err = mod.CallKw("load_model", args, kwargs)
	if err != nil {
		mod.Close()
		return nil, err
	}
	tokPath := o.Tokenizer
	if tokPath == "" && ownTokenizer {
		tokPath = o.Model
	}
	if tokPath != "" {
		v, err := mod.Call("tokenizer", starlark.String(tokPath))
		if err != nil {
			mod.Close()
			return nil, err
		}
		s.Tok = v.(*nnlib.Tokenizer).T
		if s.Tok.Len() != s.Vocab {
			mod.Close()
			return nil, fmt.Errorf("%s: the tokenizer has %d tokens, the model %s a vocabulary of %d", tokPath, s.Tok.Len(), o.Model, s.Vocab)
		}
	}
	return s, nil
}

// Close ends the script's run.
func (s *Session) Close() { s.mod.Close() }

func (s *Session) tokens(ids []int) (starlark.Value, error) {
	vals := make([]float64, len(ids))
	for i, id := range ids {
		if id < 0 || id >= s.Vocab {
			return nil, fmt.Errorf("token id %d is outside the vocabulary of %d", id, s.Vocab)
		}
		vals[i] = float64(id)
	}
	t, err := s.ctx.FromFloats(ir.Int32, []int{1, len(ids)}, vals)
	if err != nil {
		return nil, err
	}
	return tensorlib.NewTensor(t), nil
}

// littleEndian: the host stores a float32 as the tensor's bytes do.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// logitsOf reads the logits the model returned. F32 logits are read into
// the session's buffers, decoded in place: the slice returned is valid
// until the next Prefill or Decode.
func (s *Session) logitsOf(v starlark.Value) ([]float32, error) {
	t, ok := v.(*tensorlib.Tensor)
	if !ok {
		return nil, fmt.Errorf("the model returned a %s, not the logits", v.Type())
	}
	x := t.Tensor()
	// The logits are copied out: a jitted step's output memory goes back
	// to the device now, for the next step to write (not a fresh mapping,
	// whose pages would fault inside the classifier's kernel).
	defer x.Release()
	if x.DType() == ir.Float32 {
		n := x.Numel()
		if len(s.logits) != n {
			s.logits, s.raw = make([]float32, n), make([]byte, 4*n)
			if littleEndian && n > 0 {
				// the logits' own memory: the bytes need no decoding
				s.raw = unsafe.Slice((*byte)(unsafe.Pointer(&s.logits[0])), 4*n)
			}
		}
		if err := x.BytesInto(s.raw); err != nil {
			return nil, err
		}
		if !littleEndian {
			for i := range s.logits {
				s.logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(s.raw[4*i:]))
			}
		}
		return s.logits, nil
	}
	f, err := x.Floats()
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(f))
	for i, v := range f {
		out[i] = float32(v)
	}
	return out, nil
}

// DefaultStepPrompt is the longest prompt of a quantized model that runs
// token by token through the jitted decode step. A batch dequantizes each
// matrix into float32 scratch first (written and read back: 8 bytes per
// weight of memory traffic, where a step reads the 0.56 to 1.06 bytes of a
// Q4_K or Q8_0 weight) and compiles the prompt's schedule: on a
// Llama-3.2-1B-shaped Q4_K_M model, 9 tokens took 0.63-0.70 s as a batch
// and 1.65-2.2 s of compile, 8 tokens 0.41 s and 0.78 s as steps
// (docs/llama.md).
const DefaultStepPrompt = 8

// Prefill runs the prompt from position 0 and returns the logits of the
// token after it (valid until the next Prefill or Decode): as one batch
// (in chunks, models/llama.tg), or token by token through the jitted step
// when it is short and the model quantized (Options.StepPrompt).
func (s *Session) Prefill(ids []int) ([]float32, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("the prompt has no tokens")
	}
	if len(ids) >= s.Context {
		return nil, fmt.Errorf("the prompt has %d tokens; the context holds %d positions (at most %d prompt tokens leave room for one new token)", len(ids), s.Context, s.Context-1)
	}
	if s.Stepped(len(ids)) {
		var v starlark.Value
		for pos, id := range ids {
			var err error
			if v, err = s.step(id, pos); err != nil {
				return nil, err
			}
		}
		return s.logitsOf(v)
	}
	t, err := s.tokens(ids)
	if err != nil {
		return nil, err
	}
	if e, ok := s.ctx.Engine().(*realize.Engine); ok {
		// the prompt's scratch is written and read once a chunk
		e.SetOneShotScratch(true)
		defer e.SetOneShotScratch(false)
	}
	v, err := s.mod.CallValue(s.model, t, starlark.MakeInt(0))
	if err != nil {
		return nil, err
	}
	logits, err := s.logitsOf(v)
	s.releasePooled()
	return logits, err
}

// Stepped reports whether Prefill runs a prompt of n tokens as decode
// steps (a prompt of one token is the step anyway).
func (s *Session) Stepped(n int) bool { return n > 1 && n <= s.stepPrompt }

// WarmUp runs the one-token step on id at position 0 and drops its
// logits: the decode's kernels compile now, while the KV cache is empty,
// not after a prompt of several tokens beside a cache that holds it
// (tgc generate collects garbage more often there, to keep its peak down:
// the step's compile took twice as long). Its cache position is the
// prompt's first, which Prefill writes again; the logits after Prefill
// are the same bits as without it. A one-token prompt is that step
// already.
func (s *Session) WarmUp(id int) error {
	_, err := s.step(id, 0)
	return err
}

// step runs the model on one token at pos: the jitted step.
func (s *Session) step(id, pos int) (starlark.Value, error) {
	t, err := s.tokens([]int{id})
	if err != nil {
		return nil, err
	}
	return s.mod.CallValue(s.model, t, starlark.MakeInt(pos))
}

// ReleaseMemory gives back the memory the decode steps no longer need once
// their step replays (TinyJit): the device's pooled buffers (the scratch
// of the steps run before the capture) and the Go heap's free pages.
func (s *Session) ReleaseMemory() {
	debug.FreeOSMemory() // first: its collection frees device buffers too
	s.releasePooled()
}

// releasePooled gives the device's pooled memory back after the prefill:
// its scratch (activations of the prompt's rows, a quantized model's
// dequantized weights) has sizes the decode steps do not ask for.
func (s *Session) releasePooled() {
	if e, ok := s.ctx.Engine().(*realize.Engine); ok {
		if m, ok := e.Dev.(backend.MemoryCounter); ok {
			m.ReleasePooled()
		}
	}
}

// Decode runs one token at position pos (the tokens before it are in the
// cache) and returns the logits of the next one (valid until the next
// Prefill or Decode: the session reads every step's into one buffer).
func (s *Session) Decode(id, pos int) ([]float32, error) {
	if pos < 1 || pos >= s.Context {
		return nil, fmt.Errorf("position %d is outside the context (1..%d)", pos, s.Context-1)
	}
	v, err := s.step(id, pos)
	if err != nil {
		return nil, err
	}
	return s.logitsOf(v)
}

// Sampler picks the next token: greedy at temperature 0, else from the
// softmax at the temperature, kept to the TopK most likely tokens (0: all)
// and of those to the smallest set whose probability reaches top_p of
// theirs (nucleus sampling), with its own random stream.
type Sampler struct {
	Temperature, TopP float64
	TopK              int
	rng               *rand.Rand
	// One step's probabilities and candidates, kept for the next: a
	// vocabulary's worth of each was most of a decode step's garbage.
	ps []float64
	cs []int
	// the radix sort's keys and its second buffers (sortByProb)
	keys, keys2 []uint32
	cs2         []int
}

// NewSampler checks the settings and seeds the stream.
func NewSampler(temperature, topP float64, topK int, seed uint64) (*Sampler, error) {
	if math.IsNaN(temperature) || temperature < 0 {
		return nil, fmt.Errorf("temperature %v: must be 0 (greedy) or positive", temperature)
	}
	if math.IsNaN(topP) || topP <= 0 || topP > 1 {
		return nil, fmt.Errorf("top-p %v: must be in (0, 1]", topP)
	}
	if topK < 0 {
		return nil, fmt.Errorf("top-k %d: must be 0 (all tokens) or positive", topK)
	}
	return &Sampler{Temperature: temperature, TopP: topP, TopK: topK, rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}, nil
}

// Next picks a token from logits (-Inf: a token never drawn). Logits that
// hold a NaN or +Inf, or no finite value (a model whose weights or
// activations overflowed), are an error: no distribution over the tokens
// follows from them.
func (s *Sampler) Next(logits []float32) (int, error) {
	// the largest logit and its first id (Argmax's), found in the pass
	// that checks them, compared as float32s (float64 max, with its NaN
	// and ±0 rules, was a third of a flat draw's time outside the sort and
	// the exponentials)
	unusable := func(x float32) bool { return !(x < float32(math.Inf(1))) } // NaN or +Inf
	mx, best, bad := float32(math.Inf(-1)), 0, false
	for i, x := range logits {
		if x > mx {
			mx, best = x, i
		}
		bad = bad || unusable(x)
	}
	if bad {
		i := slices.IndexFunc(logits, unusable)
		return 0, fmt.Errorf("the model's logit for id %d of %d is %v: its weights or activations overflowed", i, len(logits), logits[i])
	}
	if math.IsInf(float64(mx), -1) {
		return 0, fmt.Errorf("none of the model's %d logits is finite", len(logits))
	}
	if s.Temperature == 0 {
		return best, nil
	}
	m := float64(mx)
	if cap(s.ps) < len(logits) {
		s.ps, s.cs = make([]float64, len(logits)), make([]int, 0, len(logits))
		s.keys, s.keys2, s.cs2 = make([]uint32, len(logits)), make([]uint32, len(logits)), make([]int, len(logits))
	}
	ps := s.ps[:len(logits)]
	var sum float64
	for i, x := range logits {
		ps[i] = math.Exp((float64(x) - m) / s.Temperature)
		sum += ps[i]
	}
	// Largest first, ties in id order: the order a stable sort of all of
	// them gives.
	order := func(a, b int) int {
		if c := cmp.Compare(ps[b], ps[a]); c != 0 {
			return c
		}
		return a - b
	}
	var cs []int
	if s.TopK > 0 && s.TopK < len(ps) {
		cs = topK(s.cs[:0], ps, s.TopK, order)
		slices.Sort(cs) // in id order, as sortByProb wants them
		sum = 0
		for _, id := range cs {
			sum += ps[id] // the nucleus is top_p of what top-k kept
		}
	} else {
		// A token outside the nucleus is never drawn, so only the ones
		// that can be in it are sorted: if a token is in it, the tokens
		// before it in the order sum to less than top_p, so it and the at
		// most n-1 tokens from it on, none larger, sum to more than
		// 1-top_p: its probability is above (1-top_p)/(n-1). Half that
		// bound keeps rounding out of it.
		cut := 0.0
		if n := len(ps); n > 1 {
			cut = (1 - s.TopP) * sum / float64(n-1) / 2
		}
		cs = s.cs[:0]
		for i, p := range ps {
			if p >= cut {
				cs = append(cs, i)
			}
		}
	}
	s.sortByProb(cs, ps, order)
	var kept float64
	n := 0
	for n < len(cs) && (n == 0 || kept < s.TopP*sum) {
		kept += ps[cs[n]]
		n++
	}
	r := s.rng.Float64() * kept
	for _, id := range cs[:n] {
		if r -= ps[id]; r < 0 {
			return id, nil
		}
	}
	return cs[n-1], nil
}

// sortByProb puts cs, given in id order, in order's order: largest
// probability first, ties in id order. Many candidates (a flat
// distribution at a high temperature: most of a 32000-token vocabulary)
// take a stable radix sort, descending, of the probabilities rounded to
// float32 (a non-negative float's bits order as it does; NaN, which
// cmp.Compare puts below every number, last): four passes of n, where a
// comparison sort of 30000 took ~4 ms a token and the float64 bits eight
// passes. Rounding keeps the order of unequal keys (it never swaps two
// values), so only the runs of equal keys, two values within float32's
// precision or both below its range, are put in order's order after it.
func (s *Sampler) sortByProb(cs []int, ps []float64, order func(a, b int) int) {
	n := len(cs)
	if n < 512 {
		slices.SortFunc(cs, order)
		return
	}
	keys, keys2, cs2 := s.keys[:n], s.keys2[:n], s.cs2[:n]
	for i, id := range cs {
		if p := ps[id]; math.IsNaN(p) {
			keys[i] = math.MaxUint32
		} else {
			keys[i] = ^math.Float32bits(float32(p))
		}
	}
	src, dst := cs, cs2
	for shift := uint(0); shift < 32; shift += 8 {
		var at [257]int
		for _, k := range keys {
			at[(k>>shift)&255+1]++
		}
		if at[(keys[0]>>shift)&255+1] == n {
			continue // one digit for all: the order stands
		}
		for d := 1; d < 257; d++ {
			at[d] += at[d-1]
		}
		for i, k := range keys {
			d := (k >> shift) & 255
			keys2[at[d]], dst[at[d]] = k, src[i]
			at[d]++
		}
		keys, keys2 = keys2, keys
		src, dst = dst, src
	}
	if &src[0] != &cs[0] {
		copy(cs, src)
	}
	for i := 0; i < n; {
		j := i + 1
		for j < n && keys[j] == keys[i] {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(cs[i:j], order)
		}
		i = j
	}
}

// topK appends to cs the k ids that order puts first (a heap of k whose
// root is the last of them: n log k, not a sort of all n), in no order.
func topK(cs []int, ps []float64, k int, order func(a, b int) int) []int {
	down := func(h []int, i int) { // restore the heap below i: the last in order at the root
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && order(h[c+1], h[c]) > 0 {
				c++
			}
			if order(h[c], h[i]) <= 0 {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := range ps {
		switch {
		case len(cs) < k:
			cs = append(cs, i)
			if len(cs) == k {
				for j := k/2 - 1; j >= 0; j-- {
					down(cs, j)
				}
			}
		case order(i, cs[0]) < 0: // before the last kept
			cs[0] = i
			down(cs, 0)
		}
	}
	return cs
}

// Argmax is the index of the largest logit (the first on ties).
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
