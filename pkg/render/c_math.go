package render

import (
	"sort"

	"tgc/pkg/ir"
)

// The C dialect's own exp2 and log2. libm's exp2f/log2f are calls that gcc
// does not vectorize without -ffast-math (which tgc does not use, for
// reproducibility), so a loop over exp2 ran one element at a time through
// libm. These are branch-free (no calls, no tables), so gcc inlines them
// and turns a loop that uses them into vector code. Special values are
// merged in with bit masks, not ?: on the computed result: gcc would sink
// the computation into a branch of the ?:, and without AVX-512 masking it
// does not if-convert float operations that may trap (without -ffast-math
// every one may). Both are within 1 ulp of the correctly rounded result
// over the whole float range, subnormals and special values included
// (TestCMath sweeps them against Go's math package). Each is guarded:
// kernels share one translation unit.

// Exp2C is exp2 for floats: x = n + f with n = round(x), |f| <= 1/2;
// 2^f = 1 + f*q(f) with q a degree-5 polynomial (Chebyshev interpolation,
// relative error 9e-9); 2^n is applied as two exact power-of-two factors
// so that results in the subnormal range are rounded once. Inputs are
// clamped to [-151, 129], outside which the result is 0 or inf anyway;
// NaN comes back as NaN.
const Exp2C = `#ifndef TG_EXP2
#define TG_EXP2
static inline float tg_exp2f(float x) {
  /* clamp to [-151, 129] as integers (a float ?: would become branches):
     an order-preserving key of the bits, min and max, back to the float;
     NaN goes to one end, and is fixed below */
  union { float f; int32_t i; } c = {x};
  c.i ^= (c.i >> 31) & 0x7fffffff;
  c.i = c.i < 0x43010000 ? c.i : 0x43010000;
  c.i = c.i > -1125580801 ? c.i : -1125580801;
  c.i ^= (c.i >> 31) & 0x7fffffff;
  float nf = (c.f + 12582912.0f) - 12582912.0f; /* round to nearest integer */
  float f = c.f - nf;
  int n = (int)nf;
  float p = 1.0f + f*(0.693147182f + f*(0.240226507f + f*(0.0555035695f +
            f*(0.00961808302f + f*(0.00133908633f + f*0.000154531634f)))));
  int n1 = n >> 1;
  union { uint32_t u; float f; } s1 = {(uint32_t)(n1 + 127) << 23}, s2 = {(uint32_t)(n - n1 + 127) << 23};
  union { float f; uint32_t u; } r = {(p * s1.f) * s2.f}, in = {x};
  uint32_t nan = -(uint32_t)(x != x); /* a mask, not ?: (gcc would branch) */
  r.u = (r.u & ~nan) | (in.u & nan);
  return r.f;
}
#endif
`

// Log2C is log2 for floats: subnormal inputs are scaled by 2^23 first;
// x = 2^k * m with m in [sqrt(1/2), sqrt(2)), f = m-1, and
// ln(1+f) = 2*atanh(s), s = f/(2+f), written as f - f²/2 + s*(f²/2 + R(s²))
// so the large terms are exact; the result is multiplied by 1/ln2 split
// into a 12-bit head and a tail, with f - f²/2 split likewise, so the
// head product is exact (the scheme of FreeBSD's e_log2f.c; polynomial fitted
// for tgc, relative error 2e-9). 0 gives -inf, negatives NaN, inf inf,
// NaN NaN.
const Log2C = `#ifndef TG_LOG2
#define TG_LOG2
static inline float tg_log2f(float x) {
  /* subnormals are scaled by 2^23, a factor made with integers (not ?:) */
  int32_t sub = x < 1.17549435e-38f;
  union { uint32_t u; float f; } sc = {0x3f800000u + (uint32_t)sub * (23u << 23)};
  union { float f; uint32_t u; } v = {x * sc.f};
  int32_t ix = (int32_t)(v.u & 0x7fffffffu) - 0x3f3504f3;
  float k = (float)((ix >> 23) - 23 * sub);
  v.u = (uint32_t)(ix & 0x7fffff) + 0x3f3504f3u;
  float f = v.f - 1.0f;
  float s = f / (2.0f + f);
  float z = s * s;
  float R = z * (0.666666865f + z * (0.399885505f + z * 0.295903176f));
  float hfsq = 0.5f * f * f;
  v.f = f - hfsq;
  v.u &= 0xfffff000u;
  float hi = v.f;
  float lo = (f - hi) - hfsq + s * (hfsq + R);
  union { float f; uint32_t u; } r = {(lo + hi) * -1.76052854e-04f + lo * 1.44287109f + hi * 1.44287109f + k};
  union { float f; uint32_t u; } sp = {x == 0.0f ? -INFINITY : x < 0.0f ? NAN : x}; /* inf, NaN stay */
  uint32_t ok = -(uint32_t)((x > 0.0f) & (x < INFINITY));
  r.u = (r.u & ok) | (sp.u & ~ok);
  return r.f;
}
#endif
`

// cMathFns are the definitions of the C dialect's own functions (the op
// table spells EXP2 and LOG2 in C as calls of them), by op: the prelude
// of a kernel that uses the op carries it.
var cMathFns = map[ir.Op]string{
	ir.OpExp2: Exp2C,
	ir.OpLog2: Log2C,
}

// cMathPrelude is the definitions of the C dialect's own functions among
// ops, in a fixed order.
func cMathPrelude(ops map[ir.Op]bool) string {
	var have []ir.Op
	for op := range cMathFns {
		if ops[op] {
			have = append(have, op)
		}
	}
	sort.Slice(have, func(i, j int) bool { return have[i] < have[j] })
	s := ""
	for _, op := range have {
		s += cMathFns[op]
	}
	return s
}
