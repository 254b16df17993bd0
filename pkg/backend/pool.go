package backend

import (
	"sync"
	"syscall"
)

// MemoryUsage is a device's account of the bytes of its buffers.
type MemoryUsage struct {
	Live int64 // in buffers not yet freed
	Peak int64 // the most live at once since the device opened or the last ResetPeak
	// Pooled are freed bytes the device keeps for reuse: still the
	// process's memory, not a buffer's.
	Pooled int64
}

// MemoryCounter is a device that accounts for its buffers' bytes (the CPU
// device). A buffer freed by the garbage collector (never Free'd) leaves
// Live when its cleanup runs.
type MemoryCounter interface {
	Memory() MemoryUsage
	ResetPeak()
	// ReleasePooled gives the pooled memory back to the system: after a
	// phase whose buffer sizes will not come again (a prompt's prefill
	// before the decode steps).
	ReleasePooled()
}

// mmapPool is the CPU device's memory: each buffer its own anonymous
// mapping, page aligned (vector loads) and outside the Go heap (never
// scanned). Freed mappings are kept for reuse, like tinygrad's LRU
// allocator: a fresh mapping costs a page fault per 4 KiB on first touch,
// which for a 64 MiB buffer is slower than the kernel that fills it.
type mmapPool struct {
	mu         sync.Mutex
	free       map[poolClass][][]byte
	advised    map[*byte]bool // the mappings advised for huge pages
	pooled     int
	live, peak int64
}

// poolClass is what a freed mapping is reused for: its size, and whether
// it is advised for huge pages (a buffer asked for in huge pages is not
// given one in small pages, or the other way round).
type poolClass struct {
	size int
	huge bool
}

// poolLimit bounds the memory kept for reuse.
const poolLimit = 1 << 30

const (
	hugePage     = 2 << 20
	madvHugepage = 14 // MADV_HUGEPAGE
)

func (p *mmapPool) get(size int) ([]byte, error) { return p.take(size, false, true) }

// getSmall is get without the huge pages' advice for a fresh mapping.
func (p *mmapPool) getSmall(size int) ([]byte, error) { return p.take(size, false, false) }

// getZeroed is a fresh mapping, never a reused one: its pages read as
// zeros and take no memory until written. It is not advised for huge
// pages: a KV cache is written a position at a time, and a written 4 KiB
// would take 2 MiB (a 128-token prompt's 24 caches of 3 MiB each: up to
// 48 MB resident for 10 MB written, as huge pages happened to be free).
func (p *mmapPool) getZeroed(size int) ([]byte, error) { return p.take(size, true, false) }

func (p *mmapPool) take(size int, zeroed, huge bool) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	huge = huge && size >= hugePage
	class := poolClass{size, huge}
	if l := p.free[class]; !zeroed && len(l) > 0 {
		m := l[len(l)-1]
		p.free[class] = l[:len(l)-1]
		p.pooled -= size
		p.count(size)
		return m, nil
	}
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	if huge {
		// Transparent huge pages: a 64 MiB buffer takes 32 first-touch
		// faults instead of 16384 (each costs microseconds here).
		_ = syscall.Madvise(mem, madvHugepage)
		if p.advised == nil {
			p.advised = map[*byte]bool{}
		}
		p.advised[&mem[0]] = true
	}
	p.count(size)
	return mem, nil
}

func (p *mmapPool) count(size int) {
	p.live += int64(size)
	p.peak = max(p.peak, p.live)
}

func (p *mmapPool) put(m []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live -= int64(len(m))
	if p.pooled+len(m) > poolLimit {
		p.unmap(m)
		return
	}
	if p.free == nil {
		p.free = map[poolClass][][]byte{}
	}
	class := poolClass{len(m), p.advised[&m[0]]}
	p.free[class] = append(p.free[class], m)
	p.pooled += len(m)
}

func (p *mmapPool) unmap(m []byte) {
	delete(p.advised, &m[0])
	_ = syscall.Munmap(m)
}

func (p *mmapPool) usage() MemoryUsage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return MemoryUsage{Live: p.live, Peak: p.peak, Pooled: int64(p.pooled)}
}

func (p *mmapPool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.free {
		for _, m := range l {
			p.unmap(m)
		}
	}
	p.free, p.pooled = nil, 0
}

func (p *mmapPool) resetPeak() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak = p.live
}
