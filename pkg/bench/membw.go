package bench

import (
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"tgc/pkg/backend"
)

// ReadBandwidth measures the machine's memory read bandwidth in bytes/s,
// as STREAM would with a read-only kernel: every core sums its share of
// a buffer past the caches (ReadBufferBytes), eight independent 8-byte
// loads per step, one sweep after the other as a decode step reads its
// weights token after token, timed by chunks (MeasureReadBandwidthOf). It is the limit a
// decode step, which reads every weight once per token, runs against
// (the llama_decode workloads report their GB/s as a fraction of it).
func ReadBandwidth() float64 { return MeasureReadBandwidth().GBPS * 1e9 }

// MeasureReadBandwidth is ReadBandwidth as a bench result named
// read_bandwidth: the clock time of the chunk it reports and that chunk's
// CPU time per core (for tgc bench --cpu).
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
// guest whose CPUID reports the socket's 508 MiB L3 (a core's CCD has 32
// MiB), 128 MiB read 39–74 GB/s on both cores within minutes, 64 MiB up
// to 95, and 512 MiB to 2 GiB agreed within the noise (docs/performance.md,
// "decodez5"). Where the cache size is unknown (0) the floor is used.
func ReadBufferBytes(h backend.HostCPU) int {
	n := 2 * h.L3
	return int(min(max(n, minReadBuffer), maxReadBuffer))
}

// readPasses is how many timed sweeps MeasureReadBandwidthOf makes over
// its buffer (~0.3 s for 1 GiB at 30 GB/s).
const readPasses = 10

// MeasureReadBandwidthOf measures the read bandwidth over a buffer of
// size bytes (rounded down to 64), mapped outside the Go heap and unmapped
// before it returns, so that its pages go back to the system at once. The
// buffer is written first (untouched anonymous pages all read the one zero
// page) and swept once untimed.
func MeasureReadBandwidthOf(size int) Result {
	size &^= 63
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		mem = make([]byte, size)
	} else {
		defer syscall.Munmap(mem)
	}
	n := size / 8
	buf := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), n)
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
	// the buffer since its last read). The result is the chunk time that a
	// tenth of the chunks beat: the rate the cores sustain when they run,
	// which one lucky chunk does not move.
	chunk := min(readChunk, n)
	type sample struct{ secs, cpu float64 }
	var samples []sample
	var sink uint64
	var mu sync.Mutex
	for pass := range readPasses + 1 {
		for lo := 0; lo+chunk <= n; lo += chunk {
			part := buf[lo : lo+chunk]
			start, c0 := time.Now(), cpuTime()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := sum8(part[chunk*w/workers : chunk*(w+1)/workers])
					mu.Lock()
					sink += s
					mu.Unlock()
				}()
			}
			wg.Wait()
			if pass > 0 { // pass 0 warms up
				samples = append(samples, sample{time.Since(start).Seconds(), perCore(cpuTime()-c0, 1)})
			}
		}
	}
	runtime.KeepAlive(sink)
	sort.Slice(samples, func(i, j int) bool { return samples[i].secs < samples[j].secs })
	s := samples[len(samples)/10]
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
