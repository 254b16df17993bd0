package realize_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/realize"
	"tgc/pkg/render"
	"tgc/pkg/safetensors"
	"tgc/pkg/script"
	"tgc/pkg/tensor"
)

// The numpy reference suite (testdata/ref, see tools/refgen) on the GPU
// paths: run on CL when it is available, and every kernel it renders for
// CUDA compiled to PTX by clang-15.

type refCase struct {
	Name   string   `json:"name"`
	Expr   string   `json:"expr"`
	Inputs []string `json:"inputs"`
	Atol   float64  `json:"atol"`
	Rtol   float64  `json:"rtol"`
}

func loadRef(t *testing.T) ([]refCase, map[string]safetensors.Tensor) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "ref")
	b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []refCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	sts, _, err := safetensors.ReadFile(filepath.Join(dir, "cases.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]safetensors.Tensor{}
	for _, st := range sts {
		m[st.Name] = st
	}
	return file.Cases, m
}

func fromST(st safetensors.Tensor) (*tensor.Tensor, error) {
	dt, ok := ir.DTypeFromSafetensors(st.DType)
	if !ok {
		return nil, fmt.Errorf("dtype %s", st.DType)
	}
	return tensor.FromBytes(dt, st.Shape, st.Data)
}

// evalRef evaluates a case with the current engine.
func evalRef(c refCase, data map[string]safetensors.Tensor) (got *tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	env := map[string]*tensor.Tensor{}
	for _, in := range c.Inputs {
		if env[in], err = fromST(data[c.Name+"."+in]); err != nil {
			return nil, err
		}
	}
	return script.Eval(c.Expr, env)
}

func TestReferenceCasesCL(t *testing.T) {
	if _, err := realize.Install("CL", realize.Options{}); err != nil {
		t.Skipf("CL unavailable: %v", err)
	}
	defer tensor.SetEngine(nil)
	cases, data := loadRef(t)
	failed := 0
	for _, c := range cases {
		if msg := checkRef(c, data); msg != "" {
			failed++
			t.Errorf("%s: %s\n    expr: %s", c.Name, msg, c.Expr)
		}
	}
	t.Logf("%d of %d reference cases pass on CL", len(cases)-failed, len(cases))
}

func checkRef(c refCase, data map[string]safetensors.Tensor) string {
	got, err := evalRef(c, data)
	if err != nil {
		return err.Error()
	}
	want, err := fromST(data[c.Name+".expected"])
	if err != nil {
		return err.Error()
	}
	if got.DType() != want.DType() || !slices.Equal(got.Shape(), want.Shape()) {
		return fmt.Sprintf("got %s %v, want %s %v", got.DType(), got.Shape(), want.DType(), want.Shape())
	}
	gv, err := got.Floats()
	if err != nil {
		return err.Error()
	}
	wv, _ := want.Floats()
	for i := range wv {
		g, w := gv[i], wv[i]
		var bad bool
		switch {
		case !want.DType().IsFloat():
			bad = g != w
		case math.IsNaN(w) || math.IsNaN(g):
			bad = math.IsNaN(w) != math.IsNaN(g)
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			bad = g != w
		default:
			bad = math.Abs(g-w) > c.Atol+c.Rtol*math.Abs(w)
		}
		if bad {
			return fmt.Sprintf("flat index %d: got %v, want %v", i, g, w)
		}
	}
	return ""
}

// TestReferenceCUDAPTX traces every reference case for CUDA and compiles
// each kernel to PTX with clang-15: a kernel that does not compile fails.
func TestReferenceCUDAPTX(t *testing.T) {
	clang, err := exec.LookPath("clang-15")
	if err != nil {
		t.Skip("clang-15 not found (CI installs it)")
	}
	defer tensor.SetEngine(nil)
	cases, data := loadRef(t)
	tr, err := realize.NewTracer("CUDA", realize.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tensor.SetEngine(tr)
	for _, c := range cases {
		if got, err := evalRef(c, data); err == nil {
			_ = tr.Realize(got.Node())
		}
	}
	dir := t.TempDir()
	if err := tr.WritePlan(dir); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "kernels", "*.cu"))
	if len(files) < 10 {
		t.Fatalf("only %d CUDA kernels traced", len(files))
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
	t.Logf("%d CUDA kernels compile to PTX", len(files))
}
