package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"tgc/pkg/half"
)

// Quantize encodes src as type t. len(src) must be a multiple of t's block
// size. The quantizers are simple and deterministic (round to nearest, one
// pass, no search for better scales): they exist so tests and benchmarks can
// write models of every type, not to match llama.cpp's quantization error.
func Quantize(t Type, src []float32) ([]byte, error) {
	f, ok := formats[t]
	if !ok {
		return nil, ErrUnsupported(t)
	}
	if len(src)%f.blockSize != 0 {
		return nil, fmt.Errorf("%s: %d elements are not a whole number of blocks of %d", t, len(src), f.blockSize)
	}
	nb := len(src) / f.blockSize
	out := make([]byte, nb*f.blockBytes)
	block := quantFuncs[t]
	for i := range nb {
		block(out[i*f.blockBytes:(i+1)*f.blockBytes], src[i*f.blockSize:(i+1)*f.blockSize])
	}
	return out, nil
}

var quantFuncs = map[Type]func(b []byte, x []float32){
	F32:    func(b []byte, x []float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(x[0])) },
	F16:    func(b []byte, x []float32) { binary.LittleEndian.PutUint16(b, half.FromFloat32(x[0])) },
	BF16:   func(b []byte, x []float32) { binary.LittleEndian.PutUint16(b, BF16FromFloat32(x[0])) },
	Q8_0:   quantQ8_0,
	Q4_0:   quantQ4_0,
	Q4_1:   quantQ4_1,
	Q5_0:   quantQ5_0,
	Q5_1:   quantQ5_1,
	Q2_K:   quantQ2K,
	Q3_K:   quantQ3K,
	Q4_K:   quantQ4K,
	Q5_K:   quantQ5K,
	Q6_K:   quantQ6K,
	IQ4_NL: quantIQ4NL,
	IQ4_XS: quantIQ4XS,
}

// BF16FromFloat32 rounds f to the nearest bfloat16, ties to even; NaNs stay
// NaNs (the one rounding of ir, through pkg/half).
func BF16FromFloat32(f float32) uint16 { return half.BFloat16FromFloat32(f) }

func putF16(b []byte, v float32) float32 {
	h := half.FromFloat32(v)
	binary.LittleEndian.PutUint16(b, h)
	return half.ToFloat32(h)
}

// inverse returns 1/d, or 0 for a zero scale (an all-zero block).
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

func clampRound(v float32, lo, hi int) int {
	q := int(math.Round(float64(v)))
	return min(max(q, lo), hi)
}

func quantQ8_0(b []byte, x []float32) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs(v))
	}
	d := putF16(b, amax/127)
	id := inverse(d)
	for i, v := range x {
		b[2+i] = byte(int8(clampRound(v*id, -127, 127)))
	}
}

// quantQ4_0 maps the element of largest magnitude to -8 (the asymmetric end
// of the nibble range), so its sign picks d's sign.
func quantQ4_0(b []byte, x []float32) {
	id := inverse(putF16(b, largest(x)/-8))
	qs := b[2:18]
	for j := range 16 {
		lo := clampRound(x[j]*id, -8, 7) + 8
		hi := clampRound(x[j+16]*id, -8, 7) + 8
		qs[j] = byte(lo | hi<<4)
	}
}

func quantQ4_1(b []byte, x []float32) {
	d, m := putRange(b, x, 15)
	id := inverse(d)
	qs := b[4:20]
	for j := range 16 {
		q0 := clampRound((x[j]-m)*id, 0, 15)
		q1 := clampRound((x[j+16]-m)*id, 0, 15)
		qs[j] = byte(q0 | q1<<4)
	}
}

// largest is the element of x of largest magnitude (the first of them).
func largest(x []float32) float32 {
	var amax, vmax float32
	for _, v := range x {
		if abs(v) > amax {
			amax, vmax = abs(v), v
		}
	}
	return vmax
}

// putRange stores Q4_1's and Q5_1's f16 d, the step of levels over x's
// range, and m, its minimum, and returns them as stored.
func putRange(b []byte, x []float32, levels int) (d, m float32) {
	lo, hi := x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return putF16(b, (hi-lo)/float32(levels)), putF16(b[2:], lo)
}

// putQ5 stores 32 five-bit values as Q5_0/Q5_1's qh (4 bytes) and nibbles.
func putQ5(qh, qs []byte, q [32]int) {
	var bits uint32
	for j, v := range q {
		bits |= uint32(v>>4&1) << j
		qs[j%16] |= byte(v&0xF) << (4 * (j / 16))
	}
	binary.LittleEndian.PutUint32(qh, bits)
}

// quantQ5_0 maps the element of largest magnitude to -16, as quantQ4_0
// does to -8.
func quantQ5_0(b []byte, x []float32) {
	id := inverse(putF16(b, largest(x)/-16))
	var q [32]int
	for j, v := range x {
		q[j] = clampRound(v*id, -16, 15) + 16
	}
	putQ5(b[2:6], b[6:22], q)
}

func quantQ5_1(b []byte, x []float32) {
	d, m := putRange(b, x, 31)
	id := inverse(d)
	var q [32]int
	for j, v := range x {
		q[j] = clampRound((v-m)*id, 0, 31)
	}
	putQ5(b[4:8], b[8:24], q)
}

// quantQ5K is quantQ4K with 31 levels per sub-block and the fifth bits in
// qh (bit s of qh[l] for element l of sub-block s).
func quantQ5K(b []byte, x []float32) {
	qh, qs := b[16:48], b[48:176]
	quantK(b, x, 31, func(s, l, q int) {
		qs[32*(s/2)+l] |= byte(q&0xF) << (4 * (s % 2))
		qh[l] |= byte(q>>4) << s
	})
}

// quantQ4K gives each sub-block of 32 the range [min(0, lo), hi]: a scale
// (hi-lo)/15 and a min -lo, both quantized to 6 bits against the
// super-block's d and dmin. Scales round up so the largest element never
// clamps. Sub-block s's nibbles are the low (even s) or high halves of
// bytes 32*(s/2).. of qs.
func quantQ4K(b []byte, x []float32) {
	qs := b[16:144]
	quantK(b, x, 15, func(s, l, q int) { qs[32*(s/2)+l] |= byte(q << (4 * (s % 2))) })
}

// quantK writes a Q4_K/Q5_K super-block's d, dmin and packed 6-bit scales
// and mins for values of 0..levels per sub-block, and hands put each
// element's value (sub-block s, element l) to place.
func quantK(b []byte, x []float32, levels int, put func(s, l, q int)) {
	scale, mins, maxScale, maxMin := subBlockRanges(x, 32, levels)
	d := putF16(b, maxScale/63)
	dmin := putF16(b[2:], maxMin/63)
	var sc, m [8]uint8
	for s := range 8 {
		sc[s] = uint8(min(63, math.Ceil(float64(scale[s]*inverse(d)))))
		m[s] = uint8(clampRound(mins[s]*inverse(dmin), 0, 63))
	}
	PackScaleMinK4(b[4:16], sc, m)
	for s := range 8 {
		ds, ms := d*float32(sc[s]), dmin*float32(m[s])
		id := inverse(ds)
		for l := range 32 {
			put(s, l, clampRound((x[32*s+l]+ms)*id, 0, levels))
		}
	}
}

// quantQ2K is quantK's scheme for sub-blocks of 16 with 4 levels: scales
// and mins in 4 bits against d and dmin (scale byte s: scale low, min
// high), the quants in bit pairs (dequantQ2K's layout).
func quantQ2K(b []byte, x []float32) {
	scale, mins, maxScale, maxMin := subBlockRanges(x, 16, 3)
	d := putF16(b[80:], maxScale/15)
	dmin := putF16(b[82:], maxMin/15)
	qs := b[16:80]
	for s := range 16 {
		sc := int(min(15, math.Ceil(float64(scale[s]*inverse(d)))))
		m := clampRound(mins[s]*inverse(dmin), 0, 15)
		b[s] = byte(sc | m<<4)
		ds, ms := d*float32(sc), dmin*float32(m)
		id := inverse(ds)
		for i := 16 * s; i < 16*s+16; i++ {
			h, j, l := i/128, i%128/32, i%32
			qs[32*h+l] |= byte(clampRound((x[i]+ms)*id, 0, 3) << (2 * j))
		}
	}
}

// signedScales is each sub-block of size elements' scale that maps its
// element of largest magnitude to -level, and the scale of largest
// magnitude (the first of them).
func signedScales(x []float32, size int, level float32) (scale []float32, big float32) {
	scale = make([]float32, len(x)/size)
	for s := range scale {
		scale[s] = largest(x[size*s:size*s+size]) / -level
		if abs(scale[s]) > abs(big) {
			big = scale[s]
		}
	}
	return scale, big
}

// quantQ3K maps each sub-block of 16's element of largest magnitude to
// -4 (as quantQ4_0 does to -8), its scale a signed 6-bit multiple of d,
// which maps the largest scale to -32.
func quantQ3K(b []byte, x []float32) {
	scale, big := signedScales(x, 16, 4)
	hmask, qs, scb := b[0:32], b[32:96], b[96:108]
	d := putF16(b[108:], big/-32)
	for s := range 16 {
		sc := clampRound(scale[s]*inverse(d), -32, 31)
		u := sc + 32
		scb[s%8] |= byte(u&0xF) << (4 * (s / 8))
		scb[8+s%4] |= byte(u>>4) << (2 * (s / 4))
		id := inverse(d * float32(sc))
		for i := 16 * s; i < 16*s+16; i++ {
			h, j, l := i/128, i%128/32, i%32
			q := clampRound(x[i]*id, -4, 3) + 4 // 0..7: low bits, third bit
			qs[32*h+l] |= byte(q&3) << (2 * j)
			hmask[l] |= byte(q>>2) << (4*h + j)
		}
	}
}

// subBlockRanges gives each sub-block of size elements of x the range
// [min(0, lo), hi]: its step for values of 0..levels and its minimum -lo,
// and the largest step and minimum.
func subBlockRanges(x []float32, size, levels int) (scale, mins []float32, maxScale, maxMin float32) {
	n := len(x) / size
	scale, mins = make([]float32, n), make([]float32, n)
	for s := range n {
		lo, hi := float32(0), x[size*s]
		for _, v := range x[size*s : size*s+size] {
			lo, hi = min(lo, v), max(hi, v)
		}
		scale[s], mins[s] = (hi-lo)/float32(levels), -lo
		maxScale, maxMin = max(maxScale, scale[s]), max(maxMin, mins[s])
	}
	return scale, mins, maxScale, maxMin
}

// PackScaleMinK4 packs eight 6-bit scales and mins into the 12 bytes that
// ScaleMinK4 unpacks.
func PackScaleMinK4(dst []byte, sc, m [8]uint8) {
	for j := range 4 {
		dst[j] = sc[j]&63 | (sc[j+4]>>4)<<6
		dst[j+4] = m[j]&63 | (m[j+4]>>4)<<6
		dst[j+8] = sc[j+4]&0xF | (m[j+4]&0xF)<<4
	}
}

// quantQ6K gives each sub-block of 16 a symmetric scale max|x|/31, quantized
// to int8 against the super-block's d.
func quantQ6K(b []byte, x []float32) {
	var scale [16]float32
	var maxScale float32
	for s := range 16 {
		var amax float32
		for _, v := range x[16*s : 16*s+16] {
			amax = max(amax, abs(v))
		}
		scale[s] = amax / 31
		maxScale = max(maxScale, scale[s])
	}
	ql, qh, scb := b[0:128], b[128:192], b[192:208]
	d := putF16(b[208:], maxScale/127)
	var q [256]int
	for s := range 16 {
		sc := int8(min(127, math.Ceil(float64(scale[s]*inverse(d)))))
		scb[s] = byte(sc)
		id := inverse(d * float32(sc))
		for i := 16 * s; i < 16*s+16; i++ {
			q[i] = clampRound(x[i]*id, -32, 31) + 32
		}
	}
	for h := range 2 {
		for l := range 32 {
			e := 128*h + l
			q0, q1, q2, q3 := q[e], q[e+32], q[e+64], q[e+96]
			ql[64*h+l] = byte(q0&0xF | (q2&0xF)<<4)
			ql[64*h+l+32] = byte(q1&0xF | (q3&0xF)<<4)
			qh[32*h+l] = byte(q0>>4 | (q1>>4)<<2 | (q2>>4)<<4 | (q3>>4)<<6)
		}
	}
}

func abs(v float32) float32 { return float32(math.Abs(float64(v))) }

// nearestIQ4 is the nibble whose grid value (GridIQ4) is nearest v.
func nearestIQ4(v float32) byte {
	best := 0
	for i, k := range iq4Grid {
		if abs(v-float32(k)) < abs(v-float32(iq4Grid[best])) {
			best = i
		}
	}
	return byte(best)
}

// putIQ4 stores 32 values scaled by 1/ds as the nibbles of the grid
// values nearest them (element j low, j+16 high).
func putIQ4(qs []byte, x []float32, ds float32) {
	id := inverse(ds)
	for j := range 16 {
		qs[j] = nearestIQ4(x[j]*id) | nearestIQ4(x[j+16]*id)<<4
	}
}

// quantIQ4NL maps the element of largest magnitude to the grid's -127.
func quantIQ4NL(b []byte, x []float32) {
	putIQ4(b[2:18], x, putF16(b, largest(x)/-127))
}

// quantIQ4XS gives each sub-block of 32 the scale that maps its element
// of largest magnitude to -127, a signed 6-bit multiple of d, which maps
// the largest scale to -32.
func quantIQ4XS(b []byte, x []float32) {
	scale, big := signedScales(x, 32, 127)
	d := putF16(b, big/-32)
	var scalesH uint16
	for s := range 8 {
		sc := clampRound(scale[s]*inverse(d), -32, 31)
		u := sc + 32
		b[4+s/2] |= byte(u&0xF) << (4 * (s % 2))
		scalesH |= uint16(u>>4) << (2 * s)
		putIQ4(b[8+16*s:24+16*s], x[32*s:32*s+32], d*float32(sc))
	}
	binary.LittleEndian.PutUint16(b[2:], scalesH)
}
