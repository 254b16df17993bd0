package tensor

import (
	"strings"
	"sync"
	"testing"

	"tgc/pkg/ir"
)

// TestContextsAreSeparate: two contexts share no state: equal expressions
// are one node within a context and different nodes across contexts, the
// random streams, training flags, gradient leaves and pending losses are
// each context's own, and an op on tensors of both is an error.
func TestContextsAreSeparate(t *testing.T) {
	a, b := NewContext(nil), NewContext(nil)
	expr := func(c *Context) *Node { return c.Full([]int{3}, 2, ir.Float32).Exp().node }
	if expr(a) != expr(a) {
		t.Error("equal expressions in one context are different nodes")
	}
	if expr(a) == expr(b) {
		t.Error("equal expressions in two contexts are one node")
	}
	if c := expr(b).ctx; c != b {
		t.Error("a node does not belong to the context that made it")
	}

	mixed := []*Tensor{
		a.Rand(3).Add(b.Rand(3)),
		a.Rand(3).Where(a.Rand(3), b.Rand(3)),
		a.Rand(2).Cat(0, b.Rand(2)),
		Stack(0, a.Rand(2), b.Rand(2)),
		a.Rand(2, 2).Dot(b.Rand(2, 2)),
		a.Zeros([]int{2}, ir.Float32).Assign(b.Ones([]int{2}, ir.Float32)),
	}
	for i, m := range mixed {
		if m.Err() == nil || !strings.Contains(m.Err().Error(), "different contexts") {
			t.Errorf("mixed op %d: err = %v", i, m.Err())
		}
	}
	if err := RealizeAll(a.Rand(1), b.Rand(1)); err == nil || !strings.Contains(err.Error(), "different contexts") {
		t.Errorf("RealizeAll over two contexts: %v", err)
	}

	a.ManualSeed(7)
	b.ManualSeed(9)
	a.Rand(4)
	b.Rand(4)
	b.Rand(4)
	if s, c := a.RandState(); s != 7 || c != 1 {
		t.Errorf("a's stream is (%d, %d), want (7, 1)", s, c)
	}
	if s, c := b.RandState(); s != 9 || c != 2 {
		t.Errorf("b's stream is (%d, %d), want (9, 2)", s, c)
	}

	if a.SetTraining(true) || b.Training() || !a.Training() {
		t.Error("the training flag is shared")
	}

	w := a.Rand(3).SetRequiresGrad(true)
	if len(b.GradTensors()) != 0 || len(a.GradTensors()) != 1 || a.GradTensors()[0] != w {
		t.Errorf("gradient leaves: a %d, b %d", len(a.GradTensors()), len(b.GradTensors()))
	}
	loss := w.Sum(false)
	a.NoteBackward(loss)
	if got := b.TakeBackwardLosses(); len(got) != 0 {
		t.Errorf("b took a's losses: %v", got)
	}
	if got := a.TakeBackwardLosses(); len(got) != 1 || got[0] != loss {
		t.Errorf("a's losses: %v", got)
	}
}

// TestContextConcurrentUse: one context used by many goroutines draws
// every random tensor once (the stream advances under a lock) and interns
// equal expressions to one node. Run it under go test -race.
func TestContextConcurrentUse(t *testing.T) {
	c := NewContext(nil)
	const workers, draws = 8, 200
	counters := make([][]uint64, workers)
	nodes := make([]*Node, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range draws {
				counters[w] = append(counters[w], c.Rand(2).node.Arg.(RandArg).Counter)
			}
			nodes[w] = c.Arange(0, 10, 1, ir.Int32).Mul(c.Const(3, ir.Int32)).node
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, cs := range counters {
		for _, n := range cs {
			if seen[n] {
				t.Fatalf("counter %d drawn twice", n)
			}
			seen[n] = true
		}
	}
	if _, last := c.RandState(); len(seen) != workers*draws || last != workers*draws {
		t.Errorf("%d distinct draws, counter %d; want %d", len(seen), last, workers*draws)
	}
	for _, n := range nodes[1:] {
		if n != nodes[0] {
			t.Fatal("equal expressions built concurrently are different nodes")
		}
	}
}
