package render

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
)

// cTypes spell the dtypes of values; float16 values live in float
// registers (rounded by tg_round_half at each cast to float16, so no compiler's
// excess precision can skip a rounding) and only buffers hold _Float16.
var cTypes = map[ir.DType]string{
	ir.Bool: "_Bool", ir.Int8: "signed char", ir.Uint8: "unsigned char",
	ir.Int16: "short", ir.Uint16: "unsigned short", ir.Int32: "int", ir.Uint32: "unsigned int",
	ir.Int64: "long long", ir.Uint64: "unsigned long long",
	ir.Float16: "float", ir.BFloat16: "float", ir.Float32: "float", ir.Float64: "double",
}

// cBufTypes spell the element types of buffers: bfloat16 buffers hold the
// bits.
var cBufTypes = func() map[ir.DType]string {
	m := map[ir.DType]string{ir.Float16: "_Float16", ir.BFloat16: "unsigned short"}
	for dt, t := range cTypes {
		if _, ok := m[dt]; !ok {
			m[dt] = t
		}
	}
	return m
}()

// cBits reinterprets floats through memcpy (the compiler makes it a move).
var cBits = map[ir.DType][2]string{
	ir.Float32: {"tg_as_u32(%s)", "tg_as_f32(%s)"},
	ir.Float64: {"tg_as_u64(%s)", "tg_as_f64(%s)"},
	ir.Float16: {"tg_f16_bits(%s)", "tg_f16_from_bits(%s)"},
}

var cHelpers = map[string]string{
	"tg_as_u32":        "static inline uint32_t tg_as_u32(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }",
	"tg_as_f32":        "static inline float tg_as_f32(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }",
	"tg_as_u64":        "static inline uint64_t tg_as_u64(double f) { uint64_t u; __builtin_memcpy(&u, &f, 8); return u; }",
	"tg_as_f64":        "static inline double tg_as_f64(uint64_t u) { double f; __builtin_memcpy(&f, &u, 8); return f; }",
	"tg_f16_bits":      "static inline uint16_t tg_f16_bits(float x) { _Float16 h = (_Float16)x; uint16_t u; __builtin_memcpy(&u, &h, 2); return u; }",
	"tg_f16_from_bits": "static inline float tg_f16_from_bits(uint16_t u) { _Float16 h; __builtin_memcpy(&h, &u, 2); return (float)h; }",
}

// cHalfRound rounds a float to float16 and back. The copy of the bits
// makes the rounding observable: a plain (float)(_Float16)x may be dropped
// under GCC's default -fexcess-precision=fast.
const cHalfRound = `static inline float tg_round_half(float x) {
  _Float16 h = (_Float16)x; uint16_t u;
  __builtin_memcpy(&u, &h, 2); __builtin_memcpy(&h, &u, 2);
  return (float)h;
}`

// RandC is the counter-based generator (guarded: kernels share one
// translation unit) behind Tensor.rand, in C. The GO
// interpreter implements the same function (backend.Rand): same seed, same
// numbers on every device.
const RandC = `#ifndef TG_RAND
#define TG_RAND
static inline uint64_t tg_mix(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27; x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline float tg_rand(int64_t seed, int64_t ctr, int64_t idx) {
  uint64_t x = tg_mix((uint64_t)seed + 0x9e3779b97f4a7c15ull * ((uint64_t)ctr + 1));
  x = tg_mix(x ^ ((uint64_t)idx * 0xd1b54a32d192ed03ull));
  return (float)(x >> 40) * (1.0f / 16777216.0f);
}
#endif
`

// C is the CPU dialect: one function per kernel with the fixed ABI
// void NAME(void **bufs, const int64_t *vars, int64_t start, int64_t end),
// where [start, end) bounds the outermost loop so the runtime can split it
// across cores.
var C = &Lang{
	Name:  "CPU",
	Ext:   "c",
	Types: cTypes,
	Prelude: func(ops map[ir.Op]bool) string {
		p := "#include <stdint.h>\n#include <math.h>\n"
		if ops[ir.OpRand] {
			p += RandC
		}
		return p + cMathPrelude(ops)
	},
	Signature: func(k *ir.Kernel) string {
		var sb strings.Builder
		if ir.ReadsBackwards(k) {
			// GCC 12's loop vectorizer (-O3, AVX2) miscompiled a guarded
			// reduction reading backwards (a flipped convolution kernel):
			// such kernels keep the SLP vectorizer only.
			sb.WriteString("__attribute__((optimize(\"no-tree-loop-vectorize\")))\n")
		} else if ir.GuardedLoads(k) {
			// and vectorized guarded loads read at a stride (a cat's
			// halves, a pad's border, upcast along the columns) wrongly
			// once it had if-converted them into masked loads: rows read
			// as zeros or left unwritten (by its look GCC PR 114375: the
			// permutation of a group of masked loads dropped;
			// realize.TestPaddedCats). Not if-converted, the loop
			// is not vectorized by gcc; the simd pass's vectors are the
			// kernel's own. Other kernels keep if-conversion: without it
			// anywhere the MNIST cnn step took 1.26x and BERT 1.4x.
			sb.WriteString("__attribute__((optimize(\"no-tree-loop-if-convert\")))\n")
		}
		fmt.Fprintf(&sb, "void %s(void **bufs, const int64_t *vars, int64_t start, int64_t end) {\n", k.Name)
		for i, b := range k.Bufs {
			t := cBufTypes[b.DType]
			if b.Output {
				fmt.Fprintf(&sb, "  %s *restrict %s = (%s *)bufs[%d];\n", t, BufName(k, i), t, i)
			} else {
				fmt.Fprintf(&sb, "  const %s *restrict %s = (const %s *)bufs[%d];\n", t, BufName(k, i), t, i)
			}
		}
		if k.NumParams == 0 {
			sb.WriteString("  (void)vars;\n")
		}
		return sb.String()
	},
	OuterLoop: func(a *ir.Axis, idx string) string {
		return fmt.Sprintf("for (%s %s = start; %s < end; %s++) {", idx, a.Name(), a.Name(), a.Name())
	},
	Index:     [2]string{"int", "int64_t"},
	Unsigned:  [2]string{"uint32_t", "uint64_t"},
	FnQual:    "static inline",
	LongSfx:   "LL",
	HalfRound: cHalfRound,
	Bits:      cBits,
	Helpers:   cHelpers,
	spell:     func(o *ir.OpInfo) string { return o.C },
	FloatSfx:  "f",
	SIMD:      true,
}
