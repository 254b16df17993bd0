package quant

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Hand-made blocks: each test spells the bytes out, with the values they
// encode in comments, and lists the decoded elements worked out by hand
// from the GGUF/ggml block layouts.

func dequant(t *testing.T, typ Type, b []byte) []float32 {
	t.Helper()
	out := make([]float32, typ.BlockSize()*len(b)/typ.BlockBytes())
	if err := Dequantize(typ, out, b); err != nil {
		t.Fatal(err)
	}
	return out
}

func expect(t *testing.T, got []float32, want map[int]float32, rest func(e int) float32) {
	t.Helper()
	for e, g := range got {
		w, ok := want[e]
		if !ok {
			w = rest(e)
		}
		if g != w {
			t.Errorf("element %d = %v, want %v", e, g, w)
		}
	}
}

func TestPlainFloats(t *testing.T) {
	// F32 1.5, F16 -2.0 (0xC000), F16 smallest subnormal, BF16 1.0 (0x3F80),
	// BF16 -3.0 (0xC040).
	expect(t, dequant(t, F32, []byte{0, 0, 0xC0, 0x3F}), map[int]float32{0: 1.5}, nil)
	expect(t, dequant(t, F16, []byte{0x00, 0xC0, 0x01, 0x00}), map[int]float32{0: -2, 1: 0x1p-24}, nil)
	expect(t, dequant(t, BF16, []byte{0x80, 0x3F, 0x40, 0xC0}), map[int]float32{0: 1, 1: -3}, nil)
}

func TestQ8_0Block(t *testing.T) {
	b := make([]byte, 34)
	b[0], b[1] = 0x00, 0x34 // d = 0.25
	b[2+0] = 1
	b[2+1] = 0xFF // -1
	b[2+2] = 127
	b[2+31] = 0x80 // -128
	expect(t, dequant(t, Q8_0, b), map[int]float32{0: 0.25, 1: -0.25, 2: 31.75, 31: -32}, func(int) float32 { return 0 })
}

func TestQ4_0Block(t *testing.T) {
	b := make([]byte, 18)
	b[0], b[1] = 0x00, 0x38 // d = 0.5
	for j := range 16 {
		b[2+j] = 0x88 // nibble 8 is zero
	}
	b[2+0] = 0x1F  // element 0: 15-8 = 7; element 16: 1-8 = -7
	b[2+15] = 0x80 // element 15: 0-8 = -8; element 31: 8-8 = 0
	b[2+3] = 0xC8  // element 3: 0; element 19: 12-8 = 4
	want := map[int]float32{0: 3.5, 16: -3.5, 15: -4, 31: 0, 19: 2}
	expect(t, dequant(t, Q4_0, b), want, func(int) float32 { return 0 })
}

func TestQ4_1Block(t *testing.T) {
	b := make([]byte, 20)
	b[0], b[1] = 0x00, 0x38 // d = 0.5
	b[2], b[3] = 0x00, 0xBC // m = -1
	b[4+0] = 0x1F           // element 0: 15; element 16: 1
	b[4+15] = 0xF0          // element 15: 0; element 31: 15
	want := map[int]float32{0: 6.5, 16: -0.5, 31: 6.5}
	expect(t, dequant(t, Q4_1, b), want, func(int) float32 { return -1 })
}

func TestQ5_0Block(t *testing.T) {
	b := make([]byte, 22)
	b[0], b[1] = 0x00, 0x38 // d = 0.5
	// qh (little-endian uint32): bits 0, 16 and 31 set, the rest of the
	// elements have bit 4 clear and nibble 0: 0-16 = -16.
	b[2], b[3], b[4], b[5] = 0x01, 0x00, 0x01, 0x80
	qs := b[6:]
	qs[0] = 0x3F  // element 0: 15|16 = 31 -> 15; element 16: 3|16 = 19 -> 3
	qs[15] = 0xF0 // element 15: 0 -> -16; element 31: 15|16 = 31 -> 15
	qs[4] = 0x0A  // element 4: 10 (bit 4 clear) -> -6
	want := map[int]float32{0: 7.5, 16: 1.5, 15: -8, 31: 7.5, 4: -3}
	expect(t, dequant(t, Q5_0, b), want, func(int) float32 { return -8 })
}

func TestQ5_1Block(t *testing.T) {
	b := make([]byte, 24)
	b[0], b[1] = 0x00, 0x38 // d = 0.5
	b[2], b[3] = 0x00, 0xBC // m = -1
	b[4], b[7] = 0x02, 0x40 // qh bits 1 and 30
	qs := b[8:]
	qs[1] = 0x21  // element 1: 1|16 = 17; element 17: 2
	qs[14] = 0xF0 // element 14: 0; element 30: 15|16 = 31
	want := map[int]float32{1: 7.5, 17: 0, 30: 14.5}
	expect(t, dequant(t, Q5_1, b), want, func(int) float32 { return -1 })
}

// TestQ5KBlock: Q4_K's scales (q4kScales) and nibble layout, and bit s of
// qh[l] as bit 4 of element l of sub-block s.
func TestQ5KBlock(t *testing.T) {
	b := make([]byte, 176)
	b[0], b[1] = 0x00, 0x3C // d = 1
	b[2], b[3] = 0x00, 0x38 // dmin = 0.5
	copy(b[4:16], q4kScales)
	qh, qs := b[16:48], b[48:]
	qs[0] = 0x2A         // element 0 (sub-block 0) = 10, element 32 (sub-block 1) = 2
	qh[0] = 1<<1 | 1<<7  // element 32 += 16; element 224 (sub-block 7, nibble 0) = 16
	qs[32+5] = 0x7       // chunk 1, l 5: element 69 (sub-block 2) = 7
	qh[5] = 1 << 3       // element 101 (sub-block 3, l 5) = 16
	qs[127] = 0xF0       // chunk 3, l 31: element 223 (sub-block 6) = 0, element 255 (sub-block 7) = 15
	qh[31] = 1<<6 | 1<<7 // element 223 = 16, element 255 = 31
	want := map[int]float32{
		0:   1*10 - 0.5*5,
		32:  2*18 - 0.5*6,
		69:  3*7 - 0.5*7,
		101: 4*16 - 0.5*8,
		223: 49*16 - 0.5*54,
		224: 63*16 - 0.5*60,
		255: 63*31 - 0.5*60,
	}
	expect(t, dequant(t, Q5_K, b), want, func(e int) float32 { return -0.5 * float32(q4kM[e/32]) })
}

// q4kScales packs scales {1, 2, 3, 4, 18, 35, 49, 63} and mins
// {5, 6, 7, 8, 20, 37, 54, 60}. Sub-blocks 4-7 keep their low 4 bits in
// bytes 8-11 (scale | min<<4) and their top 2 bits in bits 6-7 of bytes 0-3
// (scales) and 4-7 (mins).
var (
	q4kScales = []byte{
		1 | 1<<6, 2 | 2<<6, 3 | 3<<6, 4 | 3<<6, // 18 = 01_0010, 35 = 10_0011, 49 = 11_0001, 63 = 11_1111
		5 | 1<<6, 6 | 2<<6, 7 | 3<<6, 8 | 3<<6, // 20 = 01_0100, 37 = 10_0101, 54 = 11_0110, 60 = 11_1100
		2 | 4<<4, 3 | 5<<4, 1 | 6<<4, 15 | 12<<4,
	}
	q4kSc = [8]uint8{1, 2, 3, 4, 18, 35, 49, 63}
	q4kM  = [8]uint8{5, 6, 7, 8, 20, 37, 54, 60}
)

func TestScaleMinK4(t *testing.T) {
	for j := range 8 {
		sc, m := ScaleMinK4(j, q4kScales)
		if sc != q4kSc[j] || m != q4kM[j] {
			t.Errorf("sub-block %d: scale, min = %d, %d; want %d, %d", j, sc, m, q4kSc[j], q4kM[j])
		}
	}
	var packed [12]byte
	PackScaleMinK4(packed[:], q4kSc, q4kM)
	if string(packed[:]) != string(q4kScales) {
		t.Errorf("PackScaleMinK4 = % x, want % x", packed, q4kScales)
	}
}

func TestQ4KBlock(t *testing.T) {
	b := make([]byte, 144)
	b[0], b[1] = 0x00, 0x3C // d = 1
	b[2], b[3] = 0x00, 0x38 // dmin = 0.5
	copy(b[4:16], q4kScales)
	qs := b[16:]
	qs[0] = 0x2A   // chunk 0, l 0: element 0 (sub-block 0) = 10, element 32 (sub-block 1) = 2
	qs[32+5] = 0x7 // chunk 1, l 5: element 64+5 (sub-block 2) = 7
	qs[127] = 0xF0 // chunk 3, l 31: element 223 (sub-block 6) = 0, element 255 (sub-block 7) = 15
	want := map[int]float32{
		0:  1*10 - 0.5*5,
		32: 2*2 - 0.5*6,
		69: 3*7 - 0.5*7,
		// 223 has q = 0 like the rest
		255: 63*15 - 0.5*60,
	}
	expect(t, dequant(t, Q4_K, b), want, func(e int) float32 { return -0.5 * float32(q4kM[e/32]) })
}

func TestQ6KBlock(t *testing.T) {
	b := make([]byte, 210)
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	b[208], b[209] = 0x00, 0x38 // d = 0.5
	scales := [16]int8{2, 1, 1, 1, 1, -3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 127}
	for i, s := range scales {
		sc[i] = byte(s)
	}
	// First half, l = 0: q = low 4 bits from ql[0] / ql[32] low then high
	// nibbles, high 2 bits from qh[0] bits 0-1, 2-3, 4-5, 6-7.
	ql[0], ql[32], qh[0] = 0x5F, 0x3C, 0b11_10_01_00
	// Second half, l = 20: ql[64+20], ql[64+52], qh[32+20].
	ql[84], ql[116], qh[52] = 0x7A, 0x01, 0b01_00_11_10
	want := map[int]float32{
		0:   0.5 * 2 * (15 | 0<<4 - 32), // sub-block 0
		32:  0.5 * 1 * (12 | 1<<4 - 32),
		64:  0.5 * 1 * (5 | 2<<4 - 32),
		96:  0.5 * 1 * (3 | 3<<4 - 32),
		148: 0.5 * 1 * (10 | 2<<4 - 32),
		180: 0.5 * 1 * (1 | 3<<4 - 32),
		212: 0.5 * 1 * (7 | 0<<4 - 32),
		244: 0.5 * 127 * (0 | 1<<4 - 32), // sub-block 15
	}
	// Every other element has q = 0, i.e. -32; sub-block 5 (elements 80-95)
	// has a negative scale.
	expect(t, dequant(t, Q6_K, b), want, func(e int) float32 { return 0.5 * float32(scales[e/16]) * -32 })
	if got := dequant(t, Q6_K, b)[80]; got != 48 {
		t.Errorf("element 80 (scale -3) = %v, want 48", got)
	}
}

func TestQ2KBlock(t *testing.T) {
	b := make([]byte, 84)
	scales, qs := b[0:16], b[16:80]
	b[80], b[81] = 0x00, 0x3C // d = 1
	b[82], b[83] = 0x00, 0x38 // dmin = 0.5
	for s := range 16 {
		scales[s] = byte(s) | byte(15-s)<<4 // sub-block s: scale s, min 15-s
	}
	// Byte 0 of the first half: pairs 3, 2, 1, 0 = 2, 0, 1, 3, elements
	// 96, 64, 32, 0 (sub-blocks 6, 4, 2, 0).
	qs[0] = 0b10_00_01_11
	// Byte 17 of the second half, pair 2 = 3: element 128+64+17 = 209 (sub-block 8+4+1).
	qs[32+17] = 0b00_11_00_00
	want := map[int]float32{
		0:   0*3 - 0.5*15,
		32:  2*1 - 0.5*13,
		64:  4*0 - 0.5*11,
		96:  6*2 - 0.5*9,
		209: 13*3 - 0.5*2,
	}
	// Every other element has q = 0: minus its sub-block's min.
	expect(t, dequant(t, Q2_K, b), want, func(e int) float32 { return -0.5 * float32(15-e/16) })
}

// q3kScales packs the 16 signed scales q3kSc as Q3_K stores them (each
// plus 32 in 6 bits): the low nibbles of sub-blocks 0-7 in the low nibbles
// of bytes 0-7, of 8-15 in their high nibbles; the top bit pairs of
// sub-blocks 0-3 in the low pairs of bytes 8-11, 4-7 in the next pairs,
// and so on.
var (
	q3kSc     = [16]int8{-32, -31, -1, 0, 1, 2, 15, 16, 31, -16, 7, -8, 20, 3, -3, 9}
	q3kScales = []byte{
		// low nibbles of (sc+32): 0 1 31 32 33 34 47 48 | 63 16 39 24 52 35 29 41
		0x0 | 0xF<<4, 0x1 | 0x0<<4, 0xF | 0x7<<4, 0x0 | 0x8<<4,
		0x1 | 0x4<<4, 0x2 | 0x3<<4, 0xF | 0xD<<4, 0x0 | 0x9<<4,
		// top pairs: byte 8+i holds sub-blocks i, i+4, i+8, i+12
		0 | 2<<2 | 3<<4 | 3<<6, 0 | 2<<2 | 1<<4 | 2<<6, 1 | 2<<2 | 2<<4 | 1<<6, 2 | 3<<2 | 1<<4 | 2<<6,
	}
)

func TestScaleK3(t *testing.T) {
	for s := range 16 {
		if got := ScaleK3(s, q3kScales); got != q3kSc[s] {
			t.Errorf("sub-block %d: scale %d, want %d", s, got, q3kSc[s])
		}
	}
}

func TestQ3KBlock(t *testing.T) {
	b := make([]byte, 110)
	hmask, qs := b[0:32], b[32:96]
	copy(b[96:108], q3kScales)
	b[108], b[109] = 0x00, 0x38 // d = 0.5
	// First half, byte 5: pairs 0..3 = 3, 0, 2, 1 with third bits (hmask[5]
	// bits 0..3) 1, 0, 0, 1: q = 3, -4, -2, 1 for elements 5, 37, 69, 101.
	qs[5], hmask[5] = 0b01_10_00_11, 0b1001
	// Second half, byte 30, pair 3 = 2, third bit (hmask[30] bit 7) 1:
	// element 128+96+30 = 254 (sub-block 8+6+1) is 2.
	qs[32+30], hmask[30] = 0b10_00_00_00, 0b1000_0000
	want := map[int]float32{
		5:   0.5 * -32 * 3,
		37:  0.5 * -1 * -4,
		69:  0.5 * 1 * -2,
		101: 0.5 * 15 * 1,
		254: 0.5 * 9 * 2,
	}
	// Every other element has low bits 0 and a clear third bit: -4.
	expect(t, dequant(t, Q3_K, b), want, func(e int) float32 { return 0.5 * float32(q3kSc[e/16]) * -4 })
}

func TestIQ4NLBlock(t *testing.T) {
	b := make([]byte, 18)
	b[0], b[1] = 0x00, 0x38 // d = 0.5
	for j := range 16 {
		b[2+j] = 0x88 // nibble 8: grid value 1
	}
	b[2+0] = 0x0F // element 0: nibble 15 (113); element 16: nibble 0 (-127)
	b[2+5] = 0x7A // element 5: nibble 10 (25); element 21: nibble 7 (-10)
	want := map[int]float32{0: 0.5 * 113, 16: 0.5 * -127, 5: 0.5 * 25, 21: 0.5 * -10}
	expect(t, dequant(t, IQ4_NL, b), want, func(int) float32 { return 0.5 })
}

// iq4xsLs are the 6-bit scales (plus 32) of TestIQ4XSBlock's sub-blocks,
// packed by hand into scales_l (their low nibbles, two a byte) and
// scales_h (their top bit pairs, sub-block s at bits 2s).
var iq4xsLs = [8]int{0, 1, 31, 32, 33, 47, 63, 16}

func TestScaleIQ4XS(t *testing.T) {
	scalesL := []byte{0x10, 0x0F, 0xF1, 0x0F}
	for s, ls := range iq4xsLs {
		if got := ScaleIQ4XS(s, 0x7A90, scalesL); int(got) != ls-32 {
			t.Errorf("sub-block %d: scale %d, want %d", s, got, ls-32)
		}
	}
}

func TestIQ4XSBlock(t *testing.T) {
	b := make([]byte, 136)
	b[0], b[1] = 0x00, 0x34 // d = 0.25
	b[2], b[3] = 0x90, 0x7A // scales_h
	copy(b[4:8], []byte{0x10, 0x0F, 0xF1, 0x0F})
	for j := range 128 {
		b[8+j] = 0x88 // grid value 1
	}
	b[8+32+3] = 0xF0 // sub-block 2, byte 3: element 67 nibble 0 (-127), element 83 nibble 15 (113)
	want := map[int]float32{67: 0.25 * -1 * -127, 83: 0.25 * -1 * 113}
	expect(t, dequant(t, IQ4_XS, b), want, func(e int) float32 { return 0.25 * float32(iq4xsLs[e/32]-32) })
}

// TestMultiBlock checks that Dequantize walks consecutive blocks.
func TestMultiBlock(t *testing.T) {
	b := make([]byte, 68)
	b[0], b[1], b[2] = 0x00, 0x3C, 5    // block 0: d = 1, q[0] = 5
	b[34], b[35], b[36] = 0x00, 0x40, 3 // block 1: d = 2, q[0] = 3
	expect(t, dequant(t, Q8_0, b), map[int]float32{0: 5, 32: 6}, func(int) float32 { return 0 })
}

func TestDequantizeErrors(t *testing.T) {
	for _, tc := range []struct {
		typ  Type
		n    int
		src  int
		want string
	}{
		{Q8_0, 31, 34, "whole number of blocks"},
		{Q8_0, 32, 33, "need 34 bytes, got 33"},
		{Type(17), 256, 74, "IQ2_XS (17) is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)"},
		{Type(99), 1, 1, "unknown tensor type 99"},
	} {
		err := Dequantize(tc.typ, make([]float32, tc.n), make([]byte, tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Dequantize(%v, %d, %d bytes) = %v, want %q", tc.typ, tc.n, tc.src, err, tc.want)
		}
	}
	if _, err := Q4_K.RowBytes(100); err == nil {
		t.Error("RowBytes accepted a partial Q4_K block")
	}
	if n, err := Q4_K.RowBytes(512); err != nil || n != 288 {
		t.Errorf("Q4_K.RowBytes(512) = %d, %v; want 288", n, err)
	}
}

// TestRoundTrip quantizes random rows (with an outlier and an all-zero block)
// and checks every element against an error bound of the type's step size:
// a wrong nibble order, scale packing or sign would be off by the range.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 1024)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	x[300] = 9  // an outlier in one block
	x[700] = -7 // and a negative one
	for i := 512; i < 768; i++ {
		if i != 700 {
			x[i] *= 0.01
		}
	}
	for i := 768; i < 800; i++ {
		x[i] = 0 // an all-zero 32-block
	}
	for _, typ := range SupportedTypes() {
		b, err := Quantize(typ, x)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := typ.RowBytes(int64(len(x))); int(r) != len(b) {
			t.Fatalf("%v: %d bytes, RowBytes says %d", typ, len(b), r)
		}
		y := dequant(t, typ, b)
		bs := max(typ.BlockSize(), 32)
		for i := range x {
			blk := x[i/bs*bs : i/bs*bs+bs]
			var amax float32
			for _, v := range blk {
				amax = max(amax, abs(v))
			}
			var bound float32
			switch typ {
			case F32:
				bound = 0
			case F16:
				bound = abs(x[i])*0x1p-11 + 0x1p-25 // half a subnormal step
			case BF16:
				bound = abs(x[i]) * 0x1p-8
			case Q8_0:
				bound = amax / 127 * 0.51
			case Q4_0:
				bound = amax / 8 * 0.51
			case Q4_1, Q4_K:
				bound = 2 * amax / 15 * 0.6
			case Q5_0:
				bound = amax / 16 * 0.51
			case Q5_1, Q5_K:
				bound = 2 * amax / 31 * 0.6
			case Q6_K:
				bound = amax / 31 * 0.6
			case Q2_K:
				bound = 2 * amax / 3 * 0.65
			case Q3_K:
				bound = amax / 4 * 0.6
			case IQ4_NL: // half the grid's widest gap (23 of 127), or the clamp at 113
				bound = amax * 0.12
			case IQ4_XS:
				bound = amax * 0.14
			}
			if d := abs(y[i] - x[i]); d > bound || math.IsNaN(float64(y[i])) {
				t.Errorf("%v: element %d = %v, want %v within %v", typ, i, y[i], x[i], bound)
				break
			}
		}
	}
}

func TestBF16Rounding(t *testing.T) {
	for _, tc := range []struct {
		f    float32
		want uint16
	}{
		{1, 0x3F80},
		{math.Float32frombits(0x3F808000), 0x3F80}, // tie, even stays
		{math.Float32frombits(0x3F818000), 0x3F82}, // tie, odd rounds up
		{math.Float32frombits(0x3F808001), 0x3F81},
		{float32(math.Inf(-1)), 0xFF80},
	} {
		if got := BF16FromFloat32(tc.f); got != tc.want {
			t.Errorf("BF16FromFloat32(%v) = %#x, want %#x", tc.f, got, tc.want)
		}
	}
	if nan := BF16ToFloat32(BF16FromFloat32(float32(math.NaN()))); nan == nan {
		t.Error("NaN did not stay NaN")
	}
}

// TestPackK: the packed layout of two hand-made Q4_K or Q5_K blocks
// holds their nibbles, then (Q5_K) their fifth bits (the file's qh, which
// comes before the nibbles there), then the 16 unpacked scales, the 16
// mins, then d and dmin of each, in block order.
func TestPackK(t *testing.T) {
	for _, tc := range []struct {
		typ            Type
		block, qh, out int // bytes: a file block, its qh, a packed block
	}{
		{Q4_K, 144, 0, 148},
		{Q5_K, 176, 32, 180},
	} {
		blocks := make([]byte, 2*tc.block)
		for i := range 2 {
			b := blocks[i*tc.block : (i+1)*tc.block]
			b[0], b[1], b[2], b[3] = byte(i), 0x3C, 0x00, byte(0x38+i)
			copy(b[4:16], q4kScales)
			for l := range 128 + tc.qh {
				b[16+l] = byte(l + 77*i)
			}
		}
		p, err := Pack(tc.typ, blocks)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != PackedBytes(tc.typ, 2) || len(p) != 2*tc.out {
			t.Fatalf("%v: %d packed bytes, want %d", tc.typ, len(p), 2*tc.out)
		}
		sc := 256 + 2*tc.qh // two blocks' nibbles and qh before the scales
		for i := range 2 {
			b := blocks[i*tc.block : (i+1)*tc.block]
			if string(p[i*128:(i+1)*128]) != string(b[16+tc.qh:]) {
				t.Errorf("%v block %d: nibbles % x, want the file's", tc.typ, i, p[i*128:(i+1)*128])
			}
			if qh := p[256+tc.qh*i : 256+tc.qh*(i+1)]; string(qh) != string(b[16:16+tc.qh]) {
				t.Errorf("%v block %d: qh % x, want the file's", tc.typ, i, qh)
			}
			for j := range 8 {
				if s, m := p[sc+8*i+j], p[sc+16+8*i+j]; s != q4kSc[j] || m != q4kM[j] {
					t.Errorf("%v block %d sub-block %d: scale, min = %d, %d; want %d, %d", tc.typ, i, j, s, m, q4kSc[j], q4kM[j])
				}
			}
			if d := p[sc+32+4*i : sc+36+4*i]; string(d) != string(b[0:4]) {
				t.Errorf("%v block %d: d, dmin bytes % x, want % x", tc.typ, i, d, b[0:4])
			}
		}
		if _, err := Pack(tc.typ, blocks[:200]); err == nil {
			t.Errorf("%v: Pack of 200 bytes (not whole blocks): no error", tc.typ)
		}
	}
	if _, err := Pack(Q8_0, make([]byte, 34)); err == nil {
		t.Error("Pack of Q8_0 (no packed layout): no error")
	}
}

// TestPackQ3K: Q3_K's packed layout of two hand-made blocks holds each
// block's hmask and qs as in the file, its 16 scales as signed bytes
// (q3kSc, from the packed q3kScales), then its d.
func TestPackQ3K(t *testing.T) {
	blocks := make([]byte, 2*110)
	for i := range 2 {
		b := blocks[i*110 : (i+1)*110]
		for l := range 96 {
			b[l] = byte(3*l + 101*i)
		}
		copy(b[96:108], q3kScales)
		b[108], b[109] = byte(7+i), 0x3C
	}
	p, err := Pack(Q3_K, blocks)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != PackedBytes(Q3_K, 2) || len(p) != 2*114 {
		t.Fatalf("%d packed bytes, want %d", len(p), 2*114)
	}
	for i := range 2 {
		b, o := blocks[i*110:(i+1)*110], p[i*114:(i+1)*114]
		if string(o[:96]) != string(b[:96]) {
			t.Errorf("block %d: hmask and qs % x, want the file's", i, o[:96])
		}
		for s := range 16 {
			if int8(o[96+s]) != q3kSc[s] {
				t.Errorf("block %d sub-block %d: scale %d, want %d", i, s, int8(o[96+s]), q3kSc[s])
			}
		}
		if string(o[112:]) != string(b[108:]) {
			t.Errorf("block %d: d bytes % x, want % x", i, o[112:], b[108:])
		}
	}
	if _, err := Pack(Q3_K, blocks[:200]); err == nil {
		t.Error("Pack of 200 bytes (not whole blocks): no error")
	}
}
