package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// HostCPU is what a CPU kernel's speed depends on besides its code: the
// processor, its vector extensions and its caches. The cache sizes come
// from sysfs (from CPUID where a virtual machine has no sysfs cache
// directory), so the same code blocks for a 32 KiB L1d and a 1 MiB L2 on
// a Zen 4 and for 48 KiB and 2 MiB on a Xeon.
type HostCPU struct {
	Model          string   // /proc/cpuinfo "model name"
	Vendor         string   // "vendor_id": AuthenticAMD, GenuineIntel
	Family, Number string   // "cpu family" and "model"
	Flags          []string // all of /proc/cpuinfo's flags
	Cores          int
	L1d, L2, L3    int64 // bytes; L1d and L2 as one core has them, L3 as a whole
	L3Shared       int   // CPUs sharing the L3 (0 when unknown)
}

// Host describes this machine's processor (read once per process).
func Host() HostCPU { return hostCPU() }

var hostCPU = sync.OnceValue(func() HostCPU {
	data, _ := os.ReadFile("/proc/cpuinfo")
	h := parseCPUInfo(string(data))
	h.Cores = runtime.NumCPU()
	h.readCaches("/sys/devices/system/cpu/cpu0/cache")
	h.cachesFromCPUID(hostCPUID)
	return h
})

// parseCPUInfo reads the first processor's entry of /proc/cpuinfo.
func parseCPUInfo(s string) HostCPU {
	var h HostCPU
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if strings.TrimSpace(line) == "" && h.Model != "" {
				break // the end of the first processor's entry
			}
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "model name":
			h.Model = v
		case "vendor_id":
			h.Vendor = v
		case "cpu family":
			h.Family = v
		case "model":
			h.Number = v
		case "flags", "Features":
			h.Flags = strings.Fields(v)
		}
	}
	return h
}

// readCaches reads the sizes of the data and unified caches under dir
// (sysfs's cpu0/cache: index*/level, type, size, shared_cpu_list).
func (h *HostCPU) readCaches(dir string) {
	idx, _ := filepath.Glob(filepath.Join(dir, "index*"))
	for _, d := range idx {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(d, name))
			return strings.TrimSpace(string(b))
		}
		if read("type") == "Instruction" {
			continue
		}
		size := parseCacheSize(read("size"))
		switch read("level") {
		case "1":
			h.L1d = size
		case "2":
			h.L2 = size
		case "3":
			h.L3 = size
			h.L3Shared = countCPUs(read("shared_cpu_list"))
		}
	}
}

// parseCacheSize reads sysfs's "32K", "1024K", "2M" (0 when unreadable).
func parseCacheSize(s string) int64 {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > 1<<40/mult {
		return 0
	}
	return n * mult
}

// countCPUs counts the CPUs of a list like "0-1,4,6-7".
func countCPUs(list string) int {
	n := 0
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		switch {
		case !isRange && err1 == nil:
			n++
		case isRange && err1 == nil && err2 == nil && b >= a:
			n += b - a + 1
		}
	}
	return n
}

// vectorFlags are the flags that decide which code a kernel gets.
var vectorFlags = []string{"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
	"avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "neon", "asimd", "sve"}

// VectorFlags lists the host's flags among those that decide its kernels'
// code (vector widths, FMA, half types), in a fixed order.
func (h HostCPU) VectorFlags() []string {
	have := map[string]bool{}
	for _, f := range h.Flags {
		have[f] = true
	}
	var out []string
	for _, f := range vectorFlags {
		if have[f] {
			out = append(out, f)
		}
	}
	return out
}

// FMAWidth is the float32 lanes of the widest vector FMA the cores run
// at full rate, where the processor is known (0: unknown; ir.Target's
// FMAWidth). AMD's Zen 5 (family 26) has two 512-bit FMA units: 16. Zen 4
// (family 25) runs a 512-bit FMA as two 256-bit halves, one per cycle:
// 8, as wide as its two 256-bit FMAs. Intel's AVX-512 parts have one or
// two 512-bit FMA units by model; those with AMX (Sapphire Rapids and
// later Xeons) have two: 16 (the Xeon guest's FMA peak, 466-492 GFLOP/s
// on 2 cores, is 64 flops a cycle at its clock; conv2d_resnet 39.5-40.3
// -> 34.2-36.8 ms with its columns as 3x16+8, five pairs). Others are not
// told apart: 0, the heuristic's choices from before the field.
func (h HostCPU) FMAWidth() int {
	if h.Vendor == "GenuineIntel" && slices.Contains(h.Flags, "amx_tile") {
		return 16
	}
	if h.Vendor != "AuthenticAMD" || !slices.Contains(h.Flags, "avx512f") {
		return 0
	}
	switch fam, _ := strconv.Atoi(h.Family); {
	case fam >= 26:
		return 16
	case fam == 25:
		return 8
	}
	return 0
}

// OutputCache is the cache, in bytes, that keeps what one kernel writes
// for the next kernel to read faster than from memory (ir.Target's L3:
// outputs past it are streamed around the caches, inputs past it
// prefetched and read in several streams). That is the L3 on AMD's parts
// (one per core complex) and elsewhere where the L3 is known, but the L2s
// of the cores on Intel's AVX-512 parts (Xeons), whose L3 is a victim
// cache on a mesh shared with many more cores than a guest has: on a
// 2-core Xeon guest with an L3 of 480 MiB, one core read an output of
// 1 MiB back at 77 GB/s after writing it, 4 MiB at 30 GB/s and 8 MiB at
// 30 (28-31 GB/s cold: memory's speed), and an elementwise kernel
// streaming its 64 MiB output ran 1.3x as fast as with plain stores.
func (h HostCPU) OutputCache() int64 {
	if h.Vendor == "GenuineIntel" && slices.Contains(h.Flags, "avx512f") && h.L2 > 0 && h.Cores > 0 {
		return min(h.L2*int64(h.Cores), h.L3)
	}
	return h.L3
}

// FarPrefetch is how far ahead (bytes) row kernels also prefetch their
// rows into L2 alone (ir.Target's FarPrefetch): 128 KiB on Intel's
// AVX-512 parts, whose prefetcht2 fills L2 without L1 (softmax_4096's
// kernel on the Xeon guest: 4.3-4.9 -> 3.3-3.5 ms in a C harness); 0
// elsewhere, where it is not measured (a prefetch that also fills L1
// would evict the rows before they are read).
func (h HostCPU) FarPrefetch() int64 {
	if h.Vendor == "GenuineIntel" && slices.Contains(h.Flags, "avx512f") {
		return 128 << 10
	}
	return 0
}

// CacheKey is the part of the host that blocking decisions depend on (in
// the kernel-cache and BEAM fingerprints).
func (h HostCPU) CacheKey() string {
	return fmt.Sprintf("L1d=%d L2=%d L3=%d/%d", h.L1d, h.L2, h.L3, h.L3Shared)
}

// String is one line for benchmark reports: model, cores, caches, flags.
func (h HostCPU) String() string {
	model := h.Model
	if model == "" {
		model = runtime.GOARCH
	}
	if h.Family != "" || h.Number != "" {
		model += fmt.Sprintf(" (family %s, model %s)", h.Family, h.Number)
	}
	l3 := FormatBytes(h.L3)
	if h.L3Shared > 1 {
		l3 += fmt.Sprintf(" shared by %d", h.L3Shared)
	}
	return fmt.Sprintf("%s, %d cores, L1d %s and L2 %s per core, L3 %s; %s", model, h.Cores,
		FormatBytes(h.L1d), FormatBytes(h.L2), l3, strings.Join(h.VectorFlags(), " "))
}

// FormatBytes prints a cache size as KiB or MiB.
func FormatBytes(n int64) string {
	switch {
	case n <= 0:
		return "?"
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
