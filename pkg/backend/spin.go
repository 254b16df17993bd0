package backend

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinPool runs the shares of a CPU launch on worker goroutines that keep
// polling for the next share for a while (spinFor) before they sleep.
// Kernels come back to back, and waking a sleeping thread is slow where
// tgc often runs, on a virtual machine: a 768×768 Q8_0 product whose two
// halves take 40 µs took 120 µs with sleeping workers and 58 µs with
// spinning ones (OpenMP's passive and active waits, same kernel). A pool
// belongs to one device; a launch that finds it busy (another engine's)
// uses plain goroutines.
type spinPool struct {
	mu      sync.Mutex // one launch at a time
	workers []*spinWorker
}

type spinWorker struct {
	job      atomic.Pointer[spinJob]
	sleeping atomic.Bool
	wake     chan struct{}
}

type spinJob struct {
	f          func(start, end int64)
	start, end int64
	left       *atomic.Int64
}

// spinFor is how long an idle worker polls before it sleeps.
const spinFor = 300 * time.Microsecond

func (p *spinPool) start(n int) {
	for range n {
		w := &spinWorker{wake: make(chan struct{}, 1)}
		p.workers = append(p.workers, w)
		go w.loop()
	}
}

func (w *spinWorker) loop() {
	for {
		j := w.next()
		j.f(j.start, j.end)
		j.left.Add(-1)
	}
}

// next polls for a job, then sleeps until one is posted. A job posted
// while the worker goes to sleep is seen: the worker announces sleeping
// before its last look, the poster posts before it reads sleeping.
func (w *spinWorker) next() *spinJob {
	deadline := time.Now().Add(spinFor)
	for i := 0; ; i++ {
		if j := w.job.Swap(nil); j != nil {
			return j
		}
		runtime.Gosched() // the engine's goroutines first
		if i%64 == 63 && time.Now().After(deadline) {
			w.sleeping.Store(true)
			if j := w.job.Swap(nil); j != nil {
				w.sleeping.Store(false)
				return j
			}
			<-w.wake
			w.sleeping.Store(false)
			deadline = time.Now().Add(spinFor)
		}
	}
}

// run is parallel's contract on the pool: f over [0, n) in one contiguous
// chunk per core, the caller taking the first.
func (p *spinPool) run(n int64, f func(start, end int64)) {
	cores := int64(runtime.GOMAXPROCS(0))
	if n < 2 || cores < 2 || !p.mu.TryLock() {
		parallel(n, f)
		return
	}
	defer p.mu.Unlock()
	if len(p.workers) < int(cores)-1 {
		p.start(int(cores) - 1 - len(p.workers))
	}
	workers := min(cores, n)
	var left atomic.Int64
	left.Store(workers - 1)
	for i := int64(1); i < workers; i++ {
		w := p.workers[i-1]
		w.job.Store(&spinJob{f: f, start: n * i / workers, end: n * (i + 1) / workers, left: &left})
		if w.sleeping.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	f(0, n/workers)
	for i := 0; left.Load() > 0; i++ {
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
}
