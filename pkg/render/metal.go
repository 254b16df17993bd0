package render

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
)

// Metal Shading Language: `kernel void NAME(device T *out0 [[buffer(0)]],
// ..., constant long &var0 [[buffer(N)]], uint3 gid
// [[thread_position_in_grid]], ...)`. Render only: no runtime here.
var Metal = &Lang{
	Name:     "METAL",
	Ext:      "metal",
	Types:    metalTypes,
	spell:    func(o *ir.OpInfo) string { return o.Metal },
	FloatSfx: "f",
	Index:    [2]string{"int", "long"},
	Unsigned: [2]string{"uint", "ulong"},
	FnQual:   "static inline",
	LongSfx:  "L",
	Bits: map[ir.DType][2]string{
		ir.Float32: {"as_type<uint>(%s)", "as_type<float>(%s)"},
		ir.Float16: {"as_type<ushort>((half)(%s))", "as_type<half>((ushort)(%s))"},
	},
	NoFloat64: true,
	Limits:    DefaultLimits,
	gpu:       metalDialect,
}

var metalDialect = &gpuDialect{
	prelude: func(usesRand, usesHalf bool, lim Limits) string {
		p := "#include <metal_stdlib>\nusing namespace metal;\n"
		if usesRand {
			p += randSource("static inline", "ulong", "long", "UL")
		}
		return p
	},
	header: func(k *ir.Kernel, lt Launch, lim Limits) string {
		ps := gpuParams(k, func(i int, b ir.BufParam) string {
			t := metalTypes[b.DType]
			if b.DType == ir.BFloat16 { // the bits
				t = "ushort"
			}
			if b.Output {
				return fmt.Sprintf("device %s *%s [[buffer(%d)]]", t, BufName(k, i), i)
			}
			return fmt.Sprintf("const device %s *%s [[buffer(%d)]]", t, BufName(k, i), i)
		}, func(i int) string { return fmt.Sprintf("constant long &var%d [[buffer(%d)]]", i, len(k.Bufs)+i) })
		if lt.Group > 0 {
			ps = append(ps, "uint3 lid [[thread_position_in_threadgroup]]", "uint3 tgid [[threadgroup_position_in_grid]]")
		} else {
			ps = append(ps, "uint3 gid [[thread_position_in_grid]]")
		}
		return fmt.Sprintf("kernel void %s(%s) {\n", k.Name, strings.Join(ps, ", "))
	},
	globalID: func(d int, lt Launch, wide bool) string { return "gid." + dimNames[d] },
	localID:  func(d int, lt Launch) string { return "lid." + dimNames[d] },
	groupID:  func(d int, lt Launch) string { return "tgid." + dimNames[d] },
	shared:   "threadgroup",
	barrier:  "threadgroup_barrier(mem_flags::mem_threadgroup);",
	vec:      metalVec,
}

// metalVec: float4/half4 accesses through cast device pointers.
var metalVec = &vecDialect{
	load: func(dt ir.DType, buf, idx string) (string, string) {
		t := metalTypes[dt] + "4"
		return t, fmt.Sprintf("*((const device %s*)(%s+%s))", t, buf, idx)
	},
	zero: func(dt ir.DType) string {
		if dt == ir.Float16 {
			return "half4(0.0h)"
		}
		return "float4(0.0f)"
	},
	lane: func(dt ir.DType, v string, u int) string { return v + "." + lanes[u] },
	store: func(dt ir.DType, buf, idx string, vals [vecWidth]string) string {
		t := metalTypes[dt] + "4"
		return fmt.Sprintf("*((device %s*)(%s+%s)) = %s(%s)", t, buf, idx, t, strings.Join(vals[:], ", "))
	},
}

var metalTypes = map[ir.DType]string{
	ir.Bool: "bool", ir.Int8: "char", ir.Uint8: "uchar", ir.Int16: "short", ir.Uint16: "ushort",
	ir.Int32: "int", ir.Uint32: "uint", ir.Int64: "long", ir.Uint64: "ulong",
	ir.Float16: "half", ir.BFloat16: "float", ir.Float32: "float",
}
