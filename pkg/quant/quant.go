// Package quant describes ggml's tensor types (the element types of GGUF
// files) and is the reference for their block layouts: it dequantizes every
// supported type to float32 and quantizes float32 into it (for tests and
// benchmarks that write models).
//
// A quantized type packs a block of BlockSize consecutive elements of a row
// into BlockBytes bytes; a row's length must be a multiple of BlockSize. All
// multi-byte fields are little-endian; "f16" is IEEE binary16.
//
//	type  block  bytes  layout (dequantized value)
//	F32       1      4  float32
//	F16       1      2  f16
//	BF16      1      2  the top 16 bits of a float32
//	Q8_0     32     34  f16 d; int8 q[32]                       (d*q[i])
//	Q4_0     32     18  f16 d; u8 qs[16]                        (d*(nib(i)-8))
//	Q4_1     32     20  f16 d; f16 m; u8 qs[16]                 (d*nib(i)+m)
//	Q5_0     32     22  f16 d; u8 qh[4]; u8 qs[16]              (d*(q5(i)-16))
//	Q5_1     32     24  f16 d; f16 m; u8 qh[4]; u8 qs[16]       (d*q5(i)+m)
//	Q2_K    256     84  u8 scales[16]; u8 qs[64]; f16 d; f16 dmin
//	Q3_K    256    110  u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d
//	Q4_K    256    144  f16 d; f16 dmin; u8 scales[12]; u8 qs[128]
//	Q5_K    256    176  f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
//	Q6_K    256    210  u8 ql[128]; u8 qh[64]; int8 scales[16]; f16 d
//	IQ4_NL   32     18  f16 d; u8 qs[16]                        (d*GridIQ4(nib(i)))
//	IQ4_XS  256    136  f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]
//
// In Q4_0 and Q4_1, byte j of qs holds element j in its low nibble and
// element j+16 in its high nibble. Q5_0 and Q5_1 add a fifth bit per
// element: bit i of the little-endian uint32 qh is element i's bit 4
// (q5(i) = nib(i) | bit<<4). The K types are described at dequantQ2K,
// dequantQ3K, dequantQ4K, dequantQ5K and dequantQ6K, IQ4_XS at
// dequantIQ4XS. IQ4_NL's and IQ4_XS's nibbles index a non-linear table of
// 16 values (GridIQ4) instead of standing for themselves.
package quant

import (
	"fmt"
	"strings"
)

// Type is a ggml tensor type, numbered as in GGUF's tensor infos.
type Type uint32

// The supported types. Their values are ggml's enum ggml_type.
const (
	F32    Type = 0
	F16    Type = 1
	Q4_0   Type = 2
	Q4_1   Type = 3
	Q5_0   Type = 6
	Q5_1   Type = 7
	Q8_0   Type = 8
	Q2_K   Type = 10
	Q3_K   Type = 11
	Q4_K   Type = 12
	Q5_K   Type = 13
	Q6_K   Type = 14
	IQ4_NL Type = 20
	IQ4_XS Type = 23
	BF16   Type = 30
)

// format is the shape of one supported type's blocks.
type format struct {
	blockSize, blockBytes int
}

var formats = map[Type]format{
	F32:    {1, 4},
	F16:    {1, 2},
	BF16:   {1, 2},
	Q8_0:   {32, 34},
	Q4_0:   {32, 18},
	Q4_1:   {32, 20},
	Q5_0:   {32, 22},
	Q5_1:   {32, 24},
	Q2_K:   {256, 84},
	Q3_K:   {256, 110},
	Q4_K:   {256, 144},
	Q5_K:   {256, 176},
	Q6_K:   {256, 210},
	IQ4_NL: {32, 18},
	IQ4_XS: {256, 136},
}

// supportedOrder lists the supported types in the order error messages name
// them.
var supportedOrder = []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS}

// names holds every type ggml has defined, supported or not, so that a file
// using one gets an error naming it.
var names = map[Type]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 4: "Q4_2", 5: "Q4_3", 6: "Q5_0",
	7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K",
	13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS",
	18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
	23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
	29: "IQ1_M", 30: "BF16", 31: "Q4_0_4_4", 32: "Q4_0_4_8", 33: "Q4_0_8_8",
	34: "TQ1_0", 35: "TQ2_0", 36: "IQ4_NL_4_4", 37: "IQ4_NL_4_8",
	38: "IQ4_NL_8_8", 39: "MXFP4",
}

// String returns ggml's name of t ("Q4_K"), or "type N" for a number ggml
// does not define.
func (t Type) String() string {
	if n, ok := names[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", uint32(t))
}

// Supported reports whether this package (and so tgc) can read t.
func (t Type) Supported() bool {
	_, ok := formats[t]
	return ok
}

// SupportedTypes returns the supported types.
func SupportedTypes() []Type {
	return append([]Type(nil), supportedOrder...)
}

// SupportedList is the supported type names joined for messages:
// "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, IQ4_NL, IQ4_XS".
func SupportedList() string {
	s := make([]string, len(supportedOrder))
	for i, t := range supportedOrder {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}

// Parse returns the type named s (as String spells it).
func Parse(s string) (Type, error) {
	for _, t := range supportedOrder {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q (supported: %s)", s, SupportedList())
}

// ErrUnsupported describes a type this package cannot read.
func ErrUnsupported(t Type) error {
	if _, known := names[t]; known {
		return fmt.Errorf("tensor type %s (%d) is not supported (supported: %s)", t, uint32(t), SupportedList())
	}
	return fmt.Errorf("unknown tensor type %d (supported: %s)", uint32(t), SupportedList())
}

// BlockSize returns the number of elements in one block of t (1 for plain
// floats), or 0 for an unsupported type.
func (t Type) BlockSize() int { return formats[t].blockSize }

// BlockBytes returns the size of one block of t in bytes, or 0 for an
// unsupported type.
func (t Type) BlockBytes() int { return formats[t].blockBytes }

// RowBytes returns the size in bytes of a row of n elements of type t. n
// must be a non-negative multiple of the block size.
func (t Type) RowBytes(n int64) (int64, error) {
	f, ok := formats[t]
	if !ok {
		return 0, ErrUnsupported(t)
	}
	if n < 0 || n%int64(f.blockSize) != 0 {
		return 0, fmt.Errorf("a row of %d elements is not a whole number of %s blocks of %d", n, t, f.blockSize)
	}
	return n / int64(f.blockSize) * int64(f.blockBytes), nil
}
