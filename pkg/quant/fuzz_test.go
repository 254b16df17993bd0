package quant

import "testing"

// FuzzDequantize: any bytes of any type number decode or fail with an
// error, never a panic: whole blocks of a supported type decode, a
// partial block or an unsupported type is refused, and a type with a
// packed layout packs them to PackedBytes. (The loaders hand Dequantize
// and Pack a file's tensor data after checking its size; this covers
// every bit pattern of the scales, the quants and the f16 fields.)
func FuzzDequantize(f *testing.F) {
	for _, t := range SupportedTypes() {
		f.Add(uint32(t), make([]byte, 2*t.BlockBytes()))
	}
	f.Add(uint32(17), make([]byte, 74)) // IQ2_XS: named, not supported
	f.Add(uint32(99), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, typ uint32, b []byte) {
		tp := Type(typ)
		if !tp.Supported() {
			if err := Dequantize(tp, make([]float32, 256), b); err == nil {
				t.Fatalf("type %d (%v) decoded", typ, tp)
			}
			return
		}
		bb, bs := tp.BlockBytes(), tp.BlockSize()
		nb := len(b) / bb
		if err := Dequantize(tp, make([]float32, nb*bs), b[:nb*bb]); err != nil {
			t.Fatalf("%v: %d whole blocks: %v", tp, nb, err)
		}
		if len(b)%bb != 0 {
			if err := Dequantize(tp, make([]float32, (nb+1)*bs), b); err == nil {
				t.Fatalf("%v: %d bytes (not whole blocks) decoded", tp, len(b))
			}
		}
		if HasPacked(tp) {
			p, err := Pack(tp, b[:nb*bb])
			if err != nil || len(p) != PackedBytes(tp, nb) {
				t.Fatalf("%v: packed %d blocks into %d bytes (%v), want %d", tp, nb, len(p), err, PackedBytes(tp, nb))
			}
		}
	})
}
