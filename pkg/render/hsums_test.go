package render

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGroupedSumsBitExact: the vector of K lane sums (groupedSums, with
// its tg_fold macros) holds, bit for bit, each vector's tg_psumW, for
// every K and width the renderer groups, over vectors whose lanes span
// 2^±20 (so that another order of the additions rounds differently:
// the test counts such an order's differences, which must not be none).
func TestGroupedSumsBitExact(t *testing.T) {
	cc := cCompiler(t)
	var body, defs strings.Builder
	for _, w := range []int{4, 8, 16} {
		defs.WriteString(foldDef(w) + "\n")
	}
	for _, c := range []struct{ w, k int }{{8, 4}, {8, 8}, {16, 4}, {16, 8}, {16, 16}} {
		xs := make([]string, c.k)
		for i := range xs {
			xs[i] = fmt.Sprintf("v%d[%d]", c.w, i)
		}
		expr, _ := groupedSums(xs, c.w)
		fmt.Fprintf(&body, `
  for (int trial = 0; trial < 20000; trial++) {
    for (int i = 0; i < %[2]d; i++)
      for (int l = 0; l < %[1]d; l++) v%[1]d[i][l] = next();
    tg_f%[2]d g = %[3]s;
    for (int i = 0; i < %[2]d; i++) {
      float want = tg_psum%[1]d(v%[1]d[i]), other = 0;
      for (int l = %[1]d - 1; l >= 0; l--) other += v%[1]d[i][l];
      unsigned a, b, o;
      memcpy(&a, &want, 4), memcpy(&b, &g[i], 4), memcpy(&o, &other, 4);
      differ += a != b;
      reordered += a != o;
    }
  }
`, c.w, c.k, expr)
	}
	src := "#include <stdio.h>\n#include <string.h>\n#include <stdint.h>\n" + cVecPrelude(16) + defs.String() + `
static uint64_t s = 88172645463325252ull;
static float next(void) {
  s ^= s << 13, s ^= s >> 7, s ^= s << 17;
  float m = (float)(s >> 40) / (float)(1 << 24) - 0.5f;
  int e = (int)((s >> 20) % 41) - 20;
  return m * (float)(1 << (e + 20)) / (float)(1 << 20);
}
int main(void) {
  static tg_f8 v8[8];
  static tg_f16 v16[16];
  long differ = 0, reordered = 0;
` + body.String() + `
  printf("%ld %ld\n", differ, reordered);
  return 0;
}
`
	dir := t.TempDir()
	cfile, exe := filepath.Join(dir, "g.c"), filepath.Join(dir, "g")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O3", "-march=native", "-Wno-psabi", "-o", exe, cfile).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	var differ, reordered int
	if _, err := fmt.Sscan(string(out), &differ, &reordered); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if differ != 0 {
		t.Errorf("%d grouped sums differ from tg_psum's", differ)
	}
	if reordered == 0 {
		t.Errorf("summing the lanes in another order changed no result: the inputs cannot tell orders apart")
	}
}
