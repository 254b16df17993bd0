package nn

import (
	"fmt"

	"tgc/pkg/ir"
	"tgc/pkg/quant"
	"tgc/pkg/tensor"
)

// Quantized weights stay quantized. A GGUF tensor is loaded as its raw
// blocks (a uint8 buffer of exactly the file's bytes), and Dequant builds
// the Tensor-API expression that computes each element from its block:
// bit operations on the bytes, the float16 scales read through a bitcast
// view of the same memory, a scale multiply. The expression is lazy, so it
// fuses into whatever consumes the weight (a matmul's load): the kernel
// reads the quantized bytes, and no float copy of the weight exists.
//
// The arithmetic follows pkg/quant's reference decoders (ggml's order of
// float32 operations), so the GO device reproduces them bit for bit.

// Dequant returns the float32 weight of the given shape (outermost first,
// rows a whole number of blocks) stored as raw blocks of type t in raw, a
// realized uint8 tensor.
func Dequant(raw *tensor.Tensor, t quant.Type, shape []int) (*tensor.Tensor, error) {
	if err := raw.Err(); err != nil {
		return nil, err
	}
	if raw.DType() != ir.Uint8 || raw.Ndim() != 1 {
		return nil, fmt.Errorf("dequant: the blocks must be a 1-D uint8 tensor, got %s %s", raw.DType(), tensor.FormatShape(raw.Shape()))
	}
	if !t.Supported() {
		return nil, quant.ErrUnsupported(t)
	}
	bb := t.BlockBytes()
	nb, err := wholeBlocks(t, shape)
	if err != nil {
		return nil, err
	}
	if raw.Numel() != nb*bb {
		return nil, fmt.Errorf("dequant: %s %s needs %d bytes, the blocks have %d", t, tensor.FormatShape(shape), nb*bb, raw.Numel())
	}
	d := dequantizer{raw: raw, nb: nb, bb: bb}
	var w *tensor.Tensor
	switch t {
	case quant.F32:
		w = raw.Bitcast(ir.Float32)
	case quant.F16:
		w = raw.Bitcast(ir.Float16).Cast(ir.Float32)
	case quant.BF16:
		w = d.bf16()
	case quant.Q8_0:
		w = d.q8_0()
	case quant.Q4_0:
		w = d.q4_0()
	case quant.Q4_1:
		w = d.q4_1()
	case quant.Q5_0:
		w = d.q5_0()
	case quant.Q5_1:
		w = d.q5_1()
	case quant.Q2_K:
		w = d.q2k()
	case quant.Q3_K:
		w = d.q3k()
	case quant.Q4_K:
		w = d.q4k()
	case quant.Q5_K:
		w = d.q5k()
	case quant.Q6_K:
		w = d.q6k()
	case quant.IQ4_NL:
		w = d.iq4nl()
	case quant.IQ4_XS:
		w = d.iq4xs()
	}
	w = w.Reshape(shape...)
	return w, w.Err()
}

// DequantPacked is Dequant for blocks in t's packed layout
// (quant.Pack; quant.HasPacked(t)): Q4_K and Q5_K with their nibbles
// contiguous and their scales and mins one byte each, so that the kernel
// reading it does no bit extraction besides the nibbles (and Q5_K's fifth
// bits); Q3_K with its scales one signed byte each. The float arithmetic
// is Dequant's.
func DequantPacked(raw *tensor.Tensor, t quant.Type, shape []int) (*tensor.Tensor, error) {
	if err := raw.Err(); err != nil {
		return nil, err
	}
	if raw.DType() != ir.Uint8 || raw.Ndim() != 1 {
		return nil, fmt.Errorf("dequant: the packed blocks must be a 1-D uint8 tensor, got %s %s", raw.DType(), tensor.FormatShape(raw.Shape()))
	}
	if !quant.HasPacked(t) {
		return nil, fmt.Errorf("dequant: %s has no packed layout", t)
	}
	nb, err := wholeBlocks(t, shape)
	if err != nil {
		return nil, err
	}
	if raw.Numel() != quant.PackedBytes(t, nb) {
		return nil, fmt.Errorf("dequant: packed %s %s needs %d bytes, the tensor has %d", t, tensor.FormatShape(shape), quant.PackedBytes(t, nb), raw.Numel())
	}
	if t == quant.IQ4_XS {
		d := dequantizer{raw: raw, nb: nb, bb: quant.PackedBytes(t, 1)}
		w := iq4Weight(d.half(0).Reshape(nb, 1, 1, 1), d.int8s(2, 10).Reshape(nb, 8, 1, 1), nibbles(d.bytes(10, 138).Reshape(nb, 8, 16), 2)).Reshape(shape...)
		return w, w.Err()
	}
	if t == quant.Q3_K {
		d := dequantizer{raw: raw, nb: nb, bb: quant.PackedBytes(t, 1)}
		w := q3kWeight(d.half(112).Reshape(nb, 1, 1, 1, 1), d.int8s(96, 112).Reshape(nb, 2, 4, 2, 1), d.q3kQuants()).Reshape(shape...)
		return w, w.Err()
	}
	section := func(from, to int) *tensor.Tensor {
		return raw.Shrink([][2]int{{from, to}}).Cast(ir.Int32)
	}
	// quant.Pack's sections: nibbles, Q5_K's fifth bits, scales, mins,
	// then f16 d and dmin.
	_, oh, osc, om, od := quant.PackedSections(t, nb)
	q := nibbles(section(0, nb*128).Reshape(nb, 4, 32), 2) // (blocks, 4, 2, 32)
	if t == quant.Q5_K {
		q = q.Add(fifthBits(section(oh, osc).Reshape(nb, 1, 1, 32).Expand(nb, 4, 2, 32)))
	}
	sc := section(osc, om).Reshape(nb, 4, 2, 1)
	m := section(om, od).Reshape(nb, 4, 2, 1)
	halves := raw.Bitcast(ir.Float16).Shrink([][2]int{{od / 2, od/2 + 2*nb}}).Reshape(nb, 2).Cast(ir.Float32)
	dd := halves.Shrink([][2]int{{0, nb}, {0, 1}}).Reshape(nb, 1, 1, 1)
	dmin := halves.Shrink([][2]int{{0, nb}, {1, 2}}).Reshape(nb, 1, 1, 1)
	w := q4kWeight(dd, dmin, sc, m, q).Reshape(shape...)
	return w, w.Err()
}

// wholeBlocks is the number of t's blocks in a weight of the given shape,
// whose rows must be a whole number of blocks.
func wholeBlocks(t quant.Type, shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	bs := t.BlockSize()
	if len(shape) == 0 || shape[len(shape)-1]%bs != 0 {
		return 0, fmt.Errorf("dequant: %s rows of shape %s are not a whole number of blocks of %d", t, tensor.FormatShape(shape), bs)
	}
	return n / bs, nil
}

// q4kWeight is Q4_K's d*sc*q - dmin*m, for either layout's fields.
func q4kWeight(dd, dmin, sc, m, q *tensor.Tensor) *tensor.Tensor {
	f32 := func(x *tensor.Tensor) *tensor.Tensor { return x.Cast(ir.Float32) }
	return dd.Mul(f32(sc)).Mul(f32(q)).Sub(dmin.Mul(f32(m)))
}

type dequantizer struct {
	raw    *tensor.Tensor
	nb, bb int // blocks, bytes per block
}

// bytes is bytes [from, to) of every block as int32, shape (blocks, to-from).
func (d dequantizer) bytes(from, to int) *tensor.Tensor {
	return d.raw.Reshape(d.nb, d.bb).Shrink([][2]int{{0, d.nb}, {from, to}}).Cast(ir.Int32)
}

// int8s is bytes [from, to) of every block read as int8, as int32.
func (d dequantizer) int8s(from, to int) *tensor.Tensor {
	return d.raw.Bitcast(ir.Int8).Reshape(d.nb, d.bb).Shrink([][2]int{{0, d.nb}, {from, to}}).Cast(ir.Int32)
}

// half is the float16 at byte offset off of every block, as float32
// (blocks, 1): a bitcast view of the same memory, no decoding.
func (d dequantizer) half(off int) *tensor.Tensor {
	return d.raw.Bitcast(ir.Float16).Reshape(d.nb, d.bb/2).Shrink([][2]int{{0, d.nb}, {off / 2, off/2 + 1}}).Cast(ir.Float32)
}

// lane is 0, 1, ... n-1 along axis a of a rank-r broadcast shape: it picks
// between the variants of an element (low or high nibble).
func lane(ctx *tensor.Context, n, a, r int) *tensor.Tensor {
	shape := make([]int, r)
	for i := range shape {
		shape[i] = 1
	}
	shape[a] = n
	return ctx.Arange(0, float64(n), 1, ir.Int32).Reshape(shape...)
}

func ci(t *tensor.Tensor, v int) *tensor.Tensor { return t.Const(float64(v), ir.Int32) }

// shr and and are x >> k and x & m.
func shr(x *tensor.Tensor, k int) *tensor.Tensor { return x.Shr(ci(x, k)) }
func and(x *tensor.Tensor, m int) *tensor.Tensor { return x.And(ci(x, m)) }

// nibbles reads q (blocks, ..., n) as two variants along a new axis a
// before the last: the low nibbles (lane 0) and the high ones (lane 1).
func nibbles(q *tensor.Tensor, axis int) *tensor.Tensor {
	shape := q.Shape()
	one := append(append(append([]int{}, shape[:axis]...), 1), shape[axis:]...)
	two := append(append(append([]int{}, shape[:axis]...), 2), shape[axis:]...)
	v := q.Reshape(one...).Expand(two...)
	hi := lane(q.Context(), 2, axis, len(two)).Eq(ci(q, 1))
	return hi.Where(shr(v, 4), and(v, 15))
}

func (d dequantizer) f32(x *tensor.Tensor) *tensor.Tensor { return x.Cast(ir.Float32) }

// Q8_0: f16 d, 32 int8: d*q.
func (d dequantizer) q8_0() *tensor.Tensor {
	return d.f32(d.int8s(2, 34)).Mul(d.half(0))
}

// Q4_0: f16 d, 16 bytes; byte j holds element j (low nibble) and j+16
// (high): d*(q-8).
func (d dequantizer) q4_0() *tensor.Tensor {
	q := nibbles(d.bytes(2, 18), 1) // (blocks, 2, 16)
	return d.f32(q.Sub(ci(q, 8))).Mul(d.half(0).Reshape(d.nb, 1, 1))
}

// Q4_1: f16 d, f16 m, nibbles as Q4_0: d*q + m.
func (d dequantizer) q4_1() *tensor.Tensor {
	q := nibbles(d.bytes(4, 20), 1)
	return d.f32(q).Mul(d.half(0).Reshape(d.nb, 1, 1)).Add(d.half(2).Reshape(d.nb, 1, 1))
}

// Q5_0: f16 d, then q5's qh and nibbles: d*(q-16).
func (d dequantizer) q5_0() *tensor.Tensor {
	q := d.q5(2)
	return d.f32(q.Sub(ci(q, 16))).Mul(d.half(0).Reshape(d.nb, 1, 1))
}

// Q5_1: f16 d, f16 m, then q5's qh and nibbles: d*q + m.
func (d dequantizer) q5_1() *tensor.Tensor {
	q := d.q5(4)
	return d.f32(q).Mul(d.half(0).Reshape(d.nb, 1, 1)).Add(d.half(2).Reshape(d.nb, 1, 1))
}

// q5 is a Q5_0/Q5_1 block's 32 five-bit values, (blocks, 2, 16): 4 bytes
// qh at byte h, whose bit j (little-endian) is element j's bit 4, then 16
// bytes of nibbles as Q4_0's (element j low, j+16 high). Element
// (half, l) is j = 16*half + l: bit l of the half's two qh bytes, read as
// one uint16 through a view of the blocks (h and the block size are even),
// which costs no arithmetic: the fusion keeps it in the kernel that reads
// the weight, whose vector lanes (the 16 elements of a half, one axis)
// each shift the one word by their own constant.
func (d dequantizer) q5(h int) *tensor.Tensor {
	lo := nibbles(d.bytes(h+4, h+20), 1)
	word := d.raw.Bitcast(ir.Uint16).Reshape(d.nb, d.bb/2).Shrink([][2]int{{0, d.nb}, {h / 2, h/2 + 2}}).
		Cast(ir.Int32).Reshape(d.nb, 2, 1)
	hi := and(word.Shr(lane(word.Context(), 16, 2, 3)), 1)
	return lo.Add(hi.Mul(ci(hi, 16)))
}

// Q4_K: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8
// sub-blocks of 32 (quant.ScaleMinK4), 128 bytes of nibbles in 4 chunks of
// 32 bytes: chunk c holds sub-block 2c (low nibbles) and 2c+1 (high).
// Element (c, h, l) is d*sc[2c+h]*q - dmin*m[2c+h].
func (d dequantizer) q4k() *tensor.Tensor {
	sc, m := d.k4ScalesMins()
	q := nibbles(d.bytes(16, 144).Reshape(d.nb, 4, 32), 2) // (blocks, 4, 2, 32)
	return q4kWeight(d.half(0).Reshape(d.nb, 1, 1, 1), d.half(2).Reshape(d.nb, 1, 1, 1), sc, m, q)
}

// Q5_K: Q4_K's d, dmin and scales, 32 bytes qh, then Q4_K's nibble chunks
// (bytes 48..176). Bit s of qh[l] is bit 4 of element l of sub-block
// s = 2c+h: element (c, h, l) is d*sc[s]*q - dmin*m[s].
func (d dequantizer) q5k() *tensor.Tensor {
	sc, m := d.k4ScalesMins()
	q := nibbles(d.bytes(48, 176).Reshape(d.nb, 4, 32), 2) // (blocks, 4, 2, 32)
	q = q.Add(fifthBits(d.bytes(16, 48).Reshape(d.nb, 1, 1, 32).Expand(d.nb, 4, 2, 32)))
	return q4kWeight(d.half(0).Reshape(d.nb, 1, 1, 1), d.half(2).Reshape(d.nb, 1, 1, 1), sc, m, q)
}

// fifthBits is Q5_K's 16 or 0 of element (c, h, l) from qh (blocks, 4, 2,
// 32), the block's 32 qh bytes along l: bit 2c+h of qh[l].
func fifthBits(qh *tensor.Tensor) *tensor.Tensor {
	sub := qh.Context().Arange(0, 8, 1, ir.Int32).Reshape(1, 4, 2, 1) // s = 2c+h
	hi := and(qh.Shr(sub), 1)
	return hi.Mul(ci(hi, 16))
}

// k4ScalesMins unpacks the 6-bit scales and mins of Q4_K and Q5_K (bytes
// 4..16; quant.ScaleMinK4), each (blocks, 4, 2, 1): sub-block 2c+h.
func (d dequantizer) k4ScalesMins() (sc, m *tensor.Tensor) {
	s := d.bytes(4, 16)
	part := func(i int) *tensor.Tensor { // bytes 4i..4i+3 of the scales, (blocks, 2, 4)
		return s.Shrink([][2]int{{0, d.nb}, {4 * i, 4*i + 4}}).Reshape(d.nb, 1, 4).Expand(d.nb, 2, 4)
	}
	a, b, c := part(0), part(1), part(2)
	upper := lane(s.Context(), 2, 1, 3).Eq(ci(s, 1)) // sub-blocks 4..7
	sc = upper.Where(and(c, 15).Or(shr(a, 6).Mul(ci(a, 16))), and(a, 63)).Reshape(d.nb, 4, 2, 1)
	m = upper.Where(shr(c, 4).Or(shr(b, 6).Mul(ci(b, 16))), and(b, 63)).Reshape(d.nb, 4, 2, 1)
	return sc, m
}

// pairs reads 64 bytes of 2-bit quants at byte off of every block as
// (blocks, h, j, k, l) = (2, 4, 2, 16): element 128h + 32j + 16k + l is bit
// pair j of byte 32h + 16k + l (Q2_K's and Q3_K's layout).
func (d dequantizer) pairs(off int) *tensor.Tensor {
	q := d.bytes(off, off+64).Reshape(d.nb, 2, 1, 2, 16).Expand(d.nb, 2, 4, 2, 16)
	shift := q.Context().Arange(0, 8, 2, ir.Int32).Reshape(1, 1, 4, 1, 1) // 2j
	return and(q.Shr(shift), 3)
}

// Q2_K: 16 scale bytes (sub-block s = 8h + 2j + k: scale in the low
// nibble, min in the high), the quants in bit pairs (pairs), f16 d, f16
// dmin: d*sc*q - dmin*m.
func (d dequantizer) q2k() *tensor.Tensor {
	s := d.bytes(0, 16).Reshape(d.nb, 2, 4, 2, 1)
	return q4kWeight(d.half(80).Reshape(d.nb, 1, 1, 1, 1), d.half(82).Reshape(d.nb, 1, 1, 1, 1), and(s, 15), shr(s, 4), d.pairs(16))
}

// Q3_K: 32 bytes hmask, the low bits in bit pairs (pairs) at byte 32, 12
// bytes of 6-bit scales (quant.ScaleK3), f16 d. It is d*(sc-32)*q.
func (d dequantizer) q3k() *tensor.Tensor {
	ctx := d.raw.Context()
	// Scale s = 8h + 2j + k = 8h + 4jh + 2jl + k (j = 2jh + jl): its low 4
	// bits are nibble h of byte 2j + k, its top 2 bit pair 2h + jh of byte
	// 8 + 2jl + k.
	sc := d.bytes(96, 108)
	lo := sc.Shrink([][2]int{{0, d.nb}, {0, 8}}).Reshape(d.nb, 1, 8).Expand(d.nb, 2, 8)
	lo = and(lo.Shr(lane(ctx, 2, 1, 3).Mul(ci(lo, 4))), 15).Reshape(d.nb, 2, 4, 2, 1)
	hi := sc.Shrink([][2]int{{0, d.nb}, {8, 12}}).Reshape(d.nb, 1, 1, 4).Expand(d.nb, 2, 2, 4)
	by := lane(ctx, 2, 1, 4).Mul(ci(hi, 4)).Add(lane(ctx, 2, 2, 4).Mul(ci(hi, 2))) // 2(2h + jh)
	hi = and(hi.Shr(by), 3).Reshape(d.nb, 2, 4, 2, 1)
	scale := lo.Add(hi.Mul(ci(hi, 16))).Sub(ci(hi, 32))
	return q3kWeight(d.half(108).Reshape(d.nb, 1, 1, 1, 1), scale, d.q3kQuants())
}

// q3kQuants is a Q3_K block's quants (either layout: hmask, then qs),
// (blocks, h, j, k, l): element (h, j, k, l) takes its third bit from bit
// 4h + j of hmask[16k + l]; a clear bit means 4 less.
func (d dequantizer) q3kQuants() *tensor.Tensor {
	ctx := d.raw.Context()
	hm := d.bytes(0, 32).Reshape(d.nb, 1, 1, 2, 16).Expand(d.nb, 2, 4, 2, 16)
	bit := lane(ctx, 2, 1, 5).Mul(ci(hm, 4)).Add(lane(ctx, 4, 2, 5)) // 4h + j
	return d.pairs(32).Add(and(hm.Shr(bit), 1).Mul(ci(hm, 4))).Sub(ci(hm, 4))
}

// q3kWeight is Q3_K's d*sc*q, for either layout's fields (sc signed).
func q3kWeight(dd, sc, q *tensor.Tensor) *tensor.Tensor {
	return dd.Mul(sc.Cast(ir.Float32)).Mul(q.Cast(ir.Float32))
}

// Q6_K: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8
// scales, f16 d. Element e = 128h + 32(2kh+kl) + l takes its low bits from
// ql[64h+32kl+l] (nibble kh) and its high bits from qh[32h+l] (bits
// 2(2kh+kl)); it is d*sc[e/16]*(q-32).
func (d dequantizer) q6k() *tensor.Tensor {
	ctx := d.raw.Context()
	full := []int{d.nb, 2, 2, 2, 32} // (blocks, h, kh, kl, l)
	ql := d.bytes(0, 128).Reshape(d.nb, 2, 1, 2, 32).Expand(full...)
	lo := lane(ctx, 2, 2, 5).Eq(ci(ql, 1)).Where(shr(ql, 4), and(ql, 15))
	qh := d.bytes(128, 192).Reshape(d.nb, 2, 1, 1, 32).Expand(full...)
	kh, kl := lane(ctx, 2, 2, 5).Eq(ci(qh, 1)), lane(ctx, 2, 3, 5).Eq(ci(qh, 1))
	by := kh.Where(kl.Where(ci(qh, 6), ci(qh, 4)), kl.Where(ci(qh, 2), ci(qh, 0))) // 2(2kh+kl)
	hi := and(qh.Shr(by), 3)
	q := lo.Add(hi.Mul(ci(hi, 16))).Sub(ci(lo, 32)).Reshape(d.nb, 2, 2, 2, 2, 16)
	sc := d.int8s(192, 208).Reshape(d.nb, 2, 2, 2, 2, 1)
	dd := d.half(208).Reshape(d.nb, 1, 1, 1, 1, 1)
	return dd.Mul(d.f32(sc)).Mul(d.f32(q))
}

// gridIQ4 is quant.GridIQ4(q) for nibbles q (int32): a chain of
// selects, which the C renderer turns into one permute of the 16 values
// (a nibble's table, as for the other types' linear ones).
func gridIQ4(q *tensor.Tensor) *tensor.Tensor {
	v := ci(q, int(quant.GridIQ4(15)))
	for i := 14; i >= 0; i-- {
		v = q.Eq(ci(q, i)).Where(ci(q, int(quant.GridIQ4(i))), v)
	}
	return v
}

// iq4Weight is IQ4_XS's d*sc*grid[q] (IQ4_NL's without sc), for either
// layout's fields (sc signed).
func iq4Weight(dd, sc, q *tensor.Tensor) *tensor.Tensor {
	return dd.Mul(sc.Cast(ir.Float32)).Mul(gridIQ4(q).Cast(ir.Float32))
}

// IQ4_NL: f16 d, 16 bytes of nibbles as Q4_0's: d*grid[q].
func (d dequantizer) iq4nl() *tensor.Tensor {
	q := nibbles(d.bytes(2, 18), 1) // (blocks, 2, 16)
	return d.half(0).Reshape(d.nb, 1, 1).Mul(gridIQ4(q).Cast(ir.Float32))
}

// IQ4_XS: f16 d, uint16 scales_h, 4 bytes scales_l, then 8 sub-blocks of
// 32 as IQ4_NL's nibbles. Sub-block s's scale (quant.ScaleIQ4XS): nibble
// s%2 of scales_l[s/2], bit pair s of scales_h above it, less 32.
func (d dequantizer) iq4xs() *tensor.Tensor {
	ctx := d.raw.Context()
	lo := d.bytes(4, 8).Reshape(d.nb, 4, 1).Expand(d.nb, 4, 2)
	lo = and(lo.Shr(lane(ctx, 2, 2, 3).Mul(ci(lo, 4))), 15).Reshape(d.nb, 8)
	hw := d.raw.Bitcast(ir.Uint16).Reshape(d.nb, d.bb/2).Shrink([][2]int{{0, d.nb}, {1, 2}}).Cast(ir.Int32).Expand(d.nb, 8)
	hi := and(hw.Shr(lane(ctx, 8, 1, 2).Mul(ci(hw, 2))), 3)
	sc := lo.Add(hi.Mul(ci(hi, 16))).Sub(ci(hi, 32)).Reshape(d.nb, 8, 1, 1)
	q := nibbles(d.bytes(8, 136).Reshape(d.nb, 8, 16), 2) // (blocks, 8, 2, 16)
	return iq4Weight(d.half(0).Reshape(d.nb, 1, 1, 1), sc, q)
}

// BF16: the top half of a float32; the blocks' memory read as bfloat16,
// which widens to float32 exactly.
func (d dequantizer) bf16() *tensor.Tensor {
	return d.raw.Bitcast(ir.BFloat16).Cast(ir.Float32)
}
