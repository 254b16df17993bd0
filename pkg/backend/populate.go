package backend

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"tgc/pkg/ir"
)

// A buffer that reads as zeros (AllocZeroed: a KV cache) is a fresh
// mapping whose pages cost nothing until written. A page first written
// inside a kernel costs that launch a fault while the other threads of the
// launch wait: a decode step's write of a KV cache position took 6.1 µs
// instead of 1.0, and the value projection that writes its row 26.4
// instead of 18.0 µs (Xeon guest, DEBUG=2 means over 120 layers), 0.16 ms
// of a 3.9 ms Q4_K step. So the CPU device populates the pages a launch
// will write in such a buffer (the kernel's store span, ir.StoreSpan)
// before it runs, a chunk of populateChunk at a time: one
// madvise(MADV_POPULATE_WRITE) of 4 pages (~1 µs a page, against 1.6-2.8
// µs for a fault outside a kernel) every ~5 steps of a 3 KiB row. The
// buffer's memory still grows with the positions written, by at most a
// chunk more.

const (
	populateChunk = 16 << 10
	// madvPopulateWrite is Linux's MADV_POPULATE_WRITE (5.14 and later):
	// fault the range's pages in writable, without changing their data.
	madvPopulateWrite = 23
)

// lazyPages records which chunks of a zeroed buffer are populated.
type lazyPages struct {
	done []atomic.Uint64 // a bit per chunk
	left atomic.Int64    // chunks not yet populated
	off  atomic.Bool     // the system refused: stop asking
}

func newLazyPages(size int) *lazyPages {
	chunks := (size + populateChunk - 1) / populateChunk
	p := &lazyPages{done: make([]atomic.Uint64, (chunks+63)/64)}
	p.left.Store(int64(chunks))
	return p
}

// populate faults in the chunks of b's bytes [from, to) that are not yet
// (concurrent calls may both ask for a chunk: populating is idempotent);
// nothing for a buffer that is not a lazy mapping.
func (b *hostBuffer) populate(from, to int64) {
	p := b.pages
	if p == nil || p.off.Load() || p.left.Load() <= 0 || len(b.data) == 0 {
		return // a buffer written whole once costs no more checks
	}
	to = min(to, int64(len(b.data)))
	for c := max(from, 0) / populateChunk; c*populateChunk < to; c++ {
		word, bit := &p.done[c/64], uint64(1)<<(c%64)
		if word.Load()&bit != 0 {
			continue
		}
		start := c * populateChunk
		n := min(int64(populateChunk), int64(len(b.data))-start)
		_, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(&b.data[start])), uintptr(n), madvPopulateWrite)
		if e != 0 {
			p.off.Store(true) // an older kernel: pages come by faults
			return
		}
		if word.Or(bit)&bit == 0 {
			p.left.Add(-1)
		}
	}
}

// populateSpans populates the lazily mapped buffers among bufs where the
// kernel's stores will write with vars.
func populateSpans(spans []ir.StoreSpan, bufs []Buffer, vars []int64) {
	for _, s := range spans {
		if s.Buf >= len(bufs) {
			continue
		}
		hb, ok := bufs[s.Buf].(*hostBuffer)
		if !ok || hb.pages == nil {
			continue
		}
		lo, hi := s.At(vars)
		size := int64(hb.dt.Size())
		hb.populate(lo*size, (hi+1)*size)
	}
}
