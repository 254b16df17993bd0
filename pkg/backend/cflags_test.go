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
