package backend

import "testing"

// fakeCPUID answers from a table keyed by leaf<<8|sub (zeros elsewhere).
func fakeCPUID(t map[uint64][4]uint32) cpuidFunc {
	return func(leaf, sub uint32) (a, b, c, d uint32) {
		r := t[uint64(leaf)<<8|uint64(sub)]
		return r[0], r[1], r[2], r[3]
	}
}

// cacheLeaf encodes one deterministic cache parameter sub-leaf (EAX, EBX,
// ECX) for a cache of the given type, level, geometry and sharing.
func cacheLeaf(typ, level, ways, line, sets, sharing uint32) [4]uint32 {
	return [4]uint32{typ | level<<5 | (sharing-1)<<14, (ways-1)<<22 | (line - 1), sets - 1, 0}
}

func TestCachesFromCPUID(t *testing.T) {
	const ext = 0x80000000
	for _, tc := range []struct {
		name        string
		regs        map[uint64][4]uint32
		sysfs       [3]int64 // what sysfs gave already
		l1d, l2, l3 int64
		shared      int
	}{
		{"intel leaf 4", map[uint64][4]uint32{
			0: {0x1b}, ext << 8: {0x80000008},
			4<<8 | 0: cacheLeaf(1, 1, 12, 64, 64, 2),
			4<<8 | 1: cacheLeaf(2, 1, 8, 64, 64, 2),
			4<<8 | 2: cacheLeaf(3, 2, 16, 64, 2048, 2),
			4<<8 | 3: cacheLeaf(3, 3, 15, 64, 512*1024, 2),
		}, [3]int64{}, 48 << 10, 2 << 20, 480 << 20, 2},
		{"amd 0x8000001D", map[uint64][4]uint32{
			0: {0x10}, ext << 8: {0x80000021},
			0x8000001d<<8 | 0: cacheLeaf(1, 1, 8, 64, 64, 1),
			0x8000001d<<8 | 1: cacheLeaf(2, 1, 8, 64, 64, 1),
			0x8000001d<<8 | 2: cacheLeaf(3, 2, 8, 64, 2048, 1),
			0x8000001d<<8 | 3: cacheLeaf(3, 3, 16, 64, 32768, 16),
		}, [3]int64{}, 32 << 10, 1 << 20, 32 << 20, 16},
		// A Zen 5 guest as a hypervisor showed it: leaf 4 and 0x8000001D
		// empty, the legacy leaves filled (48 KiB, 1 MiB, 1016 × 512 KiB:
		// the socket's L3, more than any core complex has; a core sees
		// its CCD's 32 MiB).
		{"amd legacy leaves", map[uint64][4]uint32{
			0: {13}, ext << 8: {0x80000021},
			0x80000005 << 8: {0, 0, 48 << 24, 0},
			0x80000006 << 8: {0, 0, 1024 << 16, 1016 << 18},
		}, [3]int64{}, 48 << 10, 1 << 20, 32 << 20, 0},
		// A V-Cache CCD's 96 MiB is one complex's: kept.
		{"amd legacy leaves, 96 MiB", map[uint64][4]uint32{
			0: {13}, ext << 8: {0x80000021},
			0x80000005 << 8: {0, 0, 32 << 24, 0},
			0x80000006 << 8: {0, 0, 1024 << 16, 192 << 18},
		}, [3]int64{}, 32 << 10, 1 << 20, 96 << 20, 0},
		{"sysfs wins", map[uint64][4]uint32{
			0: {13}, ext << 8: {0x80000021},
			0x80000005 << 8: {0, 0, 48 << 24, 0},
			0x80000006 << 8: {0, 0, 1024 << 16, 1016 << 18},
		}, [3]int64{32 << 10, 0, 64 << 20}, 32 << 10, 1 << 20, 64 << 20, 0},
		{"nothing known", map[uint64][4]uint32{0: {1}}, [3]int64{}, 0, 0, 0, 0},
	} {
		h := HostCPU{L1d: tc.sysfs[0], L2: tc.sysfs[1], L3: tc.sysfs[2]}
		h.cachesFromCPUID(fakeCPUID(tc.regs))
		if h.L1d != tc.l1d || h.L2 != tc.l2 || h.L3 != tc.l3 || h.L3Shared != tc.shared {
			t.Errorf("%s: L1d %d L2 %d L3 %d/%d, want %d %d %d/%d", tc.name, h.L1d, h.L2, h.L3, h.L3Shared, tc.l1d, tc.l2, tc.l3, tc.shared)
		}
	}
	var none HostCPU
	none.cachesFromCPUID(nil) // no CPUID off x86: nothing changes
	if none.L1d != 0 {
		t.Errorf("nil CPUID set L1d %d", none.L1d)
	}
}
