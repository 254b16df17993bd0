package backend

// maxCCXL3 is the largest L3 one core complex has (AMD's V-Cache parts:
// 96 MiB per CCD); ccxL3 the L3 of a Zen 3-5 CCD without it, what a core
// is assumed to see where CPUID reports more than maxCCXL3 as one cache.
const (
	maxCCXL3 = 96 << 20
	ccxL3    = 32 << 20
)

// cpuidFunc answers CPUID for a leaf and sub-leaf (EAX, ECX in; EAX, EBX,
// ECX, EDX out); a parameter so the cache decoding is tested on fakes.
type cpuidFunc func(leaf, sub uint32) (a, b, c, d uint32)

// cachesFromCPUID fills the cache sizes sysfs did not give (0) from
// CPUID: virtual machines often expose no cpu0/cache directory, and a
// matmul blocked for unknown caches is not blocked at all (KBLOCK and
// TILE need L1d and L2). It reads the deterministic cache parameters
// (leaf 4 on Intel, 0x8000001D on AMD) and falls back to AMD's older
// leaves 0x80000005/6, which hypervisors fill in where they leave
// 0x8000001D empty.
func (h *HostCPU) cachesFromCPUID(q cpuidFunc) {
	if q == nil || (h.L1d > 0 && h.L2 > 0 && h.L3 > 0) {
		return
	}
	var l1d, l2, l3 int64
	shared := 0
	set := func(level uint32, size int64, sharing int) {
		switch level {
		case 1:
			l1d = size
		case 2:
			l2 = size
		case 3:
			l3, shared = size, sharing
		}
	}
	// walk reads one deterministic-parameters leaf's sub-leaves.
	walk := func(leaf uint32) {
		for sub := uint32(0); sub < 8; sub++ {
			a, b, c, _ := q(leaf, sub)
			typ := a & 31 // 0: no more caches; 1 data, 2 instruction, 3 unified
			if typ == 0 {
				return
			}
			if typ == 2 {
				continue
			}
			ways := int64(b>>22&0x3ff) + 1
			parts := int64(b>>12&0x3ff) + 1
			line := int64(b&0xfff) + 1
			sets := int64(c) + 1
			set(a>>5&7, ways*parts*line*sets, int(a>>14&0xfff)+1)
		}
	}
	maxLeaf, _, _, _ := q(0, 0)
	maxExt, _, _, _ := q(0x80000000, 0)
	if maxLeaf >= 4 {
		walk(4)
	}
	if l1d == 0 && maxExt >= 0x8000001d {
		walk(0x8000001d)
	}
	if l1d == 0 && maxExt >= 0x80000006 {
		_, _, c5, _ := q(0x80000005, 0)
		_, _, c6, d6 := q(0x80000006, 0)
		l1d = int64(c5>>24) << 10
		l2 = int64(c6>>16) << 10
		l3 = int64(d6>>18) << 19
		shared = 0
		if l3 > maxCCXL3 {
			// No core complex has this much: the hypervisor reported the
			// socket's L3 (a Zen 5 guest: 1016 × 512 KiB, 508 MiB, of
			// sixteen 32 MiB CCDs). A core is served by its complex's
			// L3; measured in that guest, one core reads 112 GB/s up to
			// 8 MiB, 71 at 32 MiB and 37-40 (memory) from 128 MiB on.
			l3 = ccxL3
		}
	}
	if h.L1d <= 0 {
		h.L1d = l1d
	}
	if h.L2 <= 0 {
		h.L2 = l2
	}
	if h.L3 <= 0 {
		h.L3, h.L3Shared = l3, shared
	}
}
