package ir

// StoreSpan bounds the elements a kernel's stores write into one of its
// buffers, as an affine function of its vars: every element written with
// vars v lies in [Lo + Σ Coef[i]·v[i], Hi + Σ Coef[i]·v[i]]. A KV cache's
// write at start_pos is a row at vars[0]·row: the CPU device populates a
// lazily mapped buffer's pages before such writes (a page first written
// inside a kernel cost that launch 5-7 µs in the Xeon guest).
type StoreSpan struct {
	Buf    int
	Lo, Hi int64
	Coef   []int64 // one per var
}

// At is the span's first and last element for vars (missing vars are 0).
func (s StoreSpan) At(vars []int64) (lo, hi int64) {
	lo, hi = s.Lo, s.Hi
	for i, c := range s.Coef {
		if i < len(vars) {
			lo += c * vars[i]
			hi += c * vars[i]
		}
	}
	return lo, hi
}

// StoreSpans returns a span for each buffer k stores into whose store
// indices are affine in the vars (an over-approximation by the indices'
// bounds over the loops); a buffer whose are not, or whose bounds are not
// finite, has none.
func (k *Kernel) StoreSpans() []StoreSpan {
	idx := map[int][]*Expr{}
	var bufs []int
	Walk(k.Stores, func(e *Expr) {
		if e.Op == OpStore {
			b := e.Arg.(int)
			if _, seen := idx[b]; !seen {
				bufs = append(bufs, b)
			}
			idx[b] = append(idx[b], e.Src[0])
		}
	})
	var spans []StoreSpan
	for _, b := range bufs {
		if s, ok := storeSpan(b, idx[b], k.NumParams); ok {
			spans = append(spans, s)
		}
	}
	return spans
}

// storeSpan is the span of the indices with every var fixed at 0, then
// each at 1 alone (its coefficient), checked at all of them 2.
func storeSpan(buf int, indices []*Expr, params int) (StoreSpan, bool) {
	at := func(vals []int64) (int64, int64, bool) {
		b := NewBuilder()
		memo := map[*Expr]*Expr{}
		fix := func(e *Expr) *Expr {
			if e.Op == OpParam && e.ParamIndex() < len(vals) {
				return b.Int(vals[e.ParamIndex()])
			}
			return nil
		}
		lo, hi := int64(0), int64(0)
		for i, x := range indices {
			r := b.Rebuild(x, fix, memo)
			if r.Min <= -satLimit || r.Max >= satLimit {
				return 0, 0, false
			}
			if i == 0 || r.Min < lo {
				lo = r.Min
			}
			if i == 0 || r.Max > hi {
				hi = r.Max
			}
		}
		return lo, hi, true
	}
	vals := make([]int64, params)
	lo, hi, ok := at(vals)
	if !ok {
		return StoreSpan{}, false
	}
	s := StoreSpan{Buf: buf, Lo: lo, Hi: hi, Coef: make([]int64, params)}
	for i := range params {
		vals[i] = 1
		l, h, ok := at(vals)
		vals[i] = 0
		if !ok || h-l != hi-lo {
			return StoreSpan{}, false
		}
		s.Coef[i] = l - lo
	}
	if params > 0 {
		for i := range vals {
			vals[i] = 2
		}
		l, h, ok := at(vals)
		if wl, wh := s.At(vals); !ok || l != wl || h != wh {
			return StoreSpan{}, false // not affine
		}
	}
	return s, true
}
