package render

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// shiftHelpers renders SHL and SHR for int8, uint8 and int32 in C and
// returns the helper functions the kernels define.
func shiftHelpers(t *testing.T) string {
	t.Helper()
	var helpers []string
	seen := map[string]bool{}
	helperRE := regexp.MustCompile(`(?s)#ifndef TG_SH[LR]_[A-Z0-9]+\n.*?#endif\n`)
	for _, dt := range []ir.DType{ir.Int8, ir.Uint8, ir.Int32} {
		a, b := input(dt, 4), input(dt, 4)
		s, err := fuse.Create([]*tensor.Node{a.Shl(b).Add(a.Shr(b)).Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := ir.Optimize(s.Items[0].Kernel, nil)
		if err != nil {
			t.Fatal(err)
		}
		k.Name = "k"
		for _, h := range helperRE.FindAllString(Render(C, k), -1) {
			if !seen[h] {
				seen[h] = true
				helpers = append(helpers, h)
			}
		}
	}
	if len(helpers) != 6 {
		t.Fatalf("%d shift helpers rendered, want 6:\n%s", len(helpers), strings.Join(helpers, ""))
	}
	return strings.Join(helpers, "")
}

// shiftDriver calls every helper on every pair of int8 and uint8 values
// and on int32 edge values and counts, writing the results as int32.
const shiftDriver = `#include <stdio.h>
static int out[1 << 20]; static long n;
int main(void) {
  for (int a = -128; a < 128; a++) for (int b = -128; b < 128; b++) {
    out[n++] = tg_shl_int8((signed char)a, (signed char)b); out[n++] = tg_shr_int8((signed char)a, (signed char)b);
    out[n++] = tg_shl_uint8((unsigned char)a, (unsigned char)b); out[n++] = tg_shr_uint8((unsigned char)a, (unsigned char)b);
  }
  static const int xs[] = {XS}, ns[] = {NS};
  for (unsigned i = 0; i < sizeof xs / sizeof *xs; i++) for (unsigned j = 0; j < sizeof ns / sizeof *ns; j++) {
    out[n++] = tg_shl_int32(xs[i], ns[j]); out[n++] = tg_shr_int32(xs[i], ns[j]);
  }
  return fwrite(out, sizeof *out, n, stdout) == (size_t)n ? 0 : 1;
}
`

// TestShiftHelpersC compiles the C helpers of SHL and SHR with the
// undefined-behaviour sanitizer (any UB aborts the run) and checks them
// against the op table's semantics (the GO interpreter's) on every int8
// and uint8 pair and on int32 edge values and counts (negative, the
// width, beyond it).
func TestShiftHelpersC(t *testing.T) {
	cc := cCompiler(t)
	xs := []int64{math.MinInt32, math.MinInt32 + 1, -65536, -5, -1, 0, 1, 5, 12345, math.MaxInt32 - 1, math.MaxInt32}
	ns := []int64{math.MinInt32, -33, -1, 63, 64, 1000, math.MaxInt32}
	for k := int64(0); k <= 40; k++ {
		ns = append(ns, k)
	}
	list := func(v []int64) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprint(x)
			if x == math.MinInt32 {
				s[i] = "-2147483647-1"
			}
		}
		return strings.Join(s, ", ")
	}
	src := "#include <stdint.h>\n" + shiftHelpers(t) + strings.NewReplacer("XS", list(xs), "NS", list(ns)).Replace(shiftDriver)
	dir := t.TempDir()
	cfile, bin := filepath.Join(dir, "shift.c"), filepath.Join(dir, "shift")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-O2", "-fsanitize=undefined", "-fno-sanitize-recover=all", "-o", bin, cfile}
	if out, err := exec.Command(cc, flags...).CombinedOutput(); err != nil {
		t.Skipf("no UBSan build (%v): %s", err, out)
	}
	got, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("the helpers ran into undefined behaviour or failed: %v", err)
	}
	var want []int64
	for a := int64(-128); a < 128; a++ {
		for b := int64(-128); b < 128; b++ {
			ua, ub := int64(uint8(a)), int64(uint8(b))
			want = append(want, ir.IntOp(ir.OpShl, ir.Int8, a, b), ir.IntOp(ir.OpShr, ir.Int8, a, b),
				ir.IntOp(ir.OpShl, ir.Uint8, ua, ub), ir.IntOp(ir.OpShr, ir.Uint8, ua, ub))
		}
	}
	for _, x := range xs {
		for _, k := range ns {
			want = append(want, ir.IntOp(ir.OpShl, ir.Int32, x, k), ir.IntOp(ir.OpShr, ir.Int32, x, k))
		}
	}
	if len(got) != 4*len(want) {
		t.Fatalf("%d results, want %d", len(got)/4, len(want))
	}
	bad := 0
	for i, w := range want {
		if g := int64(int32(binary.LittleEndian.Uint32(got[4*i:]))); g != w && bad < 10 {
			bad++
			t.Errorf("result %d: C %d, GO %d", i, g, w)
		}
	}
}
