package quant

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestMatchesGGML decodes blocks that ggml itself quantized and compares
// every element with what ggml's own dequantize_row_* made of them, bit
// for bit: testdata/ggml holds, for each quantized type, two rows of 1024
// random normal values (every 97th one 4 times larger) as quantized by
// ggml_quantize_chunk (TYPE.blocks) and their dequantization by ggml
// (TYPE.f32, little-endian float32). They were written by
// scripts/ggml-xcheck.c against llama.cpp's libggml-base (node-llama-cpp's
// prebuilt linux-x64 build of llama.cpp, npm @node-llama-cpp/linux-x64
// 3.22.1): an implementation other than this package's, so a misread
// layout (a scale's bits, a quant's position) fails here even where this
// package's quantizer and decoder agree with each other.
func TestMatchesGGML(t *testing.T) {
	for _, typ := range []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS} {
		dir := filepath.Join("testdata", "ggml")
		blocks, err := os.ReadFile(filepath.Join(dir, typ.String()+".blocks"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, typ.String()+".f32"))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(raw)/4)
		for i := range want {
			want[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		if len(want) != 2048 {
			t.Fatalf("%v: %d values in the file, want 2048", typ, len(want))
		}
		got := make([]float32, len(want))
		if err := Dequantize(typ, got, blocks); err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		bad := 0
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				if bad < 3 {
					t.Errorf("%v: element %d (block %d) = %v, ggml says %v", typ, i, i/typ.BlockSize(), got[i], want[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%v: %d of %d elements differ from ggml's", typ, bad, len(want))
		}
	}
}
