package render

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
)

// CUDA C for NVRTC: `extern "C" __global__ void __launch_bounds__(N)
// NAME(T *__restrict__ out0, ..., long long var0, ...)`. It includes no
// header: INFINITY and NAN are defined through __int_as_float, and float16
// buffers are unsigned short converted with PTX cvt instructions (values
// compute in float, as in the IR).
var CUDA = &Lang{
	Name:     "CUDA",
	Ext:      "cu",
	Types:    cudaTypes,
	spell:    func(o *ir.OpInfo) string { return o.CUDA },
	FloatSfx: "f",
	Index:    [2]string{"int", "long long"},
	Unsigned: [2]string{"unsigned int", "unsigned long long"},
	FnQual:   "__device__ static inline",
	LongSfx:  "LL",
	Bits: map[ir.DType][2]string{
		ir.Float32: {"__float_as_uint(%s)", "__uint_as_float(%s)"},
		ir.Float64: {"((unsigned long long)__double_as_longlong(%s))", "__longlong_as_double((long long)(%s))"},
		ir.Float16: {"tg_f2h(%s)", "tg_h2f(%s)"},
	},
	Limits: DefaultLimits,
	gpu:    cudaDialect,
}

const cudaHalf = `#ifndef TG_HALF
#define TG_HALF
__device__ static inline float tg_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ static inline unsigned short tg_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#endif
`

func cudaBufType(dt ir.DType) string {
	if dt == ir.Float16 || dt == ir.BFloat16 { // the bits
		return "unsigned short"
	}
	return cudaTypes[dt]
}

var cudaDialect = &gpuDialect{
	prelude: func(usesRand, usesHalf bool, lim Limits) string {
		var sb strings.Builder
		sb.WriteString("#ifndef INFINITY\n#define INFINITY (__int_as_float(0x7f800000))\n#endif\n")
		sb.WriteString("#ifndef NAN\n#define NAN (__int_as_float(0x7fffffff))\n#endif\n")
		if usesHalf {
			sb.WriteString(cudaHalf)
		}
		if usesRand {
			sb.WriteString("#ifndef TG_RAND\n#define TG_RAND\n")
			sb.WriteString(randSource("__device__ static inline", "unsigned long long", "long long", "ull"))
			sb.WriteString("#endif\n")
		}
		return sb.String()
	},
	header: func(k *ir.Kernel, lt Launch, lim Limits) string {
		ps := gpuParams(k, func(i int, b ir.BufParam) string {
			if b.Output {
				return fmt.Sprintf("%s *__restrict__ %s", cudaBufType(b.DType), BufName(k, i))
			}
			return fmt.Sprintf("const %s *__restrict__ %s", cudaBufType(b.DType), BufName(k, i))
		}, func(i int) string { return fmt.Sprintf("long long var%d", i) })
		return fmt.Sprintf("extern \"C\" __global__ void __launch_bounds__(%d) %s(%s) {\n", lt.Threads(), k.Name, strings.Join(ps, ", "))
	},
	globalID: func(d int, lt Launch, wide bool) string {
		if lt.Global[d] == lt.Local[d] {
			return "threadIdx." + dimNames[d]
		}
		if lt.Local[d] == 1 {
			return "blockIdx." + dimNames[d]
		}
		if wide { // blockIdx*blockDim is unsigned int: widen before it wraps
			return fmt.Sprintf("((long long)blockIdx.%s*%d+threadIdx.%s)", dimNames[d], lt.Local[d], dimNames[d])
		}
		return fmt.Sprintf("(blockIdx.%s*%d+threadIdx.%s)", dimNames[d], lt.Local[d], dimNames[d])
	},
	localID: func(d int, lt Launch) string { return "threadIdx." + dimNames[d] },
	groupID: func(d int, lt Launch) string { return "blockIdx." + dimNames[d] },
	shared:  "__shared__",
	barrier: "__syncthreads();",
	load: func(dt ir.DType, buf, idx string) string {
		if dt == ir.Float16 {
			return fmt.Sprintf("tg_h2f(%s[%s])", buf, idx)
		}
		return fmt.Sprintf("%s[%s]", buf, idx)
	},
	store: func(dt ir.DType, buf, idx, val string) string {
		if dt == ir.Float16 {
			return fmt.Sprintf("%s[%s] = tg_f2h(%s)", buf, idx, val)
		}
		return fmt.Sprintf("%s[%s] = %s", buf, idx, val)
	},
	cast: func(to, from ir.DType, x string) string {
		if to == ir.Float16 {
			return fmt.Sprintf("tg_h2f(tg_f2h(%s))", x)
		}
		return ""
	},
	vec: cudaVec,
}

// cudaVec: CUDA's vector types have no operators and come from headers the
// kernels do not include, so the prelude defines aligned structs of its
// own; a vector load or store is one 16-byte (float) or 8-byte (half)
// access through a cast pointer, and the lanes are its fields.
var cudaVec = &vecDialect{
	prelude: "#ifndef TG_VEC\n#define TG_VEC\nstruct alignas(16) tg_float4 { float x, y, z, w; };\nstruct alignas(8) tg_half4 { unsigned short x, y, z, w; };\n#endif\n",
	load: func(dt ir.DType, buf, idx string) (string, string) {
		t := cudaVecType(dt)
		return t, fmt.Sprintf("*((const %s*)(%s+%s))", t, buf, idx)
	},
	zero: func(dt ir.DType) string {
		if dt == ir.Float16 {
			return "tg_half4{0, 0, 0, 0}"
		}
		return "tg_float4{0.0f, 0.0f, 0.0f, 0.0f}"
	},
	lane: func(dt ir.DType, v string, u int) string {
		if dt == ir.Float16 {
			return fmt.Sprintf("tg_h2f(%s.%s)", v, lanes[u])
		}
		return v + "." + lanes[u]
	},
	store: func(dt ir.DType, buf, idx string, vals [vecWidth]string) string {
		if dt == ir.Float16 {
			for i, v := range vals {
				vals[i] = "tg_f2h(" + v + ")"
			}
		}
		t := cudaVecType(dt)
		return fmt.Sprintf("*((%s*)(%s+%s)) = %s{%s}", t, buf, idx, t, strings.Join(vals[:], ", "))
	},
}

func cudaVecType(dt ir.DType) string {
	if dt == ir.Float16 {
		return "tg_half4"
	}
	return "tg_float4"
}

// CUDAFor is the CUDA dialect with launches planned within lim.
func CUDAFor(lim Limits) *Lang { return CUDA.WithLimits(lim) }

var cudaTypes = map[ir.DType]string{
	ir.Bool: "bool", ir.Int8: "signed char", ir.Uint8: "unsigned char", ir.Int16: "short",
	ir.Uint16: "unsigned short", ir.Int32: "int", ir.Uint32: "unsigned int",
	ir.Int64: "long long", ir.Uint64: "unsigned long long",
	ir.Float16: "float", ir.BFloat16: "float", ir.Float32: "float", ir.Float64: "double",
}

// CUDACheckPrelude stands in for the CUDA headers and NVRTC's built-ins
// when clang compiles rendered CUDA to PTX (clang -x cuda -nocudainc
// -nocudalib --cuda-device-only): the qualifiers as clang attributes and
// declarations of the math functions kernels call.
const CUDACheckPrelude = `#include <__clang_cuda_builtin_vars.h>
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
extern "C" __device__ float exp2f(float);
extern "C" __device__ float log2f(float);
extern "C" __device__ float sinf(float);
extern "C" __device__ float sqrtf(float);
extern "C" __device__ float truncf(float);
extern "C" __device__ float fmodf(float, float);
extern "C" __device__ double exp2(double);
extern "C" __device__ double log2(double);
extern "C" __device__ double sin(double);
extern "C" __device__ double sqrt(double);
extern "C" __device__ double trunc(double);
extern "C" __device__ double fmod(double, double);
static __device__ inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
static __device__ inline float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
static __device__ inline unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
static __device__ inline double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
static __device__ inline long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
`

// ClangPTXArgs are the clang arguments that compile CUDA source (with
// CUDACheckPrelude) to PTX for an architecture such as "sm_80".
func ClangPTXArgs(arch, in, out string) []string {
	return []string{"-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=" + arch, "-nocudainc", "-nocudalib", "-O3", "-S", "-o", out, in}
}

// CUDAClangPrelude replaces NVRTC's built-ins when the CUDA runtime
// compiles kernels with clang because libnvrtc is missing (clang -x cuda
// -nocudainc -nocudalib: no CUDA headers, no libdevice). The math
// functions kernels call are renamed to definitions made of PTX
// instructions, so the PTX has no external function to resolve:
//
//	exp2f  ex2.approx.f32: ~2 ulp (max relative error 2^-22.5), like exp2f's
//	       fast path; libdevice's exp2f is within 2 ulp too.
//	log2f  lg2.approx.f32: max absolute error 2^-22.6 for x in [0.5, 2],
//	       relative 2^-22 elsewhere (libdevice: 1 ulp).
//	sinf   sin.approx.f32 (absolute error 2^-20.9 on [-pi, pi]) after
//	       reducing x by a two-part 2*pi (reduction error <= 1.2e-7 for
//	       |x| <= 1e5, growing beyond): ~6e-7 absolute; libdevice's sinf
//	       reduces exactly, 1-2 ulp everywhere.
//	sqrtf  sqrt.rn.f32: correctly rounded, as sqrtf.
//	truncf cvt.rzi.f32.f32: exact.
//	fmodf  x - trunc(x/y)*y with one fma: exact while |x/y| < 2^24, not
//	       for huge quotients (C's fmodf is always exact).
const CUDAClangPrelude = `#include <__clang_cuda_builtin_vars.h>
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define exp2f tg_exp2f
#define log2f tg_log2f
#define sinf tg_sinf
#define sqrtf tg_sqrtf
#define truncf tg_truncf
#define fmodf tg_fmodf
#define sqrt tg_sqrt
#define trunc tg_trunc
#define fmod tg_fmod
static __device__ inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
static __device__ inline float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
static __device__ inline unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
static __device__ inline double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
static __device__ inline long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
static __device__ inline double tg_sqrt(double x) { double r; asm("sqrt.rn.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }
static __device__ inline double tg_trunc(double x) { double r; asm("cvt.rzi.f64.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }
static __device__ inline double tg_fmod(double x, double y) { double q; asm("div.rn.f64 %0, %1, %2;" : "=d"(q) : "d"(x), "d"(y)); return x - tg_trunc(q) * y; }
static __device__ inline float tg_exp2f(float x) { float r; asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
static __device__ inline float tg_log2f(float x) { float r; asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
static __device__ inline float tg_sqrtf(float x) { float r; asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
static __device__ inline float tg_truncf(float x) { float r; asm("cvt.rzi.f32.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
static __device__ inline float tg_fma(float a, float b, float c) { float r; asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c)); return r; }
static __device__ inline float tg_sinf(float x) {
  float k; asm("cvt.rni.f32.f32 %0, %1;" : "=f"(k) : "f"(x * 0.159154943091895f));
  float y = tg_fma(-k, 6.28318548202514648f, x);
  y = tg_fma(-k, -1.74845553e-7f, y);
  float r; asm("sin.approx.f32 %0, %1;" : "=f"(r) : "f"(y)); return r;
}
static __device__ inline float tg_fmodf(float x, float y) { return tg_fma(-tg_truncf(x / y), y, x); }
`

// ClangCUDAArchs are the architectures clang may target, newest first:
// PTX for an older one is compiled by the driver for a newer GPU.
var ClangCUDAArchs = []string{"sm_90", "sm_89", "sm_87", "sm_86", "sm_80", "sm_75", "sm_72", "sm_70", "sm_61", "sm_60", "sm_52", "sm_50"}
