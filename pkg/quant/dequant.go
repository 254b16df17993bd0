package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"tgc/pkg/half"
)

// Dequantize decodes len(dst) elements of type t from src into dst.
// len(dst) must be a multiple of t's block size and src exactly the bytes of
// those blocks. Arithmetic is float32 in the order ggml's reference code uses,
// so the results are the values ggml itself computes.
func Dequantize(t Type, dst []float32, src []byte) error {
	f, ok := formats[t]
	if !ok {
		return ErrUnsupported(t)
	}
	n := len(dst)
	if n%f.blockSize != 0 {
		return fmt.Errorf("%s: %d elements are not a whole number of blocks of %d", t, n, f.blockSize)
	}
	if want := n / f.blockSize * f.blockBytes; len(src) != want {
		return fmt.Errorf("%s: %d elements need %d bytes, got %d", t, n, want, len(src))
	}
	le := binary.LittleEndian
	switch t { // the plain floats without a call per element
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
		return nil
	case F16:
		for i := range dst {
			dst[i] = half.ToFloat32(le.Uint16(src[2*i:]))
		}
		return nil
	case BF16:
		for i := range dst {
			dst[i] = BF16ToFloat32(le.Uint16(src[2*i:]))
		}
		return nil
	}
	block := blockFuncs[t]
	for i := 0; i < n/f.blockSize; i++ {
		block(dst[i*f.blockSize:(i+1)*f.blockSize], src[i*f.blockBytes:(i+1)*f.blockBytes])
	}
	return nil
}

// blockFuncs decode one block of a quantized type: dst has BlockSize
// elements, b BlockBytes bytes.
var blockFuncs = map[Type]func(dst []float32, b []byte){
	Q8_0:   dequantQ8_0,
	Q4_0:   dequantQ4_0,
	Q4_1:   dequantQ4_1,
	Q5_0:   dequantQ5_0,
	Q5_1:   dequantQ5_1,
	Q2_K:   dequantQ2K,
	Q3_K:   dequantQ3K,
	Q4_K:   dequantQ4K,
	Q5_K:   dequantQ5K,
	Q6_K:   dequantQ6K,
	IQ4_NL: dequantIQ4NL,
	IQ4_XS: dequantIQ4XS,
}

// f16 reads a little-endian binary16 value.
func f16(b []byte) float32 { return half.ToFloat32(binary.LittleEndian.Uint16(b)) }

// BF16ToFloat32 widens a bfloat16 bit pattern (exact).
func BF16ToFloat32(h uint16) float32 { return half.BFloat16ToFloat32(h) }

// dequantQ8_0: f16 d, then 32 signed bytes.
func dequantQ8_0(dst []float32, b []byte) {
	d := f16(b)
	for i := range 32 {
		dst[i] = float32(int8(b[2+i])) * d
	}
}

// dequantQ4_0: f16 d, then 16 bytes of nibbles biased by 8. Byte j holds
// element j (low nibble) and element j+16 (high nibble).
func dequantQ4_0(dst []float32, b []byte) {
	d := f16(b)
	qs := b[2:18]
	for j := range 16 {
		dst[j] = float32(int(qs[j]&0xF)-8) * d
		dst[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

// dequantQ4_1: f16 d, f16 m, then nibbles as in Q4_0 but unsigned: d*q + m.
func dequantQ4_1(dst []float32, b []byte) {
	d, m := f16(b), f16(b[2:])
	qs := b[4:20]
	for j := range 16 {
		dst[j] = float32(qs[j]&0xF)*d + m
		dst[j+16] = float32(qs[j]>>4)*d + m
	}
}

// q5 is element j's (0..31) 5-bit value in a Q5_0/Q5_1 block: its nibble
// (byte j%16 of qs, low for j < 16) and bit j of qh as bit 4.
func q5(qh uint32, qs []byte, j int) int {
	nib := qs[j%16] & 0xF
	if j >= 16 {
		nib = qs[j%16] >> 4
	}
	return int(nib) | int(qh>>j&1)<<4
}

// dequantQ5_0: f16 d, 4 bytes qh, 16 bytes of nibbles: d*(q5-16).
func dequantQ5_0(dst []float32, b []byte) {
	d := f16(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	for j := range 32 {
		dst[j] = float32(q5(qh, b[6:22], j)-16) * d
	}
}

// dequantQ5_1: f16 d, f16 m, 4 bytes qh, 16 bytes of nibbles: d*q5 + m.
func dequantQ5_1(dst []float32, b []byte) {
	d, m := f16(b), f16(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	for j := range 32 {
		dst[j] = float32(q5(qh, b[8:24], j))*d + m
	}
}

// ScaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12 scale bytes of a Q4_K block. Bytes 0-3 hold scales 0-3 in their low 6
// bits, bytes 4-7 mins 0-3; scales and mins 4-7 keep their low 4 bits in
// bytes 8-11 (scale low nibble, min high nibble) and their top 2 bits in the
// top 2 bits of bytes 0-3 (scales) and 4-7 (mins).
func ScaleMinK4(j int, scales []byte) (sc, m uint8) {
	if j < 4 {
		return scales[j] & 63, scales[j+4] & 63
	}
	sc = scales[j+4]&0xF | scales[j-4]>>6<<4
	m = scales[j+4]>>4 | scales[j]>>6<<4
	return sc, m
}

// dequantQ2K decodes a Q2_K super-block of 256 elements: 16 scale bytes
// (sub-block s of 16 elements: scale in the low nibble, min in the high),
// 64 bytes of 2-bit quants, f16 d, f16 dmin. Sub-block s is
// d*sc[s]*q - dmin*m[s]. The quants come in two halves of 32 bytes, each
// byte holding four elements in its bit pairs: for half h, pair j (bits
// 2j, 2j+1) and byte l of the half, the element is 128h + 32j + l, in
// sub-block 8h + 2j + l/16.
func dequantQ2K(dst []float32, b []byte) {
	scales, qs := b[0:16], b[16:80]
	d, dmin := f16(b[80:]), f16(b[82:])
	for h := range 2 {
		for j := range 4 {
			for l := range 32 {
				s := 8*h + 2*j + l/16
				ds, ms := d*float32(scales[s]&0xF), dmin*float32(scales[s]>>4)
				q := qs[32*h+l] >> (2 * j) & 3
				dst[128*h+32*j+l] = ds*float32(q) - ms
			}
		}
	}
}

// ScaleK3 is Q3_K's signed 6-bit scale of sub-block s (0..15) from the
// block's 12 scale bytes: its low 4 bits are nibble s/8 of byte s%8, its
// top 2 bits are bit pair s/4 of byte 8 + s%4; the 6-bit value less 32.
func ScaleK3(s int, scales []byte) int8 {
	lo := scales[s%8] >> (4 * (s / 8)) & 0xF
	hi := scales[8+s%4] >> (2 * (s / 4)) & 3
	return int8(lo|hi<<4) - 32
}

// dequantQ3K decodes a Q3_K super-block of 256 elements: 32 bytes hmask
// (the third bits), 64 bytes of 2-bit quants laid out as Q2_K's, 12 bytes
// of 6-bit scales (ScaleK3), f16 d. Element 128h + 32j + l (half h, bit
// pair j, byte l of the half's 32) takes its low bits from pair j of
// qs[32h+l] and its third bit from bit 4h+j of hmask[l]; a clear third bit
// means 4 less: q = low - 4 + 4*bit in -4..3, and the element is
// d*scale[8h + 2j + l/16]*q.
func dequantQ3K(dst []float32, b []byte) {
	hmask, qs, scales := b[0:32], b[32:96], b[96:108]
	d := f16(b[108:])
	for h := range 2 {
		for j := range 4 {
			for l := range 32 {
				ds := d * float32(ScaleK3(8*h+2*j+l/16, scales))
				q := int(qs[32*h+l]>>(2*j)&3) - 4 + 4*int(hmask[l]>>(4*h+j)&1)
				dst[128*h+32*j+l] = ds * float32(q)
			}
		}
	}
}

// dequantQ4K decodes a Q4_K super-block of 256 elements: f16 d, f16 dmin,
// 12 bytes of packed 6-bit scales and mins (ScaleMinK4), 128 bytes of
// nibbles. Sub-block s (32 elements) is d*sc[s]*q - dmin*m[s]. The nibbles
// come in 4 chunks of 32 bytes: chunk c holds sub-block 2c in the low
// nibbles and sub-block 2c+1 in the high nibbles.
func dequantQ4K(dst []float32, b []byte) {
	d, dmin := f16(b), f16(b[2:])
	scales := b[4:16]
	qs := b[16:144]
	for c := range 4 {
		sc, m := ScaleMinK4(2*c, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = ScaleMinK4(2*c+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		q := qs[32*c : 32*c+32]
		out := dst[64*c : 64*c+64]
		for l := range 32 {
			out[l] = d1*float32(q[l]&0xF) - m1
			out[l+32] = d2*float32(q[l]>>4) - m2
		}
	}
}

// dequantQ5K decodes a Q5_K super-block of 256 elements: Q4_K's f16 d, f16
// dmin and 12 scale bytes, then 32 bytes qh and 128 bytes of nibbles laid
// out as Q4_K's. Element l of sub-block s (32 elements; chunk s/2 of the
// nibbles, low for even s) takes bit s of qh[l] as its bit 4:
// d*sc[s]*q5 - dmin*m[s].
func dequantQ5K(dst []float32, b []byte) {
	d, dmin := f16(b), f16(b[2:])
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	for s := range 8 {
		sc, m := ScaleMinK4(s, scales)
		ds, ms := d*float32(sc), dmin*float32(m)
		c, shift := s/2, 4*(s%2)
		for l := range 32 {
			q := int(qs[32*c+l]>>shift&0xF) | int(qh[l]>>s&1)<<4
			dst[32*s+l] = ds*float32(q) - ms
		}
	}
}

// dequantQ6K decodes a Q6_K super-block of 256 elements: 128 bytes ql (low
// 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales, f16 d. Element e is
// d*scales[e/16]*(q(e)-32) with the 6-bit q(e) assembled as follows, for
// each half h (128 elements) and l in 0..31:
//
//	element 128h+l     low nibble of ql[64h+l],    qh[32h+l] bits 0-1
//	element 128h+l+32  low nibble of ql[64h+l+32], qh[32h+l] bits 2-3
//	element 128h+l+64  high nibble of ql[64h+l],   qh[32h+l] bits 4-5
//	element 128h+l+96  high nibble of ql[64h+l+32],qh[32h+l] bits 6-7
func dequantQ6K(dst []float32, b []byte) {
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	d := f16(b[208:])
	for h := range 2 {
		for l := range 32 {
			lo0, lo1 := ql[64*h+l], ql[64*h+l+32]
			hi := qh[32*h+l]
			q := [4]int{
				int(lo0&0xF|(hi&3)<<4) - 32,
				int(lo1&0xF|(hi>>2&3)<<4) - 32,
				int(lo0>>4|(hi>>4&3)<<4) - 32,
				int(lo1>>4|(hi>>6&3)<<4) - 32,
			}
			for k := range 4 {
				e := 128*h + 32*k + l
				dst[e] = d * float32(int8(sc[e/16])) * float32(q[k])
			}
		}
	}
}

// iq4Grid is the value each nibble of IQ4_NL and IQ4_XS stands for
// (ggml's kvalues_iq4nl): a non-linear grid, denser near zero.
var iq4Grid = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// GridIQ4 is the value IQ4_NL's and IQ4_XS's nibble q (0..15) stands for.
func GridIQ4(q int) int8 { return iq4Grid[q&0xF] }

// dequantIQ4NL decodes an IQ4_NL block of 32: f16 d, then 16 bytes whose
// low nibbles are elements 0..15 and high nibbles 16..31, each
// d*GridIQ4(nibble).
func dequantIQ4NL(dst []float32, b []byte) {
	d := f16(b)
	for j, q := range b[2:18] {
		dst[j] = d * float32(iq4Grid[q&0xF])
		dst[j+16] = d * float32(iq4Grid[q>>4])
	}
}

// ScaleIQ4XS is IQ4_XS's signed 6-bit scale of sub-block s (0..7): its low
// 4 bits are nibble s%2 of scales_l[s/2], its top 2 bits pair s of the
// little-endian uint16 scales_h; the value less 32.
func ScaleIQ4XS(s int, scalesH uint16, scalesL []byte) int8 {
	lo := scalesL[s/2] >> (4 * (s % 2)) & 0xF
	hi := byte(scalesH>>(2*s)) & 3
	return int8(lo|hi<<4) - 32
}

// dequantIQ4XS decodes an IQ4_XS super-block of 256: f16 d, uint16
// scales_h, 4 bytes scales_l (ScaleIQ4XS), then 8 sub-blocks of 32 laid
// out as IQ4_NL blocks' nibbles (16 bytes each): element l of sub-block
// s is d*scale[s]*GridIQ4(nibble).
func dequantIQ4XS(dst []float32, b []byte) {
	d := f16(b)
	scalesH := binary.LittleEndian.Uint16(b[2:])
	for s := range 8 {
		ds := d * float32(ScaleIQ4XS(s, scalesH, b[4:8]))
		for j, q := range b[8+16*s : 24+16*s] {
			dst[32*s+j] = ds * float32(iq4Grid[q&0xF])
			dst[32*s+j+16] = ds * float32(iq4Grid[q>>4])
		}
	}
}
