package backend

import (
	"slices"
	"testing"
)

func TestCompilerFlags(t *testing.T) {
	cases := []struct {
		name      string
		host      []string
		accepts   bool
		wantNoF16 bool
	}{
		{"AVX512-FP16 host, new compiler", []string{"avx2", "avx512f", "avx512_fp16"}, true, true},
		{"AVX512-FP16 host, old compiler", []string{"avx512f", "avx512_fp16"}, false, false},
		{"AVX-512 host without FP16", []string{"avx512f", "avx512_bf16"}, true, false},
		{"AVX2 host", []string{"avx2", "fma", "f16c"}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			got := compilerFlags(c.host, func(f string) bool { asked = append(asked, f); return c.accepts })
			if has := slices.Contains(got, noHalfArith); has != c.wantNoF16 {
				t.Errorf("flags %v: %s present = %v, want %v", got, noHalfArith, has, c.wantNoF16)
			}
			if !slices.Equal(got[:len(baseCFlags)], baseCFlags) {
				t.Errorf("flags %v do not start with %v", got, baseCFlags)
			}
			if slices.Contains(c.host, "avx512_fp16") != (len(asked) > 0) {
				t.Errorf("asked the compiler about %v on host %v", asked, c.host)
			}
		})
	}
}

// TestHostCompilerFlags: the probed compiler on this host gets the flag
// where the host has AVX512-FP16 (gcc 12 and clang 14 take it).
func TestHostCompilerFlags(t *testing.T) {
	cc, err := findCompiler()
	if err != nil {
		t.Skip(err)
	}
	if !slices.Contains(Host().Flags, "avx512_fp16") {
		if slices.Contains(cc.flags, noHalfArith) {
			t.Errorf("flags %v on a host without avx512_fp16", cc.flags)
		}
		return
	}
	if !slices.Contains(cc.flags, noHalfArith) {
		t.Logf("%s (%s) does not take %s", cc.path, cc.version, noHalfArith)
	}
}

// TestDeviceFlags: a 16-lane device asks gcc for 512-bit vectors too; an
// 8-lane one keeps the compiler's flags.
func TestDeviceFlags(t *testing.T) {
	cc := compiler{flags: slices.Clone(baseCFlags)}
	for _, c := range []struct {
		width int
		want  bool
	}{{16, true}, {8, false}} {
		d := &cpuDevice{cc: cc, width: c.width}
		if got := slices.Contains(d.flags(), "-mprefer-vector-width=512"); got != c.want {
			t.Errorf("width %d: flags %v", c.width, d.flags())
		}
		if !slices.Equal(cc.flags, baseCFlags) {
			t.Fatalf("width %d: the compiler's flags changed to %v", c.width, cc.flags)
		}
	}
}

func TestOutputCache(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name string
		h    HostCPU
		want int64
	}{
		{"Xeon guest: the L2s", HostCPU{Vendor: "GenuineIntel", Flags: []string{"avx2", "avx512f"}, Cores: 2, L2: 2 * mib, L3: 480 * mib}, 4 * mib},
		{"Xeon guest, L3 unknown", HostCPU{Vendor: "GenuineIntel", Flags: []string{"avx512f"}, Cores: 2, L2: 2 * mib}, 0},
		{"Intel without AVX-512: the L3", HostCPU{Vendor: "GenuineIntel", Flags: []string{"avx2"}, Cores: 8, L2: 2 * mib, L3: 24 * mib}, 24 * mib},
		{"Zen 5: the L3", HostCPU{Vendor: "AuthenticAMD", Flags: []string{"avx512f"}, Cores: 2, L2: mib, L3: 32 * mib}, 32 * mib},
		{"many cores: at most the L3", HostCPU{Vendor: "GenuineIntel", Flags: []string{"avx512f"}, Cores: 64, L2: 2 * mib, L3: 96 * mib}, 96 * mib},
	}
	for _, c := range cases {
		if got := c.h.OutputCache(); got != c.want {
			t.Errorf("%s: OutputCache %d, want %d", c.name, got, c.want)
		}
	}
}
