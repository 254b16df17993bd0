package backend

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const cpuinfoZen4 = `processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 25
model		: 17
model name	: AMD EPYC
flags		: fpu sse4_2 avx fma avx2 avx512f avx512bw avx512vl avx512_bf16 avx512_vnni

processor	: 1
model name	: something else
`

func TestParseCPUInfo(t *testing.T) {
	h := parseCPUInfo(cpuinfoZen4)
	if h.Model != "AMD EPYC" || h.Family != "25" || h.Number != "17" {
		t.Errorf("model %q family %q number %q", h.Model, h.Family, h.Number)
	}
	want := []string{"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"}
	if got := h.VectorFlags(); !reflect.DeepEqual(got, want) {
		t.Errorf("vector flags %v, want %v", got, want)
	}
}

// TestFMAWidth: the full-rate FMA width by vendor and family: Zen 5's
// two 512-bit units 16, Zen 4's halves 8; unknown (0) without AVX-512 and
// for processors the table does not tell apart.
func TestFMAWidth(t *testing.T) {
	zen4 := parseCPUInfo(cpuinfoZen4)
	zen5 := parseCPUInfo(strings.Replace(cpuinfoZen4, "cpu family	: 25", "cpu family	: 26", 1))
	avx2 := parseCPUInfo(strings.Replace(strings.Replace(cpuinfoZen4, "cpu family	: 25", "cpu family	: 26", 1), " avx512f", "", 1))
	intel := parseCPUInfo(strings.Replace(cpuinfoZen4, "AuthenticAMD", "GenuineIntel", 1))
	xeonAMX := parseCPUInfo(strings.Replace(strings.Replace(cpuinfoZen4, "AuthenticAMD", "GenuineIntel", 1), " avx512f", " avx512f amx_tile", 1))
	if zen4.Vendor != "AuthenticAMD" {
		t.Errorf("vendor %q", zen4.Vendor)
	}
	for _, c := range []struct {
		name string
		h    HostCPU
		want int
	}{{"Zen 4", zen4, 8}, {"Zen 5", zen5, 16}, {"Zen 5 without AVX-512", avx2, 0}, {"Intel", intel, 0}, {"Xeon with AMX", xeonAMX, 16}} {
		if got := c.h.FMAWidth(); got != c.want {
			t.Errorf("%s: FMAWidth %d, want %d", c.name, got, c.want)
		}
	}
}

// TestFarPrefetch: rows are prefetched 128 KiB ahead into L2 on Intel's
// AVX-512 parts only (their prefetcht2 skips L1); nowhere else.
func TestFarPrefetch(t *testing.T) {
	zen5 := parseCPUInfo(strings.Replace(cpuinfoZen4, "cpu family	: 25", "cpu family	: 26", 1))
	intel := parseCPUInfo(strings.Replace(cpuinfoZen4, "AuthenticAMD", "GenuineIntel", 1))
	intelAVX2 := parseCPUInfo(strings.Replace(strings.Replace(cpuinfoZen4, "AuthenticAMD", "GenuineIntel", 1), " avx512f", "", 1))
	for _, c := range []struct {
		name string
		h    HostCPU
		want int64
	}{{"Zen 5", zen5, 0}, {"Intel AVX-512", intel, 128 << 10}, {"Intel AVX2", intelAVX2, 0}} {
		if got := c.h.FarPrefetch(); got != c.want {
			t.Errorf("%s: FarPrefetch %d, want %d", c.name, got, c.want)
		}
	}
}

// A fake sysfs cache directory: an Intel-like and an AMD-like layout.
func TestReadCaches(t *testing.T) {
	for _, tc := range []struct {
		name         string
		files        map[string][4]string // index: level, type, size, shared_cpu_list
		l1d, l2, l3  int64
		shared       int
		wantInString string
	}{
		{"xeon", map[string][4]string{
			"index0": {"1", "Data", "48K", "0"}, "index1": {"1", "Instruction", "32K", "0"},
			"index2": {"2", "Unified", "2048K", "0"}, "index3": {"3", "Unified", "491520K", "0-1"}},
			48 << 10, 2 << 20, 480 << 20, 2, "L1d 48 KiB and L2 2 MiB per core, L3 480 MiB shared by 2"},
		{"zen4", map[string][4]string{
			"index0": {"1", "Data", "32K", "0"}, "index1": {"1", "Instruction", "32K", "0"},
			"index2": {"2", "Unified", "1024K", "0"}, "index3": {"3", "Unified", "32768K", "0-1"}},
			32 << 10, 1 << 20, 32 << 20, 2, "L1d 32 KiB and L2 1 MiB per core, L3 32 MiB shared by 2"},
		{"missing", nil, 0, 0, 0, 0, "L1d ? and L2 ? per core, L3 ?"},
	} {
		dir := t.TempDir()
		for idx, f := range tc.files {
			d := filepath.Join(dir, idx)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"level", "type", "size", "shared_cpu_list"} {
				if err := os.WriteFile(filepath.Join(d, name), []byte(f[i]+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		h := parseCPUInfo(cpuinfoZen4)
		h.Cores = 2
		h.readCaches(dir)
		if h.L1d != tc.l1d || h.L2 != tc.l2 || h.L3 != tc.l3 || h.L3Shared != tc.shared {
			t.Errorf("%s: L1d %d L2 %d L3 %d/%d", tc.name, h.L1d, h.L2, h.L3, h.L3Shared)
		}
		if s := h.String(); !strings.Contains(s, tc.wantInString) || !strings.HasPrefix(s, "AMD EPYC (family 25, model 17), 2 cores") {
			t.Errorf("%s: %q", tc.name, s)
		}
	}
}

func TestParseCacheSize(t *testing.T) {
	for in, want := range map[string]int64{"32K": 32 << 10, "2M": 2 << 20, "1G": 1 << 30, "512": 512, "": 0, "xK": 0, "-1K": 0, "99999999999999G": 0} {
		if got := parseCacheSize(in); got != want {
			t.Errorf("parseCacheSize(%q) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[string]int{"0-1": 2, "0": 1, "0-3,8,10-11": 7, "": 0, "3-1": 0} {
		if got := countCPUs(in); got != want {
			t.Errorf("countCPUs(%q) = %d, want %d", in, got, want)
		}
	}
}

// The host this runs on: caches are read from sysfs, or from CPUID on x86
// where a virtual machine has no sysfs cache directory.
func TestHostCaches(t *testing.T) {
	h := Host()
	if _, err := os.Stat("/sys/devices/system/cpu/cpu0/cache/index0"); err != nil && hostCPUID == nil {
		t.Skip("no sysfs cache information and no CPUID")
	}
	if h.L1d < 4<<10 || h.L2 < h.L1d {
		t.Errorf("host caches L1d %d L2 %d: %s", h.L1d, h.L2, h)
	}
}
