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
	Name:  "CUDA",
	Ext:   "cu",
	Types: cudaTypes,
	FloatFns: map[ir.Op]string{
		ir.OpExp2: "exp2f", ir.OpLog2: "log2f", ir.OpSin: "sinf", ir.OpSqrt: "sqrtf", ir.OpTrunc: "truncf",
	},
	FloatSfx: "f",
	Limits:   DefaultLimits,
	gpu:      cudaDialect,
}

const cudaHalf = `#ifndef TG_HALF
#define TG_HALF
__device__ static inline float tg_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ static inline unsigned short tg_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
#endif
`

func cudaBufType(dt ir.DType) string {
	if dt == ir.Float16 {
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
	globalID: func(d int, lt Launch) string {
		if lt.Global[d] == lt.Local[d] {
			return "threadIdx." + dimNames[d]
		}
		if lt.Local[d] == 1 {
			return "blockIdx." + dimNames[d]
		}
		return fmt.Sprintf("(blockIdx.%s*%d+threadIdx.%s)", dimNames[d], lt.Local[d], dimNames[d])
	},
	localID: func(d int, lt Launch) string { return "threadIdx." + dimNames[d] },
	groupID: func(d int, lt Launch) string { return "blockIdx." + dimNames[d] },
	shared:  "__shared__",
	barrier: "__syncthreads();",
	fmod:    "fmodf",
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
}

// CUDAFor is the CUDA dialect with launches planned within lim.
func CUDAFor(lim Limits) *Lang { return CUDA.WithLimits(lim) }

var cudaTypes = map[ir.DType]string{
	ir.Bool: "bool", ir.Int8: "signed char", ir.Uint8: "unsigned char", ir.Int32: "int",
	ir.Int64: "int", ir.Float16: "float", ir.Float32: "float",
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
static __device__ inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
`

// ClangPTXArgs are the clang arguments that compile CUDA source (with
// CUDACheckPrelude) to PTX for an architecture such as "sm_80".
func ClangPTXArgs(arch, in, out string) []string {
	return []string{"-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=" + arch, "-nocudainc", "-nocudalib", "-O3", "-S", "-o", out, in}
}
