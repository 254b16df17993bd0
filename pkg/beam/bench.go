package beam

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
)

// bench holds one kernel's search inputs: device buffers of the real sizes
// filled with random data, and the unoptimized kernel's outputs on them.
type bench struct {
	dev      backend.Device
	tgt      ir.Target // candidates are the kernel after the passes from opts on, for this target
	k        *ir.Kernel
	bufs     []backend.Buffer
	vars     []int64
	ref      [][]byte // per buffer: the unoptimized kernel's output (nil for inputs)
	baseSecs float64
	bestSecs float64 // fastest candidate so far
	serial   int     // names candidates uniquely within a translation unit
}

func newBench(dev backend.Device, tgt ir.Target, k *ir.Kernel) (*bench, error) {
	b := &bench{dev: dev, tgt: tgt, k: k, vars: make([]int64, k.NumParams), bestSecs: math.Inf(1)}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, p := range k.Bufs {
		buf, err := dev.Alloc(p.DType, int(p.Size))
		if err != nil {
			b.free()
			return nil, err
		}
		b.bufs = append(b.bufs, buf)
		fill := poison(int(p.Size) * p.DType.Size())
		if !p.Output {
			fill = randomBytes(rng, p.DType, int(p.Size))
		}
		if err := buf.CopyIn(fill); err != nil {
			b.free()
			return nil, err
		}
		_ = i
	}
	for i := range b.vars {
		b.vars[i] = int64(i + 1)
	}
	progs, err := dev.Compile([]*ir.Kernel{b.rename(k)})
	if err != nil {
		b.free()
		return nil, err
	}
	// One run: only its outputs matter (the unoptimized kernel can be
	// very slow; it is the reference, not a contender).
	d, err := progs[0].Run(b.bufs, b.vars)
	if err != nil {
		b.free()
		return nil, err
	}
	b.baseSecs = d.Seconds()
	b.ref = make([][]byte, len(k.Bufs))
	for i, p := range k.Bufs {
		if p.Output {
			b.ref[i] = make([]byte, int(p.Size)*p.DType.Size())
			if err := b.bufs[i].CopyOut(b.ref[i]); err != nil {
				b.free()
				return nil, err
			}
		}
	}
	return b, nil
}

func (b *bench) free() {
	for _, buf := range b.bufs {
		buf.Free()
	}
	b.bufs = nil
}

// rename gives a candidate its own symbol name.
func (b *bench) rename(k *ir.Kernel) *ir.Kernel {
	nk := *k
	b.serial++
	nk.Name = fmt.Sprintf("%s_beam%d", b.k.Name, b.serial)
	return &nk
}

// measure compiles the candidates together (the device compiles a batch in
// parallel), checks each one's output against the unoptimized kernel's,
// and times the ones that match until the deadline. Candidates whose opts
// do not apply, that fail to build, or that compute something else are
// dropped.
func (b *bench) measure(cands []candidate, deadline time.Time, s *Searcher) []candidate {
	var ks []*ir.Kernel
	var ok []candidate
	for _, c := range cands {
		k, err := b.tgt.Apply(b.k, c.opts)
		if err != nil {
			s.logf(3, "beam %s: %s does not apply: %v\n", b.k.Name, c.key, err)
			continue
		}
		ks = append(ks, b.rename(k))
		ok = append(ok, c)
	}
	if len(ks) == 0 {
		return nil
	}
	cstart := time.Now()
	progs, err := b.dev.Compile(ks)
	if err != nil {
		s.logf(1, "beam %s: candidates do not compile: %v\n", b.k.Name, err)
		return nil
	}
	s.logf(2, "beam %s: compiled %d candidates in %.2f s\n", b.k.Name, len(ks), time.Since(cstart).Seconds())
	var out []candidate
	for i, c := range ok {
		if time.Now().After(deadline) && !c.must {
			break
		}
		first, err := b.check(progs[i])
		if err != nil {
			s.Stats.Rejected++
			s.logf(2, "beam %s: %s rejected: %v\n", b.k.Name, c.key, err)
			continue
		}
		c.secs = first
		// Time again unless the checking run was already far behind
		// (once more for a kernel of a quarter second or longer: a
		// single run moves with the bus by more than the blocks differ).
		if first < 2*b.bestSecs {
			runs := 3
			if first >= 0.25 {
				runs = 1
			}
			if secs, err := b.time(progs[i], runs); err == nil {
				c.secs = min(first, secs)
			}
		}
		b.bestSecs = min(b.bestSecs, c.secs)
		s.logf(3, "beam %s: %s %.3f ms\n", b.k.Name, c.key, c.secs*1e3)
		out = append(out, c)
	}
	return out
}

// time runs a program runs times and returns the fastest run.
func (b *bench) time(p backend.Program, runs int) (float64, error) {
	bestSecs := math.Inf(1)
	for r := 0; r < runs; r++ {
		d, err := p.Run(b.bufs, b.vars)
		if err != nil {
			return 0, err
		}
		bestSecs = min(bestSecs, d.Seconds())
	}
	return bestSecs, nil
}

// poison is n bytes of 0xff: NaN for floats, -1 for ints.
func poison(n int) []byte {
	p := make([]byte, n)
	for j := range p {
		p[j] = 0xff
	}
	return p
}

// check poisons the outputs, runs the candidate once and compares every
// output element with the unoptimized kernel's; it returns the run's time.
// The reference ran on poisoned outputs too: an element the candidate
// fails to write shows, and a kernel that writes part of its output (a
// KV cache's row at vars[0]) leaves the rest poisoned in both.
func (b *bench) check(p backend.Program) (float64, error) {
	for i, r := range b.ref {
		if r != nil {
			if err := b.bufs[i].CopyIn(poison(len(r))); err != nil {
				return 0, err
			}
		}
	}
	d, err := p.Run(b.bufs, b.vars)
	if err != nil {
		return 0, err
	}
	for i, r := range b.ref {
		if r == nil {
			continue
		}
		got := make([]byte, len(r))
		if err := b.bufs[i].CopyOut(got); err != nil {
			return 0, err
		}
		if err := same(b.k.Bufs[i].DType, r, got); err != nil {
			return 0, fmt.Errorf("output %d: %w", i, err)
		}
	}
	return d.Seconds(), nil
}

// same compares two outputs: integers exactly, floats within a tolerance
// that allows the compiler's FMA contraction to differ between candidates
// (the order of each sum is the same in all of them).
func same(dt ir.DType, want, got []byte) error {
	n := len(want) / dt.Size()
	if !dt.IsFloat() {
		for i := 0; i < len(want); i++ {
			if want[i] != got[i] {
				return fmt.Errorf("element %d differs", i/dt.Size())
			}
		}
		return nil
	}
	vals := func(data []byte) []float64 {
		out := make([]float64, n)
		for i := range out {
			var b uint64
			for k := 0; k < dt.Size(); k++ {
				b |= uint64(data[dt.Size()*i+k]) << (8 * k)
			}
			out[i], _ = ir.FromBits(dt, b)
		}
		return out
	}
	w, g := vals(want), vals(got)
	scale := 0.0
	for _, v := range w {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			scale = max(scale, math.Abs(v))
		}
	}
	tol := 1e-4
	if dt == ir.Float16 || dt == ir.BFloat16 {
		tol = 1e-2
	}
	for i := range w {
		if math.IsNaN(w[i]) || math.IsNaN(g[i]) {
			if math.IsNaN(w[i]) != math.IsNaN(g[i]) {
				return fmt.Errorf("element %d: %g, want %g", i, g[i], w[i])
			}
			continue
		}
		if math.IsInf(w[i], 0) || math.IsInf(g[i], 0) {
			if w[i] != g[i] {
				return fmt.Errorf("element %d: %g, want %g", i, g[i], w[i])
			}
			continue
		}
		if math.Abs(w[i]-g[i]) > tol*(scale+math.Abs(w[i])) {
			return fmt.Errorf("element %d: %g, want %g", i, g[i], w[i])
		}
	}
	return nil
}

// randomBytes is search input: floats in [-1, 1), small non-negative
// integers (they may be used as counts or compared), booleans 0/1.
func randomBytes(rng *rand.Rand, dt ir.DType, n int) []byte {
	out := make([]byte, n*dt.Size())
	for i := 0; i < n; i++ {
		var b uint64
		switch {
		case dt.IsFloat():
			b = ir.Bits(dt, rng.Float64()*2-1, 0)
		case dt == ir.Bool:
			b = uint64(rng.IntN(2))
		default:
			b = uint64(rng.IntN(8))
		}
		for k := 0; k < dt.Size(); k++ {
			out[dt.Size()*i+k] = byte(b >> (8 * k))
		}
	}
	return out
}
