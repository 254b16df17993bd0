package script

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tgc/pkg/realize"
	"tgc/pkg/render"
	"tgc/pkg/script/nnlib"
	"tgc/pkg/tensor"
)

// TestReferenceCUDAPTX traces every numpy reference case for CUDA and
// compiles all the kernels to PTX with clang-15 (no CUDA SDK needed): a
// kernel that does not compile fails. CI installs clang-15.
func TestReferenceCUDAPTX(t *testing.T) {
	clang, err := exec.LookPath("clang-15")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("clang-15 not found: .ci/run installs it")
		}
		t.Skip("clang-15 not found")
	}
	cases, data := loadRefCases(t)
	tr, err := realize.NewTracer("CUDA", realize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := tensor.NewContext(tr)
	for _, c := range cases {
		env := map[string]*tensor.Tensor{}
		for _, in := range c.Inputs {
			if env[in], err = nnlib.FromSafetensors(ctx, data[c.Name+"."+in]); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
		}
		got, err := Eval(ctx, c.Expr, env)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if err := tr.Realize(got.Node()); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
	}
	dir := t.TempDir()
	if err := tr.WritePlan(dir); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "kernels", "*.cu"))
	if len(files) < len(cases)/2 {
		t.Fatalf("only %d CUDA kernels traced for %d cases", len(files), len(cases))
	}
	// Kernel names are unique across a plan: one translation unit.
	var sb strings.Builder
	sb.WriteString(render.CUDACheckPrelude)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sb.Write(src)
	}
	in, out := filepath.Join(dir, "all.cu"), filepath.Join(dir, "all.ptx")
	if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := exec.Command(clang, render.ClangPTXArgs("sm_80", in, out)...).CombinedOutput(); err != nil {
		t.Fatalf("clang-15 rejects the CUDA kernels of the reference suite: %v\n%s", err, res)
	}
	t.Logf("%d CUDA kernels of the reference suite compile to PTX", len(files))
}
