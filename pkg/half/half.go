// Package half converts between float32 and the bit patterns of the 16-bit
// float types, IEEE 754 binary16 ("half precision", F16) and bfloat16. The
// conversions are the IR's (ir/half.go): the dtype rules round through
// them, and ir imports only the standard library.
package half

import "tgc/pkg/ir"

// FromFloat32 returns the binary16 bit pattern nearest to f, rounding ties
// to even; overflow becomes ±Inf, NaNs stay NaNs (quieted).
func FromFloat32(f float32) uint16 { return ir.Float16FromFloat32(f) }

// ToFloat32 returns the float32 with the value of the binary16 bit pattern
// h (exactly).
func ToFloat32(h uint16) float32 { return ir.Float16ToFloat32(h) }

// BFloat16FromFloat32 returns the bfloat16 bit pattern nearest to f,
// rounding ties to even; overflow becomes ±Inf, NaNs stay NaNs (quieted).
func BFloat16FromFloat32(f float32) uint16 { return ir.BFloat16FromFloat32(f) }

// BFloat16ToFloat32 widens a bfloat16 bit pattern (exactly).
func BFloat16ToFloat32(h uint16) float32 { return ir.BFloat16ToFloat32(h) }
