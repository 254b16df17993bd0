package bench

import (
	"runtime"
	"sync"

	"tgc/pkg/backend"
)

// An evictor pushes a workload's data out of the caches before each of its
// timed runs (Workload.Cold): every core the Go runtime runs on sums a
// buffer of its own, twice the last level cache, so that what the run
// reads comes from memory, as the STREAM triad it is compared with reads
// its three 256 MiB arrays. Without it a workload of 64 MiB repeated over
// the same buffers is partly served by the L3s: on the Zen 5 guest (32 MiB
// of L3 a CCD, each vCPU's half of sum_16M's 64 MiB as large as its CCD's
// L3) sum_16M read 0.53-1.30x the triad with one kernel, by how much of
// the input the L3s kept between runs, which moved with where the vCPUs
// ran and what the neighbours did. AMD's L3 is filled by the lines its
// cores' L2s evict: a core's own sweep is what replaces them.
type evictor struct {
	unmap []func()
	bufs  [][]uint64
	sink  []uint64
}

// minEvict is the least each core sweeps (the L3 may be unknown: 0).
const minEvict = 64 << 20

func newEvictor(h backend.HostCPU) *evictor {
	size := max(2*int(h.L3), minEvict) &^ 63
	workers := runtime.GOMAXPROCS(0)
	ev := &evictor{sink: make([]uint64, workers*8)}
	for range workers {
		buf, unmap := sweepBuffer(size)
		ev.unmap = append(ev.unmap, unmap)
		for i := range buf { // written: untouched pages all read the one zero page
			buf[i] = uint64(i)
		}
		ev.bufs = append(ev.bufs, buf)
	}
	return ev
}

// run sweeps every buffer, one goroutine each, and waits for all.
func (ev *evictor) run() {
	var wg sync.WaitGroup
	for w, b := range ev.bufs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev.sink[w*8] += sum8(b) // 64 bytes apart: no shared line
		}()
	}
	wg.Wait()
}

// free unmaps the buffers.
func (ev *evictor) free() {
	for _, unmap := range ev.unmap {
		unmap()
	}
	ev.unmap, ev.bufs = nil, nil
}
