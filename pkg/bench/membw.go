package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"tgc/pkg/backend"
)

// MeasureReadBandwidth measures the machine's memory read bandwidth, as
// STREAM would with a read-only kernel: every core sums its share of a
// buffer past the caches (ReadBufferBytes), eight independent 8-byte loads
// per step, one sweep after the other as a decode step reads its weights
// token after token, timed by chunks (MeasureReadBandwidthOf). It is the
// limit a decode step, which reads every weight once per token, runs
// against (the llama_decode workloads report their GB/s as a fraction of
// it). The result, named read_bandwidth, has the clock time of the chunk
// it reports and that chunk's CPU time per core (for tgc bench --cpu).
func MeasureReadBandwidth() Result { return MeasureReadBandwidthOf(ReadBufferBytes(backend.Host())) }

// Read buffer bounds: past any cache that serves one core, and within
// what a short measurement can sweep ten times.
const (
	minReadBuffer = 256 << 20
	maxReadBuffer = 1 << 30
)

// ReadBufferBytes is the size of the buffer the read bandwidth is measured
// over: twice the last-level cache, at least 256 MiB and at most 1 GiB.
// A stream repeated over a buffer only a few times the cache's size is
// partly served by that cache (AMD's L3 keeps part of a looping stream),
// by a share that moves with what the cache's other users do: on a Zen 5
// guest (a core's CCD has 32 MiB of L3, its two vCPUs ~64 MiB together),
// 128 MiB read 39–74 GB/s on both cores within minutes, 64 MiB up to 95,
// and 116 MiB to 1 GiB agreed within the noise (docs/performance.md,
// "decodez5"). Where the cache size is unknown (0) the floor is used.
func ReadBufferBytes(h backend.HostCPU) int {
	n := 2 * h.L3
	return int(min(max(n, minReadBuffer), maxReadBuffer))
}

// readPasses is how many timed sweeps MeasureReadBandwidthOf makes over
// its buffer at least (~0.2 s for 1 GiB at 60 GB/s), and readBudget how
// long it goes on sweeping, up to three times as many: on a loaded machine
// a chunk in which both cores ran is rare, and more chunks make the
// fastest one steadier.
const (
	readPasses = 10
	readBudget = 1500 * time.Millisecond
)

// MeasureReadBandwidthOf measures the read bandwidth over a buffer of
// size bytes (rounded down to 64), mapped outside the Go heap and unmapped
// before it returns, so that its pages go back to the system at once. The
// buffer is written first (untouched anonymous pages all read the one zero
// page) and swept once untimed.
func MeasureReadBandwidthOf(size int) Result {
	size &^= 63
	buf, unmap := sweepBuffer(size)
	defer unmap()
	n := len(buf)
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers { // fill in parallel: the pages are faulted in too
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := n * w / workers; i < n*(w+1)/workers; i++ {
				buf[i] = uint64(i)
			}
		}()
	}
	wg.Wait()
	// The sweeps are timed by chunks, every core reading its share of one
	// chunk at a time: a chunk of 16 MiB takes ~0.5 ms, short enough that
	// many pass without a core preempted on a machine shared with other
	// jobs, and it is read from memory all the same (a whole sweep over
	// the buffer since its last read). The cores wait for a chunk spinning
	// on their own locked threads, as the CPU device's launcher threads
	// wait between a decode step's launches: goroutines started per chunk
	// ran one after the other on one thread whenever the other was slow
	// to wake (a loaded host read one core's bandwidth for both). The
	// result is the fastest chunk: the rate of the cores when both ran (no
	// chunk is served by a cache, so none reads faster than the bus; with
	// two cores and ten other jobs, a tenth of the chunks was often not
	// enough to hold one in which both ran).
	chunk := min(readChunk, n)
	type sample struct{ secs, cpu float64 }
	var samples []sample
	var gen, done atomic.Int64
	var lo atomic.Int64
	sums := make([]uint64, workers)
	share := func(w int) {
		start := int(lo.Load())
		part := buf[start : start+chunk]
		sums[w] += sum8(part[chunk*w/workers : chunk*(w+1)/workers])
		done.Add(1)
	}
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for seen := int64(0); ; {
				for spins := 0; gen.Load() == seen; spins++ {
					if spins > 1<<20 {
						runtime.Gosched()
						spins = 0
					}
				}
				seen = gen.Load()
				if seen < 0 {
					return
				}
				share(w)
			}
		}()
	}
	runtime.LockOSThread()
	begin := time.Now()
	for pass := 0; pass <= readPasses || pass <= 3*readPasses && time.Since(begin) < readBudget; pass++ {
		for start := 0; start+chunk <= n; start += chunk {
			lo.Store(int64(start))
			done.Store(0)
			t0, c0 := time.Now(), cpuTime()
			gen.Add(1)
			share(0)
			for done.Load() < int64(workers) {
			}
			if pass > 0 { // pass 0 warms up
				samples = append(samples, sample{time.Since(t0).Seconds(), perCore(cpuTime()-c0, 1)})
			}
		}
	}
	runtime.UnlockOSThread()
	gen.Store(-1)
	wg.Wait()
	runtime.KeepAlive(sums)
	s := samples[0]
	for _, x := range samples[1:] {
		if x.secs < s.secs {
			s = x
		}
	}
	return Result{Name: "read_bandwidth", Device: "host", Seconds: s.secs, CPUSeconds: s.cpu, GBPS: float64(chunk*8) / s.secs / 1e9}
}

// readChunk is the words of one timed chunk of the read bandwidth's sweep.
const readChunk = 16 << 20 / 8

// sum8 adds the words of b with eight independent accumulators.
func sum8(b []uint64) uint64 {
	var a0, a1, a2, a3, a4, a5, a6, a7 uint64
	for i := 0; i+8 <= len(b); i += 8 {
		c := (*[8]uint64)(unsafe.Pointer(&b[i]))
		a0 += c[0]
		a1 += c[1]
		a2 += c[2]
		a3 += c[3]
		a4 += c[4]
		a5 += c[5]
		a6 += c[6]
		a7 += c[7]
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
}

// sweepBuffer maps size bytes (a multiple of 8) outside the Go heap as
// uint64s, in transparent huge pages as the CPU device's buffers of 2 MiB
// and more (backend's pool), so the weights: in 4 KiB pages the hardware
// prefetcher stops at every page and a stream read 1.5-2x slower here.
// unmap gives the pages back (a heap slice stands in where mapping fails).
func sweepBuffer(size int) (buf []uint64, unmap func()) {
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	unmap = func() {}
	if err != nil {
		mem = make([]byte, size)
	} else {
		unmap = func() { _ = syscall.Munmap(mem) }
		_ = syscall.Madvise(mem, 14) // MADV_HUGEPAGE
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), size/8), unmap
}
