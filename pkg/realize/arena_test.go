package realize

import (
	"math/rand/v2"
	"slices"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
)

// TestArenaPlanKeepsValues: random schedules (each kernel reading up to
// three earlier outputs, of random sizes; some results, some zero fills,
// some allowed to write over an input) run on a simulated arena: every
// launch first checks that each buffer it reads still holds its value,
// then writes its own. A plan that put two buffers live at once in the
// same bytes fails it; the arena is also never larger than all the
// buffers side by side.
func TestArenaPlanKeepsValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 2 + rng.IntN(40)
		c := &compiled{order: make([]int, n)}
		total := 0
		for i := range n {
			c.order[i] = i
			it := compiledItem{name: "k", dtype: ir.Float32, size: 1 + rng.IntN(3000), dst: -1}
			if i > 0 && rng.IntN(4) == 0 {
				it.size = c.items[rng.IntN(i)].size // a size seen before: overwrites and reuse
			}
			it.args = []ref{{idx: i}}
			for range rng.IntN(4) {
				if i > 0 {
					it.args = append(it.args, ref{idx: rng.IntN(i)})
				}
			}
			it.zeroFill = len(it.args) == 1 && rng.IntN(3) == 0
			for p, r := range it.args[1:] {
				if c.items[r.idx].size == it.size && rng.IntN(2) == 0 {
					it.overwrite = append(it.overwrite, p+1)
				}
			}
			total += (it.size*4 + arenaAlign - 1) / arenaAlign * arenaAlign
			c.items = append(c.items, it)
		}
		c.outs = []int{n - 1}
		if rng.IntN(2) == 0 {
			c.outs = append(c.outs, rng.IntN(n))
		}
		isOut := map[int]bool{}
		for _, j := range c.outs {
			isOut[j] = true
		}
		lastUse := lastUses(c)
		zeroes := trial%2 == 0
		places := placeItems(c, lastUse, isOut, zeroes)
		plan := planArena(c, places, lastUse, isOut)
		if plan.size > total {
			t.Fatalf("trial %d: arena of %d bytes for %d of buffers", trial, plan.size, total)
		}
		// exec's choices, replayed over the arena's 4-byte words
		mem := make([]int, plan.size/4)
		where := make([]int, n) // each item's word offset in the arena (-1: elsewhere)
		for pos, i := range c.order {
			it := &c.items[i]
			for _, r := range it.args[1:] {
				if o := where[r.idx]; o >= 0 {
					for w := o; w < o+c.items[r.idx].size; w++ {
						if mem[w] != r.idx+1 {
							t.Fatalf("trial %d: launch %d reads item %d, clobbered by item %d (plan %v)", trial, pos, r.idx, mem[w]-1, plan.off)
						}
					}
				}
			}
			where[i] = -1
			switch pl := places[i]; {
			case pl.zeroed:
			case pl.over >= 0:
				where[i] = where[pl.over]
			default:
				if plan.off[i] >= 0 {
					where[i] = plan.off[i] / 4
				} else if !isOut[i] {
					t.Fatalf("trial %d: scratch item %d is not in the arena", trial, i)
				}
			}
			if plan.off[i] >= 0 && plan.off[i]/4 != where[i] {
				t.Fatalf("trial %d: item %d planned at %d, written at %d", trial, i, plan.off[i], where[i]*4)
			}
			if o := where[i]; o >= 0 {
				for w := o; w < o+it.size; w++ {
					mem[w] = i + 1
				}
			}
		}
	}
}

// TestOneShotArena: a prompt-like schedule (activations of several sizes
// whose lives do not overlap, a softmax written over its scores) gives the
// same bits with its scratch carved from one arena as with buffers of its
// own, on the CPU and GO; on the CPU the arena and the pool then hold less
// than the pool does without it.
func TestOneShotArena(t *testing.T) {
	run := func(dev string, oneShot bool) ([]float64, int64, bool) {
		ctx, e, err := NewContext(dev, Options{})
		if err != nil {
			t.Skipf("%s: %v", dev, err)
		}
		if m, ok := e.Dev.(backend.MemoryCounter); ok {
			m.ReleasePooled() // the device (and its pool) outlives an engine
		}
		e.SetOneShotScratch(oneShot)
		x := seq(ctx, 96, 64)
		w1, w2, w3 := seq(ctx, 64, 192), seq(ctx, 192, 48), seq(ctx, 48, 64)
		h := x.Dot(w1).Mul(ctx.Const(0.01, ir.Float32)).Exp().Contiguous()
		s := h.Dot(h.T()).Mul(ctx.Const(0.001, ir.Float32)).Contiguous().Softmax(-1) // (96, 96) scores
		out := s.Dot(h).Dot(w2).Relu().Dot(w3).Add(x)
		got, err := out.Floats()
		if err != nil {
			t.Fatal(err)
		}
		var held int64
		m, ok := e.Dev.(backend.MemoryCounter)
		if ok {
			u := m.Memory()
			held = u.Live + u.Pooled
		}
		if oneShot && (e.arena == nil) == (dev == "CPU" || dev == "GO") {
			t.Errorf("%s: one-shot arena %v", dev, e.arena)
		}
		return got, held, ok
	}
	for _, dev := range []string{"GO", "CPU"} {
		want, without, counts := run(dev, false)
		got, with, _ := run(dev, true)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the arena's results differ from buffers of their own", dev)
		}
		if counts && with >= without {
			t.Errorf("%s: %d bytes held with the arena, %d without", dev, with, without)
		}
	}
}

// TestOneShotCodeGoneOnce: an engine that gives code back
// (ReleaseAfterCompile) gives the executable's pages back for good at a
// prompt's first chunk that compiles nothing (a cache hit in one-shot
// mode: the chunks that follow run the same code), not while schedules
// still compile, and not outside one-shot mode.
func TestOneShotCodeGoneOnce(t *testing.T) {
	ctx, e, err := NewContext("GO", Options{ReleaseAfterCompile: 1 << 40})
	if err != nil {
		t.Skip(err)
	}
	chunk := func() {
		t.Helper()
		x := seq(ctx, 8, 8).Add(ctx.Const(1, ir.Float32))
		if _, err := x.Dot(x).Floats(); err != nil {
			t.Fatal(err)
		}
	}
	chunk()
	chunk() // a cache hit, not one-shot
	if e.Stats.CacheHits == 0 {
		t.Fatal("the same chunk again was no cache hit: the test cannot tell")
	}
	if e.codeGone {
		t.Fatal("code given back outside one-shot mode")
	}
	e.SetOneShotScratch(true)
	defer e.SetOneShotScratch(false)
	y := seq(ctx, 4, 4)
	if _, err := y.Exp().Floats(); err != nil { // compiles
		t.Fatal(err)
	}
	if e.codeGone {
		t.Fatal("code given back at a chunk that compiled")
	}
	chunk() // the first one-shot cache hit
	if !e.codeGone {
		t.Fatal("code not given back at the first one-shot chunk that compiled nothing")
	}
}
