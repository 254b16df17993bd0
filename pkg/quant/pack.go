package quant

import "fmt"

// Kernel layouts. A type may have a second in-memory layout, still
// quantized, that a matrix-vector kernel reads better than the file's
// blocks: the loader packs a tensor once (Pack) and pkg/nn builds the
// dequantization of that layout (nn.DequantPacked).
//
// Q4_K and Q5_K packed: the blocks' fields in sections, each in block
// order, so that a row's nibbles are contiguous and the 6-bit scales and
// mins need no bit extraction in the kernel:
//
//	section  bytes per block  content
//	qs       128              the block's nibbles, as in the file
//	qh       32               Q5_K only: the fifth bits, as in the file
//	sc       8                the 8 sub-block scales (ScaleMinK4), one byte each
//	m        8                the 8 sub-block mins, one byte each
//	d        4                f16 d, f16 dmin
//
// 148 bytes per 256 elements against Q4_K's 144 (2.8 % more), 180 against
// Q5_K's 176 (2.3 %).
//
// Q3_K packed: each block's hmask and qs as in the file, then its 16
// scales unpacked (ScaleK3) as int8, then f16 d: 114 bytes against 110
// (3.6 % more). The kernel reads a scale as Q6_K's, one signed byte,
// where the file's needs two bytes, two shifts by amounts that vary by
// sub-block and an or: a row's table of scales (ir.Tables) became a
// scalar loop the compiler did not vectorize.

//
// IQ4_XS packed: each block's f16 d, its 8 scales unpacked (ScaleIQ4XS) as
// int8, then its nibbles as in the file: 138 bytes against 136 (1.5 %
// more), for the same reason.

// blockPacker is, for a type whose packed layout keeps its blocks (Q3_K,
// IQ4_XS), the size of a packed block and the function that packs one
// (o from the file's b); 0 and nil for the others.
func blockPacker(t Type) (int, func(o, b []byte)) {
	switch t {
	case Q3_K:
		return 114, packQ3K
	case IQ4_XS:
		return 138, packIQ4XS
	}
	return 0, nil
}

// packQ3K: hmask and qs, the 16 scales as int8, d.
func packQ3K(o, b []byte) {
	copy(o, b[:96])
	for s := range 16 {
		o[96+s] = byte(ScaleK3(s, b[96:108]))
	}
	copy(o[112:], b[108:110])
}

// packIQ4XS: d, the 8 scales as int8, the nibbles.
func packIQ4XS(o, b []byte) {
	copy(o, b[:2])
	scalesH := uint16(b[2]) | uint16(b[3])<<8
	for s := range 8 {
		o[2+s] = byte(ScaleIQ4XS(s, scalesH, b[4:8]))
	}
	copy(o[10:], b[8:136])
}

// HasPacked reports whether t has a packed kernel layout.
func HasPacked(t Type) bool {
	n, _ := blockPacker(t)
	return t == Q4_K || t == Q5_K || n > 0
}

// packedQH is the bytes of a block's qh section in t's packed layout.
func packedQH(t Type) int {
	if t == Q5_K {
		return 32
	}
	return 0
}

// PackedBytes is the size of nb blocks of t in its packed layout.
func PackedBytes(t Type, nb int) int {
	if n, _ := blockPacker(t); n > 0 {
		return nb * n
	}
	if HasPacked(t) {
		return nb * (148 + packedQH(t))
	}
	return nb * t.BlockBytes()
}

// PackedSections returns the byte offsets, in the packed layout of nb
// blocks of t (Q4_K or Q5_K), of its sections qs, qh (= sc for Q4_K,
// which has none), sc, m and d.
func PackedSections(t Type, nb int) (qs, qh, sc, m, d int) {
	qh = nb * 128
	sc = qh + nb*packedQH(t)
	m = sc + nb*8
	d = m + nb*8
	return 0, qh, sc, m, d
}

// Pack returns the blocks of t (a whole number of them, in the file's
// layout) in t's packed layout.
func Pack(t Type, blocks []byte) ([]byte, error) {
	if !HasPacked(t) {
		return nil, fmt.Errorf("%s has no packed layout", t)
	}
	bb := t.BlockBytes()
	if len(blocks)%bb != 0 {
		return nil, fmt.Errorf("%s: %d bytes are not a whole number of %d-byte blocks", t, len(blocks), bb)
	}
	nb := len(blocks) / bb
	out := make([]byte, PackedBytes(t, nb))
	if n, pack := blockPacker(t); pack != nil {
		for i := range nb {
			pack(out[i*n:(i+1)*n], blocks[i*bb:(i+1)*bb])
		}
		return out, nil
	}
	_, oh, osc, om, od := PackedSections(t, nb)
	nq, nh := 128, packedQH(t)
	for i := range nb {
		b := blocks[i*bb : (i+1)*bb]
		copy(out[i*nq:], b[16+nh:16+nh+nq]) // Q5_K's qh comes first in the file
		copy(out[oh+i*nh:], b[16:16+nh])
		for j := range 8 {
			out[osc+i*8+j], out[om+i*8+j] = ScaleMinK4(j, b[4:16])
		}
		copy(out[od+i*4:], b[0:4])
	}
	return out, nil
}
