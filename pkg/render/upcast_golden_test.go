package render

import (
	"os"
	"path/filepath"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestGoldenCUpcast pins the CPU rendering of a register-blocked matmul
// (the upcast pass: lanes, one accumulator each, one shared loop).
func TestGoldenCUpcast(t *testing.T) {
	a, b := input(ir.Float32, 8, 64), input(ir.Float32, 64, 32)
	out := a.Dot(b).Relu()
	s, err := fuse.Create([]*tensor.Node{out.Node()}, fuse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.OptimizeFor(s.Items[0].Kernel, ir.CPUTarget, nil)
	if err != nil {
		t.Fatal(err)
	}
	k.Name = s.Items[0].Kernel.Name
	got := Render(C, k)
	path := filepath.Join("testdata", "matmul_upcast.c")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/render -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("rendered C differs from %s:\n%s", path, got)
	}
}
