package script

import (
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"go.starlark.net/starlark"

	"tgc/pkg/sysmem"
)

// A script that runs out of memory stops with an error, not a Go runtime
// dump or the operating system's kill: tensors and lists that would not fit
// are refused before they are made (tensorlib.CheckMemory, realize's check
// of a schedule), and a watchdog stops a script whose values grow past the
// limit (a list built in a loop), at the line it reached.

// lowMemory is how little the system may have left before a script stops.
const lowMemory = 128 << 20

// memoryGuard watches one run.
type memoryGuard struct {
	limit  uint64       // Options.MemoryLimit
	base   uint64       // heap in use when the run started
	reason atomic.Value // string: why the watchdog stopped the script
}

// heapInUse is the memory of live Go values.
func heapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// MemoryAvailable is what the script may still use: what is left of its
// limit, or what the system has available.
func (in *interp) MemoryAvailable() (uint64, bool) {
	return in.mem.available()
}

func (g *memoryGuard) available() (uint64, bool) {
	if g.limit > 0 {
		used := heapInUse() - min(g.base, heapInUse())
		if used >= g.limit {
			return 0, true
		}
		return g.limit - used, true
	}
	return sysmem.Available()
}

// watch sets the run's limit and, with watchdog, checks the memory every
// 50 ms while the script runs and cancels it when its limit is passed or
// the system is nearly out of memory; the returned function stops watching.
func (g *memoryGuard) watch(th *starlark.Thread, limit uint64, watchdog bool) (stop func()) {
	g.limit, g.base = limit, heapInUse()
	if !watchdog {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			avail, ok := g.available()
			switch {
			case !ok:
			case g.limit > 0 && avail == 0:
				g.reason.Store(fmt.Sprintf("the script ran out of memory: its values use more than its limit of %s", sysmem.Size(g.limit)))
			case g.limit == 0 && avail < lowMemory:
				g.reason.Store(fmt.Sprintf("the script ran out of memory: %s of memory is left (its values use %s)", sysmem.Size(avail), sysmem.Size(heapInUse()-min(g.base, heapInUse()))))
			default:
				continue
			}
			th.Cancel("memory")
			return
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// stopped is the watchdog's reason for cancelling the script, or "".
func (g *memoryGuard) stopped() string {
	s, _ := g.reason.Load().(string)
	return s
}
