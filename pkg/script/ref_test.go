package script

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tgc/pkg/realize"
	"tgc/pkg/safetensors"
	"tgc/pkg/script/nnlib"
	"tgc/pkg/tensor"
)

// refCase is one entry of testdata/ref/cases.json (see tools/refgen).
type refCase struct {
	Name   string   `json:"name"`
	Expr   string   `json:"expr"`
	Inputs []string `json:"inputs"`
	Atol   float64  `json:"atol"`
	Rtol   float64  `json:"rtol"`
}

func loadRefCases(t *testing.T) ([]refCase, map[string]safetensors.Tensor) {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "ref")
	b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Version int       `json:"version"`
		Cases   []refCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatalf("cases.json: %v", err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("cases.json has no cases")
	}
	sts, _, err := safetensors.ReadFile(filepath.Join(dir, "cases.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]safetensors.Tensor{}
	for _, st := range sts {
		byName[st.Name] = st
	}
	return file.Cases, byName
}

// TestReferenceCases evaluates every numpy reference case with Eval on the
// GO device, and on CPU and CL when available (always in CI), and compares with
// the expected values: exactly for ints and bools, with the case's
// atol/rtol for floats.
func TestReferenceCases(t *testing.T) {
	cases, data := loadRefCases(t)
	devices := []string{"GO", "CPU", "CL", "CUDA"}
	for _, dev := range devices {
		t.Run(dev, func(t *testing.T) {
			ctx, _, err := realize.NewContext(dev, realize.Options{})
			if err != nil {
				if dev == "GO" || (os.Getenv("CI") != "" && dev != "CUDA") { // CI installs a compiler and PoCL
					t.Fatalf("%s device: %v", dev, err)
				}
				t.Skipf("device %s unavailable: %v", dev, err)
			}
			failed := 0
			for _, c := range cases {
				if msg := runRefCase(ctx, c, data); msg != "" {
					failed++
					t.Errorf("%s: %s\n    expr: %s", c.Name, msg, c.Expr)
				}
			}
			if failed > 0 {
				t.Logf("%d of %d reference cases failed on %s", failed, len(cases), dev)
			}
		})
	}
}

// runRefCase returns "" when the case passes, else what went wrong.
func runRefCase(ctx *tensor.Context, c refCase, data map[string]safetensors.Tensor) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprintf("panic: %v", r)
		}
	}()
	env := map[string]*tensor.Tensor{}
	for _, in := range c.Inputs {
		st, ok := data[c.Name+"."+in]
		if !ok {
			return fmt.Sprintf("input %s missing from cases.safetensors", in)
		}
		x, err := nnlib.FromSafetensors(ctx, st)
		if err != nil {
			return fmt.Sprintf("input %s: %v", in, err)
		}
		env[in] = x
	}
	st, ok := data[c.Name+".expected"]
	if !ok {
		return "expected value missing from cases.safetensors"
	}
	want, err := nnlib.FromSafetensors(ctx, st)
	if err != nil {
		return fmt.Sprintf("expected: %v", err)
	}
	got, err := Eval(ctx, c.Expr, env)
	if err != nil {
		return fmt.Sprintf("error: %v", err)
	}
	if got.DType() != want.DType() || !slices.Equal(got.Shape(), want.Shape()) {
		return fmt.Sprintf("got %s %s, want %s %s", got.DType(), tensor.FormatShape(got.Shape()), want.DType(), tensor.FormatShape(want.Shape()))
	}
	gb, err := got.Bytes()
	if err != nil {
		return fmt.Sprintf("realize: %v", err)
	}
	wb, err := want.Bytes()
	if err != nil {
		return fmt.Sprintf("reading expected: %v", err)
	}
	exact := !want.DType().IsFloat()
	if exact { // integers bit for bit, 64-bit ones included
		for i := range want.Numel() {
			if g, w := tensor.GetInt(gb, got.DType(), i), tensor.GetInt(wb, want.DType(), i); g != w {
				return fmt.Sprintf("exact mismatch at flat index %d: got %d, want %d (dtype %s)", i, g, w, want.DType())
			}
		}
		return ""
	}
	gv, wv := make([]float64, got.Numel()), make([]float64, want.Numel())
	for i := range gv {
		gv[i], wv[i] = tensor.GetValue(gb, got.DType(), i), tensor.GetValue(wb, want.DType(), i)
	}
	maxErr, worst := 0.0, -1
	for i := range wv {
		g, w := gv[i], wv[i]
		var bad bool
		switch {
		case exact:
			bad = g != w
		case c.Atol == 0 && c.Rtol == 0: // bit for bit: the sign of zero counts
			bad = math.Float64bits(g) != math.Float64bits(w)
		case math.IsNaN(w) || math.IsNaN(g):
			bad = math.IsNaN(w) != math.IsNaN(g)
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			bad = g != w
		default:
			bad = math.Abs(g-w) > c.Atol+c.Rtol*math.Abs(w)
		}
		if d := math.Abs(g - w); bad && (worst < 0 || d > maxErr || math.IsNaN(d)) {
			maxErr, worst = d, i
		}
	}
	if worst >= 0 {
		kind := "max abs error"
		if exact {
			kind = "exact mismatch, max abs error"
		}
		return fmt.Sprintf("%s %g at flat index %d: got %v, want %v (dtype %s, atol %g, rtol %g)", kind, maxErr, worst, gv[worst], wv[worst], want.DType(), c.Atol, c.Rtol)
	}
	return ""
}
