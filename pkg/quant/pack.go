package quant

import "fmt"

// Kernel layouts. A type may have a second in-memory layout, still
// quantized, that a matrix-vector kernel reads better than the file's
// blocks: the loader packs a tensor once (Pack) and pkg/nn builds the
// dequantization of that layout (nn.DequantPacked).
//
// Q4_K packed: the blocks' fields in four sections, each in block order,
// so that a row's nibbles are contiguous and the 6-bit scales and mins
// need no bit extraction in the kernel:
//
//	section  bytes per block  content
//	qs       128              the block's nibbles, as in the file
//	sc       8                the 8 sub-block scales (ScaleMinK4), one byte each
//	m        8                the 8 sub-block mins, one byte each
//	d        4                f16 d, f16 dmin
//
// 148 bytes per 256 elements against the file's 144 (2.8 % more).

// HasPacked reports whether t has a packed kernel layout.
func HasPacked(t Type) bool { return t == Q4_K }

// PackedBytes is the size of nb blocks of t in its packed layout.
func PackedBytes(t Type, nb int) int {
	if t == Q4_K {
		return nb * 148
	}
	return nb * t.BlockBytes()
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
	qs, sc, m, d := out[:nb*128], out[nb*128:nb*136], out[nb*136:nb*144], out[nb*144:]
	for i := range nb {
		b := blocks[i*bb : (i+1)*bb]
		copy(qs[i*128:], b[16:144])
		for j := range 8 {
			sc[i*8+j], m[i*8+j] = ScaleMinK4(j, b[4:16])
		}
		copy(d[i*4:], b[0:4])
	}
	return out, nil
}
