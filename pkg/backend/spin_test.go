package backend

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpinPoolConcurrent: every launch covers [0, n) exactly once, whether
// the workers are polling, asleep (a pause longer than spinFor) or busy with
// another goroutine's launch (which then runs on plain goroutines).
func TestSpinPoolConcurrent(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: launches run on the caller")
	}
	var p spinPool
	check := func(n int64) {
		hits := make([]atomic.Int32, n)
		p.run(n, func(lo, hi int64) {
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
		})
		for i := range hits {
			if c := hits[i].Load(); c != 1 {
				t.Errorf("n=%d: element %d ran %d times", n, i, c)
				return
			}
		}
	}
	for _, n := range []int64{1, 2, 3, 7, 96, 1000} {
		check(n) // polling workers
	}
	for range 3 {
		time.Sleep(2 * spinFor) // asleep: the launch must wake them
		check(97)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				check(int64(2 + (g*7+i)%50))
			}
		}()
	}
	wg.Wait()
}

// TestSpinPoolSteals: a participant held up inside one piece of its range
// does not hold back the rest of it: the others take the pieces it has not
// claimed. The second core's first piece blocks until every other item
// has run, which without stealing would never happen (it would wait for
// itself); the launch must still cover [0, n) exactly once.
func TestSpinPoolSteals(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: launches run on the caller")
	}
	var p spinPool
	cores := int64(runtime.GOMAXPROCS(0))
	n := cores * piecesPerRange
	second := n / cores // the first item of the second range (a piece of one item)
	var ran atomic.Int64
	var waited atomic.Bool // the blocked piece gave up waiting
	hits := make([]atomic.Int32, n)
	done := make(chan struct{})
	go func() {
		p.run(n, func(lo, hi int64) {
			if lo == second {
				deadline := time.Now().Add(5 * time.Second)
				for ran.Load() < n-1 {
					if time.Now().After(deadline) {
						waited.Store(true)
						break
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
				ran.Add(1)
			}
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the launch did not finish")
	}
	if waited.Load() {
		t.Error("the rest of the held-up range did not run while it was held up")
	}
	if got := ran.Load(); got != n {
		t.Fatalf("%d of %d items ran", got, n)
	}
	for i := range hits {
		if c := hits[i].Load(); c != 1 {
			t.Fatalf("element %d ran %d times", i, c)
		}
	}
}
