package render

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"tgc/pkg/ir"
)

// cCompiler is the system C compiler, as the CPU backend finds it.
func cCompiler(t *testing.T) string {
	t.Helper()
	for _, c := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	t.Skip("no C compiler")
	return ""
}

// cMathDriver applies the prelude's functions to a file of floats, each
// in its own loop (vectorized, as in a kernel): argv = in, exp2 out, log2 out.
const cMathDriver = `#include <stdio.h>
#include <stdlib.h>
static float *readf(const char *p, long *n) {
  FILE *f = fopen(p, "rb"); if (!f) exit(2);
  fseek(f, 0, SEEK_END); *n = ftell(f) / 4; fseek(f, 0, SEEK_SET);
  float *b = malloc(*n * 4 + 4);
  if (fread(b, 4, *n, f) != (size_t)*n) exit(3);
  fclose(f); return b;
}
static void writef(const char *p, const float *b, long n) {
  FILE *f = fopen(p, "wb"); if (!f || fwrite(b, 4, n, f) != (size_t)n) exit(4);
  fclose(f);
}
int main(int argc, char **argv) {
  if (argc != 4) return 1;
  long n; float *x = readf(argv[1], &n);
  float *e = malloc(n * 4 + 4), *l = malloc(n * 4 + 4);
  for (long i = 0; i < n; i++) e[i] = tg_exp2f(x[i]);
  for (long i = 0; i < n; i++) l[i] = tg_log2f(x[i]);
  writef(argv[2], e, n); writef(argv[3], l, n);
  return 0;
}
`

// cMathInputs is every 1000th float32 bit pattern (both signs, all
// exponents) and the edge cases: zeros, infinities, NaN, subnormals, the
// ends of exp2's finite and normal ranges, integers and half-integers over
// that range, and values next to 1.
func cMathInputs() []float32 {
	var xs []float32
	for u := uint64(0); u < 1<<32; u += 1000 {
		xs = append(xs, math.Float32frombits(uint32(u)))
	}
	inf := float32(math.Inf(1))
	xs = append(xs, 0, float32(math.Copysign(0, -1)), inf, -inf, float32(math.NaN()),
		math.Float32frombits(1), math.Float32frombits(0x7fffff), math.Float32frombits(0x800000),
		-math.Float32frombits(1), math.MaxFloat32, -math.MaxFloat32, 1, 2, 0.5, 3)
	for i := -1600; i <= 1300; i++ {
		x := float32(i) / 10
		xs = append(xs, x, math.Nextafter32(x, inf), math.Nextafter32(x, -inf))
	}
	for i := 1; i < 5000; i++ {
		xs = append(xs, math.Float32frombits(0x3f800000+uint32(i)), math.Float32frombits(0x3f800000-uint32(i)),
			math.Float32frombits(uint32(i)), math.Float32frombits(uint32(i)*1677))
	}
	return xs
}

// ulps is the distance between two floats in units in the last place
// (0 when both are NaN, huge when only one is).
func ulps(a, b float32) float64 {
	an, bn := a != a, b != b
	if an || bn {
		if an && bn {
			return 0
		}
		return math.Inf(1)
	}
	ord := func(f float32) int64 {
		u := math.Float32bits(f)
		if u&0x80000000 != 0 {
			return -int64(u & 0x7fffffff)
		}
		return int64(u)
	}
	return math.Abs(float64(ord(a) - ord(b)))
}

// TestCMath compiles the C dialect's exp2 and log2 with the system
// compiler and the CPU backend's optimization flags, and compares them with
// Go's math package (rounded to float32) over a dense sweep of inputs.
func TestCMath(t *testing.T) {
	cc := cCompiler(t)
	xs := cMathInputs()
	for _, march := range cMarches() {
		t.Run(march, func(t *testing.T) { checkCMath(t, cc, march, xs) })
	}
}

// cMarches are the -march settings to check: the host's (as kernels are
// compiled), and AVX2 without AVX-512 where the host can run it (AVX-512
// masking lets gcc vectorize code that plain AVX2 cannot).
func cMarches() []string {
	m := []string{"native"}
	cpu, _ := os.ReadFile("/proc/cpuinfo")
	if runtime.GOARCH == "amd64" && strings.Contains(string(cpu), " avx512f") && strings.Contains(string(cpu), " avx2") &&
		strings.Contains(string(cpu), " fma") {
		m = append(m, "x86-64-v3")
	}
	return m
}

func checkCMath(t *testing.T, cc, march string, xs []float32) {
	dir := t.TempDir()
	src := "#include <stdint.h>\n#include <math.h>\n" + cMathPrelude(map[ir.Op]bool{ir.OpExp2: true, ir.OpLog2: true}) + cMathDriver
	cfile, exe := filepath.Join(dir, "m.c"), filepath.Join(dir, "m")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O3", "-march="+march, "-fno-math-errno", "-o", exe, cfile, "-lm").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	in := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(x))
	}
	inPath, ePath, lPath := filepath.Join(dir, "in"), filepath.Join(dir, "exp2"), filepath.Join(dir, "log2")
	if err := os.WriteFile(inPath, in, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(exe, inPath, ePath, lPath).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", exe, err, out)
	}
	for _, fn := range []struct {
		name string
		path string
		ref  func(float64) float64
		max  float64
	}{
		{"exp2", ePath, math.Exp2, 1},
		{"log2", lPath, math.Log2, 1},
	} {
		b, err := os.ReadFile(fn.path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != len(in) {
			t.Fatalf("%s: %d results for %d inputs", fn.name, len(b)/4, len(xs))
		}
		worst, worstX, bad := 0.0, float32(0), 0
		for i, x := range xs {
			got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			want := float32(fn.ref(float64(x)))
			u := ulps(got, want)
			if u > worst {
				worst, worstX = u, x
			}
			if u > fn.max {
				if bad++; bad <= 10 {
					t.Errorf("%s(%g) [%#08x] = %g [%#08x], want %g [%#08x] (%g ulp)", fn.name, x, math.Float32bits(x),
						got, math.Float32bits(got), want, math.Float32bits(want), u)
				}
			}
		}
		t.Logf("%s: %d inputs, max error %g ulp at %g", fn.name, len(xs), worst, worstX)
		if bad > 0 {
			t.Errorf("%s: %d inputs off by more than %g ulp", fn.name, bad, fn.max)
		}
	}
}

// TestCMathVectorizes checks that a loop over exp2 and log2, compiled as
// the CPU backend compiles kernels, calls nothing (libm's functions would
// be calls) and uses 256-bit (or 512-bit) vectors: for the host where it
// has AVX2, and on amd64 for AVX2 without AVX-512 (compiled, not run).
func TestCMathVectorizes(t *testing.T) {
	cc := cCompiler(t)
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("no objdump")
	}
	cpu, _ := os.ReadFile("/proc/cpuinfo")
	marches := map[string]bool{"native": strings.Contains(string(cpu), " avx2")}
	if runtime.GOARCH == "amd64" {
		marches["x86-64-v3"] = true
	}
	dir := t.TempDir()
	src := "#include <stdint.h>\n#include <math.h>\n" + cMathPrelude(map[ir.Op]bool{ir.OpExp2: true, ir.OpLog2: true}) +
		"void E(float *restrict a, float *restrict b, const float *restrict x, int n) {\n" +
		"  for (int i = 0; i < n; i++) { a[i] = tg_exp2f(x[i]); b[i] = tg_log2f(x[i]); }\n}\n"
	cfile := filepath.Join(dir, "v.c")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for march, wide := range marches {
		so := filepath.Join(dir, march+".so")
		if out, err := exec.Command(cc, "-O3", "-march="+march, "-fPIC", "-shared", "-fno-math-errno", "-o", so, cfile, "-lm").CombinedOutput(); err != nil {
			if march != "native" {
				t.Logf("%s: -march=%s: %v (skipped)", cc, march, err)
				continue
			}
			t.Fatalf("%s: %v\n%s", cc, err, out)
		}
		out, err := exec.Command(objdump, "-d", "--no-show-raw-insn", "--disassemble=E", so).Output()
		if err != nil {
			t.Skipf("objdump: %v", err)
		}
		asm := string(out)
		if strings.Contains(asm, "call") {
			t.Errorf("-march=%s: the loop calls a function:\n%s", march, asm)
		}
		if wide && !strings.Contains(asm, "ymm") && !strings.Contains(asm, "zmm") {
			t.Errorf("-march=%s: the loop is not vectorized:\n%s", march, asm)
		}
	}
}

// cVecExp2Driver applies the vector exp2 of the C vector prelude, W lanes
// at a time (the input is padded to a multiple of W).
const cVecExp2Driver = `#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  if (argc != 3) return 1;
  FILE *f = fopen(argv[1], "rb"); if (!f) return 2;
  fseek(f, 0, SEEK_END); long n = ftell(f) / 4; fseek(f, 0, SEEK_SET);
  long m = (n + W - 1) / W * W;
  float *x = calloc(m, 4), *y = calloc(m, 4);
  if (fread(x, 4, n, f) != (size_t)n) return 3;
  fclose(f);
  for (long i = 0; i < m; i += W) {
    VF v = tg_load(VF, &x[i]);
    tg_store(&y[i], tg_exp2v(VI, VF, v));
  }
  float *z = calloc(m, 4), *c = calloc(m, 4);
  for (long i = 0; i < n; i++) z[i] = tg_exp2f(x[i]);
  for (long i = 0; i < m; i += W) {
    VF v = tg_load(VF, &x[i]), lo = (VF){} - 151.0f, hi = (VF){} + 129.0f;
    tg_store(&c[i], tg_clamp_of(VF)(VI, VF, v, lo, hi));
  }
  f = fopen(argv[2], "wb");
  if (!f || fwrite(y, 4, n, f) != (size_t)n || fwrite(z, 4, n, f) != (size_t)n || fwrite(c, 4, n, f) != (size_t)n) return 4;
  fclose(f);
  return 0;
}
`

// TestCVecExp2: the vector exp2 the renderer uses in vectorized reduces
// (tg_exp2v) is within 1 ulp of Go's math.Exp2 over the same inputs as the
// scalar one, and the same bits as the scalar tg_exp2f (NaN for NaN), at
// every width the host can run, with AVX-512's vscalefps and
// VFIXUPIMMPS (where the host has them) and without them.
func TestCVecExp2(t *testing.T) {
	cc := cCompiler(t)
	xs := cMathInputs()
	type variant struct {
		w     int
		flags []string
	}
	var variants []variant
	for _, w := range []int{4, 8} {
		variants = append(variants, variant{w, nil})
	}
	if cpu, _ := os.ReadFile("/proc/cpuinfo"); strings.Contains(string(cpu), " avx512f") {
		variants = append(variants, variant{16, nil})
		for _, w := range []int{4, 8, 16} {
			variants = append(variants, variant{w, []string{"-mno-avx512f"}})
		}
	}
	in := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(x))
	}
	for _, v := range variants {
		w := v.w
		dir := t.TempDir()
		defs := fmt.Sprintf("#define W %d\n#define VF tg_f%d\n#define VI tg_i%d\n", w, w, w)
		src := "#include <stdint.h>\n#include <math.h>\n" + Exp2C + cVecPrelude(16) + defs + cVecExp2Driver
		cfile, exe, inPath, outPath := filepath.Join(dir, "v.c"), filepath.Join(dir, "v"), filepath.Join(dir, "in"), filepath.Join(dir, "out")
		if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"-O3", "-march=native"}, v.flags...)
		args = append(args, "-fno-math-errno", "-Wno-psabi", "-o", exe, cfile, "-lm")
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("width %d %v: %s: %v\n%s", w, v.flags, cc, err, out)
		}
		if err := os.WriteFile(inPath, in, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(exe, inPath, outPath).CombinedOutput(); err != nil {
			t.Fatalf("width %d: %v\n%s", w, err, out)
		}
		b, err := os.ReadFile(outPath)
		if err != nil || len(b) != 3*len(in) {
			t.Fatalf("width %d: %d bytes of results for %d inputs (%v)", w, len(b), len(in), err)
		}
		bad := 0
		for i, x := range xs {
			got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			want := float32(math.Exp2(float64(x)))
			if u := ulps(got, want); u > 1 {
				if bad++; bad <= 10 {
					t.Errorf("width %d: exp2(%g) = %g, want %g (%g ulp)", w, x, got, want, u)
				}
			}
			// The argument as exp2v clamps it: infinities made finite
			// (to -151/129, or to -MAX/+MAX where vscalefps scales), NaN
			// kept, the inputs in [-151, 129] unchanged.
			c := math.Float32frombits(binary.LittleEndian.Uint32(b[2*len(in)+4*i:]))
			inf := math.IsInf(float64(x), 0)
			if (inf && (math.IsInf(float64(c), 0) || c != c || (c < 0) != (x < 0))) || (x != x) != (c != c) || (x >= -151 && x <= 129 && c != x) {
				if bad++; bad <= 10 {
					t.Errorf("width %d %v: exp2's argument %g clamped to %g", w, v.flags, x, c)
				}
			}
			scalar := math.Float32frombits(binary.LittleEndian.Uint32(b[len(in)+4*i:]))
			if math.Float32bits(got) != math.Float32bits(scalar) && (got == got || scalar == scalar) {
				if bad++; bad <= 10 {
					t.Errorf("width %d %v: exp2(%g) = %g (%#x), the scalar's %g (%#x)", w, v.flags, x, got, math.Float32bits(got), scalar, math.Float32bits(scalar))
				}
			}
		}
		if bad > 0 {
			t.Errorf("width %d: %d failures (beyond 1 ulp, a clamp, or not the scalar's bits)", w, bad)
		}
	}
}

const cVecMaxDriver = `#include <stdio.h>
#include <string.h>
int main(void) {
  float a[W], b[W], y[W];
  unsigned bits;
  while (fread(a, 4, W, stdin) == W && fread(b, 4, W, stdin) == W) {
    VF va = tg_load(VF, a), vb = tg_load(VF, b);
    tg_store(y, tg_max(VI, VF, va, vb));
    for (int i = 0; i < W; i++) { memcpy(&bits, &y[i], 4); printf("%08x\n", bits); }
  }
  return 0;
}
`

// TestCVecMax: the vector MAX (tg_max: MAXPS where the target has it) is
// the scalar MAX's a > b ? a : b bit for bit, NaN and signed zeros
// included, at every width the host can run, with and without AVX-512.
func TestCVecMax(t *testing.T) {
	cc := cCompiler(t)
	nan := float32(math.NaN())
	special := []float32{nan, -nan, float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		1, -1, 1e-40, -1e-40, 3.5, math.MaxFloat32, -math.MaxFloat32}
	var as, bs []float32
	for _, a := range special {
		for _, b := range special {
			as, bs = append(as, a), append(bs, b)
		}
	}
	type variant struct {
		w     int
		flags []string
	}
	variants := []variant{{4, nil}, {8, nil}}
	if cpu, _ := os.ReadFile("/proc/cpuinfo"); strings.Contains(string(cpu), " avx512f") {
		variants = append(variants, variant{16, nil})
		for _, w := range []int{4, 8, 16} {
			variants = append(variants, variant{w, []string{"-mno-avx512f"}})
		}
	}
	for _, v := range variants {
		w, flags := v.w, v.flags
		{
			var in bytes.Buffer
			for i := 0; i < len(as); i += w {
				for _, src := range [][]float32{as, bs} {
					for l := range w {
						x := float32(1)
						if i+l < len(src) {
							x = src[i+l]
						}
						_ = binary.Write(&in, binary.LittleEndian, math.Float32bits(x))
					}
				}
			}
			dir := t.TempDir()
			defs := fmt.Sprintf("#define W %d\n#define VF tg_f%d\n#define VI tg_i%d\n", w, w, w)
			src := "#include <stdint.h>\n#include <math.h>\n" + cVecPrelude(16) + defs + cVecMaxDriver
			cfile, exe := filepath.Join(dir, "m.c"), filepath.Join(dir, "m")
			if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"-O3", "-march=native"}, flags...)
			args = append(args, "-Wno-psabi", "-o", exe, cfile, "-lm")
			if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
				t.Fatalf("width %d %v: %v\n%s", w, flags, err, out)
			}
			cmd := exec.Command(exe)
			cmd.Stdin = &in
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("width %d %v: %v", w, flags, err)
			}
			lines := strings.Fields(string(out))
			if len(lines) < len(as) {
				t.Fatalf("width %d %v: %d results for %d pairs", w, flags, len(lines), len(as))
			}
			for i := range as {
				want := bs[i]
				if as[i] > bs[i] {
					want = as[i]
				}
				if got := lines[i]; got != fmt.Sprintf("%08x", math.Float32bits(want)) {
					t.Errorf("width %d %v: max(%g, %g) = %s, want %08x", w, flags, as[i], bs[i], got, math.Float32bits(want))
				}
			}
		}
	}
}
