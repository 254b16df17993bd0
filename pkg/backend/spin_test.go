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
