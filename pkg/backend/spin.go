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
	job      atomic.Pointer[spinPost]
	sleeping atomic.Bool
	wake     chan struct{}
}

// spinJob is one launch: each participant (the caller and the workers)
// owns one contiguous range of [0, n), in pieces it runs in order; one
// done with its own range takes the pieces left in the others'. A core
// taken away for a while (another process, the Go runtime) then delays
// the launch by at most the piece it is in, not by its whole range, and
// an uneven split (items of unequal cost) evens out; in the common case
// each core still runs its own contiguous range, as a static split would.
type spinJob struct {
	f      func(start, end int64)
	ranges []spinRange
	left   atomic.Int64 // pieces not yet run
}

type spinRange struct {
	next               atomic.Int64 // the next piece to claim
	start, end, pieces int64
}

// spinPost hands a job to one worker: which range is its own.
type spinPost struct {
	job  *spinJob
	self int
}

// piecesPerRange splits each participant's range: enough that a stalled
// core holds back little, few enough that a piece is still a long call.
const piecesPerRange = 8

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
		j.job.work(j.self)
	}
}

// work runs pieces, its own range's first, until none is left to claim.
func (j *spinJob) work(self int) {
	for k := range j.ranges {
		r := &j.ranges[(self+k)%len(j.ranges)]
		for {
			i := r.next.Add(1) - 1
			if i >= r.pieces {
				break
			}
			n := r.end - r.start
			j.f(r.start+n*i/r.pieces, r.start+n*(i+1)/r.pieces)
			j.left.Add(-1)
		}
	}
}

// next polls for a job, then sleeps until one is posted. A job posted
// while the worker goes to sleep is seen: the worker announces sleeping
// before its last look, the poster posts before it reads sleeping.
func (w *spinWorker) next() *spinPost {
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

// run is parallel's contract on the pool: f over [0, n) in contiguous
// ranges, one per core, the caller taking the first (and any pieces the
// others have not claimed when it is done; see spinJob).
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
	j := &spinJob{f: f, ranges: make([]spinRange, workers)}
	total := int64(0)
	for i := range workers {
		r := &j.ranges[i]
		r.start, r.end = n*i/workers, n*(i+1)/workers
		r.pieces = min(r.end-r.start, piecesPerRange)
		total += r.pieces
	}
	j.left.Store(total)
	for i := int64(1); i < workers; i++ {
		w := p.workers[i-1]
		w.job.Store(&spinPost{job: j, self: int(i)})
		if w.sleeping.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	j.work(0)
	for i := 0; j.left.Load() > 0; i++ {
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
}
