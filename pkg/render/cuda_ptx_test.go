package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CompileCUDAWithClang compiles CUDA kernels to PTX with clang-15 (no
// CUDA SDK needed), packing kernels with distinct names into one
// translation unit per clang run; it fails the test on any error.
func compileCUDAWithClang(t *testing.T, kernels map[string]string) {
	t.Helper()
	clang, err := exec.LookPath("clang-15")
	if err != nil {
		t.Skip("clang-15 not found (CI installs it)")
	}
	var units []map[string]string
	for _, name := range sortedKeys(kernels) {
		placed := false
		base := strings.SplitN(name, "#", 2)[0]
		for _, u := range units {
			if _, taken := u[base]; !taken {
				u[base] = kernels[name]
				placed = true
				break
			}
		}
		if !placed {
			units = append(units, map[string]string{base: kernels[name]})
		}
	}
	dir := t.TempDir()
	for i, u := range units {
		var sb strings.Builder
		sb.WriteString(CUDACheckPrelude)
		for _, n := range sortedKeys(u) {
			sb.WriteString(u[n])
		}
		in, out := filepath.Join(dir, "unit.cu"), filepath.Join(dir, "unit.ptx")
		if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := exec.Command(clang, ClangPTXArgs("sm_80", in, out)...).CombinedOutput()
		if err != nil {
			t.Fatalf("clang-15 rejects CUDA unit %d (%s): %v\n%s", i, strings.Join(sortedKeys(u), ", "), err, res)
		}
		ptx, _ := os.ReadFile(out)
		for n := range u {
			if !strings.Contains(string(ptx), ".entry "+n) {
				t.Errorf("PTX lacks the entry %s", n)
			}
		}
	}
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

// TestCUDAPTX compiles every rendered CUDA kernel of the golden graphs to
// PTX, with the default limits and with small ones (other grid shapes).
func TestCUDAPTX(t *testing.T) {
	kernels := map[string]string{}
	small := Limits{MaxWorkGroup: 64, MaxLocal: [3]int64{64, 64, 64}, MaxGroups: [3]int64{0, 2, 2}, LocalMem: 1 << 10}
	for li, lang := range []*Lang{CUDA, CUDAFor(small)} {
		for name, out := range gpuGraphs() {
			for _, k := range kernelsOf(t, name, out, lang.Target()) {
				kernels[k.Name+"#"+name+string(rune('0'+li))] = Render(lang, k)
			}
		}
	}
	compileCUDAWithClang(t, kernels)
}
