package render

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
)

// OpenCL C. A kernel is `__kernel void NAME(__global T *out0, ..., long
// var0, ...)` with reqd_work_group_size set to its local size; bool buffers
// are uchar (OpenCL forbids bool kernel arguments).
var OpenCL = &Lang{
	Name:     "CL",
	Ext:      "cl",
	Types:    clTypes,
	spell:    func(o *ir.OpInfo) string { return o.CL },
	FloatSfx: "f",
	Index:    [2]string{"int", "long"},
	Unsigned: [2]string{"uint", "ulong"},
	FnQual:   "inline",
	LongSfx:  "L",
	Bits: map[ir.DType][2]string{
		ir.Float32: {"as_uint(%s)", "as_float(%s)"},
		ir.Float64: {"as_ulong(%s)", "as_double(%s)"},
		ir.Float16: {"as_ushort((half)(%s))", "as_half((ushort)(%s))"},
	},
	Float64Prelude: "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
	Limits:         DefaultLimits,
	gpu:            clDialect,
}

// clLang is OpenCL adjusted to the limits: without cl_khr_fp16, float16
// values live in float registers and move through vload_half/vstore_half.
func clBufType(dt ir.DType) string {
	switch dt {
	case ir.Bool:
		return "uchar"
	case ir.Float16:
		return "half"
	case ir.BFloat16: // the bits
		return "ushort"
	}
	return clTypes[dt]
}

var clDialect = &gpuDialect{
	prelude: func(usesRand, usesHalf bool, lim Limits) string {
		var sb strings.Builder
		if usesHalf && lim.Half {
			sb.WriteString("#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n")
		}
		if usesHalf && !lim.Half {
			sb.WriteString("#ifndef TG_F16\n#define TG_F16\ninline float tg_f16(float x) { ushort h; vstore_half(x, 0, (half *)&h); return vload_half(0, (const half *)&h); }\n#endif\n")
		}
		if usesRand {
			sb.WriteString("#ifndef TG_RAND\n#define TG_RAND\n" + randSource("inline", "ulong", "long", "UL") + "#endif\n")
		}
		return sb.String()
	},
	header: func(k *ir.Kernel, lt Launch, lim Limits) string {
		ps := gpuParams(k, func(i int, b ir.BufParam) string {
			if b.Output {
				return fmt.Sprintf("__global %s *restrict %s", clBufType(b.DType), BufName(k, i))
			}
			return fmt.Sprintf("__global const %s *restrict %s", clBufType(b.DType), BufName(k, i))
		}, func(i int) string { return fmt.Sprintf("long var%d", i) })
		return fmt.Sprintf("__kernel __attribute__((reqd_work_group_size(%d, %d, %d))) void %s(%s) {\n",
			lt.Local[0], lt.Local[1], lt.Local[2], k.Name, strings.Join(ps, ", "))
	},
	globalID: func(d int, lt Launch, wide bool) string { return fmt.Sprintf("get_global_id(%d)", d) },
	localID:  func(d int, lt Launch) string { return fmt.Sprintf("get_local_id(%d)", d) },
	groupID:  func(d int, lt Launch) string { return fmt.Sprintf("get_group_id(%d)", d) },
	shared:   "__local",
	barrier:  "barrier(CLK_LOCAL_MEM_FENCE);",
	vec:      clVec(true),
}

// clVec renders vector loads and stores with vload4/vstore4; without
// cl_khr_fp16, float16 moves through vload_half4/vstore_half4 as float4.
func clVec(half bool) *vecDialect {
	vtyp := func(dt ir.DType) string {
		if dt == ir.Float16 && half {
			return "half4"
		}
		return "float4"
	}
	return &vecDialect{
		load: func(dt ir.DType, buf, idx string) (string, string) {
			if dt == ir.Float16 && !half {
				return "float4", fmt.Sprintf("vload_half4(0, %s+%s)", buf, idx)
			}
			return vtyp(dt), fmt.Sprintf("vload4(0, %s+%s)", buf, idx)
		},
		zero: func(dt ir.DType) string {
			if vtyp(dt) == "half4" {
				return "(half4)((half)0.0f)"
			}
			return "(float4)(0.0f)"
		},
		lane: func(dt ir.DType, v string, u int) string { return v + "." + lanes[u] },
		store: func(dt ir.DType, buf, idx string, vals [vecWidth]string) string {
			fn := "vstore4"
			if dt == ir.Float16 && !half {
				fn = "vstore_half4"
			}
			return fmt.Sprintf("%s((%s)(%s), 0, %s+%s)", fn, vtyp(dt), strings.Join(vals[:], ", "), buf, idx)
		},
	}
}

// lanes name the components of a 4-vector.
var lanes = [vecWidth]string{"x", "y", "z", "w"}

// OpenCLFor is the OpenCL dialect for a device: launches planned within
// lim, and float16 through vload_half/vstore_half when !lim.Half.
func OpenCLFor(lim Limits) *Lang {
	l := OpenCL.WithLimits(lim)
	l.NoFloat64 = lim.NoFloat64
	if lim.Half {
		return l
	}
	types := map[ir.DType]string{}
	for k, v := range l.Types {
		types[k] = v
	}
	types[ir.Float16] = "float"
	l.Types = types
	d := *clDialect
	d.load = func(dt ir.DType, buf, idx string) string {
		if dt == ir.Float16 {
			return fmt.Sprintf("vload_half(%s, %s)", idx, buf)
		}
		return fmt.Sprintf("%s[%s]", buf, idx)
	}
	d.store = func(dt ir.DType, buf, idx, val string) string {
		if dt == ir.Float16 {
			return fmt.Sprintf("vstore_half(%s, %s, %s)", val, idx, buf)
		}
		return fmt.Sprintf("%s[%s] = %s", buf, idx, val)
	}
	d.cast = func(to, from ir.DType, x string) string {
		if to == ir.Float16 {
			return fmt.Sprintf("tg_f16(%s)", x)
		}
		return ""
	}
	d.vec = clVec(false)
	l.gpu = &d
	bits := map[ir.DType][2]string{}
	for dt, b := range l.Bits {
		bits[dt] = b
	}
	bits[ir.Float16] = [2]string{"tg_f16_bits(%s)", "tg_f16_from_bits(%s)"}
	l.Bits = bits
	l.Helpers = map[string]string{
		"tg_f16_bits":      "inline ushort tg_f16_bits(float x) { ushort h; vstore_half(x, 0, (half *)&h); return h; }",
		"tg_f16_from_bits": "inline float tg_f16_from_bits(ushort h) { return vload_half(0, (const half *)&h); }",
	}
	return l
}

var clTypes = map[ir.DType]string{
	ir.Bool: "bool", ir.Int8: "char", ir.Uint8: "uchar", ir.Int16: "short", ir.Uint16: "ushort",
	ir.Int32: "int", ir.Uint32: "uint", ir.Int64: "long", ir.Uint64: "ulong",
	ir.Float16: "half", ir.BFloat16: "float", ir.Float32: "float", ir.Float64: "double",
}
