package bench

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// ReadBandwidth measures the machine's memory read bandwidth in bytes/s,
// as STREAM would with a read-only kernel: every core sums its share of
// a buffer four times the last-level cache (at least 128 MiB), eight
// independent 8-byte loads per step; the best of five passes. It is the
// limit a decode step, which reads every weight once per token, runs
// against (tgc generate and the llama_decode workloads report their
// GB/s as a fraction of it).
func ReadBandwidth() float64 { return MeasureReadBandwidth().GBPS * 1e9 }

// MeasureReadBandwidth is ReadBandwidth as a bench result named
// read_bandwidth: the best pass's clock time and its CPU time per core
// (for tgc bench --cpu).
func MeasureReadBandwidth() Result {
	n := max(128<<20, 4*lastLevelCache()) / 8
	buf := make([]uint64, n)
	for i := range buf {
		buf[i] = uint64(i)
	}
	workers := runtime.GOMAXPROCS(0)
	best := Result{Name: "read_bandwidth", Device: "host"}
	var sink uint64
	var mu sync.Mutex
	for range 5 {
		var wg sync.WaitGroup
		start, c0 := time.Now(), cpuTime()
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := sum8(buf[n*w/workers : n*(w+1)/workers])
				mu.Lock()
				sink += s
				mu.Unlock()
			}()
		}
		wg.Wait()
		if t := time.Since(start).Seconds(); best.Seconds == 0 || t < best.Seconds {
			best.Seconds, best.CPUSeconds = t, perCore(cpuTime()-c0, 1)
		}
	}
	runtime.KeepAlive(sink)
	best.GBPS = float64(n*8) / best.Seconds / 1e9
	return best
}

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

// lastLevelCache is the largest cache's size from sysfs (0 if unknown).
func lastLevelCache() int {
	largest := 0
	for i := range 8 {
		b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cache/index" + strconv.Itoa(i) + "/size")
		if err != nil {
			break
		}
		s := strings.TrimSpace(string(b))
		mult := 1
		switch {
		case strings.HasSuffix(s, "K"):
			mult, s = 1<<10, strings.TrimSuffix(s, "K")
		case strings.HasSuffix(s, "M"):
			mult, s = 1<<20, strings.TrimSuffix(s, "M")
		}
		if v, err := strconv.Atoi(s); err == nil {
			largest = max(largest, v*mult)
		}
	}
	return min(largest, 1<<30)
}
