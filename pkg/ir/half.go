package ir

// Conversions between float32 and the 16-bit float storage types' bit
// patterns: IEEE 754 binary16 (float16) and bfloat16. The dtype rules
// round through them (RoundFloat, Bits); pkg/half re-exports them for
// code that converts buffers without the IR.

import "math"

// Float16FromFloat32 returns the binary16 bit pattern nearest to f, rounding ties to
// even. Values too large for binary16 become ±Inf, values too small become
// ±0, and NaNs stay NaNs (quieted, keeping the top payload bits).
func Float16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff

	if exp == 0xff {
		if man != 0 {
			// Setting the quiet bit also guarantees a non-zero mantissa,
			// so a NaN whose payload lives only in the low 13 bits cannot
			// turn into Inf.
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}

	e := exp - 127 + 15 // rebias the exponent
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0:
		// Subnormal in binary16 (or zero). The value is
		// (man|1<<23) * 2^(e-38); in units of the smallest subnormal
		// (2^-24) that is (man|1<<23) >> (14-e). Below e = -10 even the
		// implicit bit is under half a unit, so the result is ±0 (this also
		// covers float32 zeros and subnormals).
		if e < -10 {
			return sign
		}
		// Rounding up may carry into 0x400, which is exactly the smallest
		// normal number, so no special case is needed.
		return sign | uint16(shiftRoundEven(man|1<<23, uint(14-e)))
	default:
		// A carry out of the mantissa correctly bumps the exponent, and
		// from the largest finite value it lands on 0x7c00 (Inf).
		return sign | uint16(shiftRoundEven(uint32(e)<<23|man, 13))
	}
}

// shiftRoundEven returns x >> s rounded to nearest, ties to even. s must be
// in 1..31.
func shiftRoundEven(x uint32, s uint) uint32 {
	q := x >> s
	rem := x & (1<<s - 1)
	halfway := uint32(1) << (s - 1)
	if rem > halfway || (rem == halfway && q&1 == 1) {
		q++
	}
	return q
}

// Float16ToFloat32 returns the float32 with the value of the binary16 bit pattern h.
// The conversion is exact; NaN payloads are kept.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)

	switch exp {
	case 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: float32 has the range to normalise it.
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	}
}

// BFloat16FromFloat32 returns the bfloat16 bit pattern (the top half of a
// float32) nearest to f, rounding ties to even; overflow becomes ±Inf and
// NaNs stay NaNs (quieted).
func BFloat16FromFloat32(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BFloat16ToFloat32 widens a bfloat16 bit pattern (exactly).
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
