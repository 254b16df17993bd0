package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tgc/pkg/quant"
)

// raw assembles a file field by field, independently of the writer.
type raw struct{ b []byte }

func (r *raw) u32(v uint32) *raw    { r.b = binary.LittleEndian.AppendUint32(r.b, v); return r }
func (r *raw) u64(v uint64) *raw    { r.b = binary.LittleEndian.AppendUint64(r.b, v); return r }
func (r *raw) str(s string) *raw    { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }
func (r *raw) bytes(p ...byte) *raw { r.b = append(r.b, p...); return r }
func (r *raw) pad(a int) *raw {
	for len(r.b)%a != 0 {
		r.b = append(r.b, 0)
	}
	return r
}

// handMade is a version 3 file with three metadata entries (a string, a
// uint16 array and a nested array) and two tensors, F32 [3] and Q8_0 [32, 2].
func handMade() []byte {
	r := &raw{}
	r.bytes('G', 'G', 'U', 'F').u32(3).u64(2).u64(3)
	r.str("general.architecture").u32(uint32(TypeString)).str("llama")
	r.str("a.u16").u32(uint32(TypeArray)).u32(uint32(TypeUint16)).u64(2).bytes(1, 0, 0xff, 0xff)
	r.str("a.nested").u32(uint32(TypeArray)).u32(uint32(TypeArray)).u64(2).
		u32(uint32(TypeString)).u64(1).str("x").
		u32(uint32(TypeInt8)).u64(3).bytes(0xff, 0, 1)
	r.str("x").u32(1).u64(3).u32(uint32(quant.F32)).u64(0)
	r.str("q").u32(2).u64(32).u64(2).u32(uint32(quant.Q8_0)).u64(32)
	r.pad(32)
	r.u32(math.Float32bits(1)).u32(math.Float32bits(-2)).u32(math.Float32bits(0.5))
	r.pad(32)
	for blk := range 2 {
		r.bytes(0x00, 0x3C) // d = 1
		for i := range 32 {
			r.bytes(byte(blk*32 + i))
		}
	}
	return r.b
}

func TestParseHandMade(t *testing.T) {
	b := handMade()
	f, err := Parse("hand.gguf", b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 32 || f.DataOffset%32 != 0 {
		t.Errorf("version %d, alignment %d, data offset %d", f.Version, f.Alignment, f.DataOffset)
	}
	if s, err := f.GetString("general.architecture"); err != nil || s != "llama" {
		t.Errorf("architecture = %q, %v", s, err)
	}
	if v, _ := f.Lookup("a.u16"); !reflect.DeepEqual(v.Data, Array{TypeUint16, []uint16{1, 0xffff}}) {
		t.Errorf("a.u16 = %#v", v)
	}
	want := Array{TypeArray, []Array{{TypeString, []string{"x"}}, {TypeInt8, []int8{-1, 0, 1}}}}
	if v, _ := f.Lookup("a.nested"); !reflect.DeepEqual(v.Data, want) {
		t.Errorf("a.nested = %#v", v)
	}
	x, ok := f.Tensor("x")
	if !ok || !reflect.DeepEqual(x.Shape(), []int{3}) || x.Type != quant.F32 || x.Offset != f.DataOffset {
		t.Fatalf("x = %+v", x)
	}
	got := make([]float32, 3)
	if err := quant.Dequantize(x.Type, got, x.Data); err != nil || !reflect.DeepEqual(got, []float32{1, -2, 0.5}) {
		t.Errorf("x = %v, %v", got, err)
	}
	q, _ := f.Tensor("q")
	if !reflect.DeepEqual(q.Shape(), []int{2, 32}) || q.Offset != f.DataOffset+32 || len(q.Data) != 68 {
		t.Fatalf("q: shape %v, offset %d, %d bytes", q.Shape(), q.Offset, len(q.Data))
	}
	got = make([]float32, 64)
	quant.Dequantize(q.Type, got, q.Data)
	if got[33] != 33 || got[63] != 63 {
		t.Errorf("q = %v", got)
	}
	if &q.Data[0] != &b[q.Offset] {
		t.Error("tensor data was copied, not read in place")
	}
}

// everyValue has one metadata entry of every type, arrays of every element
// type, and arrays of arrays two deep.
func everyValue() []KV {
	return []KV{
		{"general.architecture", String("llama")},
		{"u8", Uint8(200)}, {"i8", Int8(-100)}, {"u16", Uint16(60000)}, {"i16", Int16(-30000)},
		{"u32", Uint32(4e9)}, {"i32", Int32(-2e9)}, {"f32", Float32(1.5)}, {"bool", Bool(true)},
		{"str", String("héllo\x00")}, {"u64", Uint64(1 << 63)}, {"i64", Int64(-1 << 62)}, {"f64", Float64(-0.1)},
		{"a.u8", ArrayOf([]uint8{1, 2})}, {"a.i8", ArrayOf([]int8{-1})}, {"a.u16", ArrayOf([]uint16{7})},
		{"a.i16", ArrayOf([]int16{-7})}, {"a.u32", ArrayOf([]uint32{9})}, {"a.i32", ArrayOf([]int32{-9, 3})},
		{"a.f32", ArrayOf([]float32{0.25})}, {"a.bool", ArrayOf([]bool{true, false})},
		{"a.str", ArrayOf([]string{"", "a", "▁b"})}, {"a.u64", ArrayOf([]uint64{1})},
		{"a.i64", ArrayOf([]int64{-1})}, {"a.f64", ArrayOf([]float64{2.5})}, {"a.empty", ArrayOf([]int32{})},
		{"a.nested", ArrayOf([]Array{
			{TypeString, []string{"x", "y"}},
			{TypeArray, []Array{{TypeFloat32, []float32{1}}, {TypeBool, []bool{}}}},
		})},
	}
}

// randomTensors returns one tensor of every supported type, 2 rows each.
func randomTensors(rng *rand.Rand) []Tensor {
	var ts []Tensor
	for _, typ := range quant.SupportedTypes() {
		n := max(typ.BlockSize(), 3)
		x := make([]float32, 2*n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		data, err := quant.Quantize(typ, x)
		if err != nil {
			panic(err)
		}
		ts = append(ts, Tensor{Name: "t." + typ.String(), Dims: []int64{int64(n), 2}, Type: typ, Data: data})
	}
	ts = append(ts, Tensor{Name: "empty", Dims: []int64{0, 4}, Type: quant.F32})
	ts = append(ts, Tensor{Name: "scalar", Dims: []int64{}, Type: quant.F32, Data: []byte{0, 0, 0x80, 0x3f}})
	return ts
}

func TestWriteOpenRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		version uint32
		align   uint32 // 0: default
	}{{3, 0}, {2, 0}, {3, 64}, {3, 8}} {
		md := everyValue()
		if tc.align != 0 {
			md = append(md, KV{AlignmentKey, Uint32(tc.align)})
		}
		tensors := randomTensors(rng)
		path := filepath.Join(t.TempDir(), "m.gguf")
		var buf bytes.Buffer
		if err := Write(&buf, tc.version, md, tensors); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		align := int64(tc.align)
		if align == 0 {
			align = DefaultAlignment
		}
		if f.Version != tc.version || int64(f.Alignment) != align {
			t.Errorf("version %d alignment %d, want %d %d", f.Version, f.Alignment, tc.version, align)
		}
		if len(f.Metadata) != len(md) {
			t.Fatalf("%d metadata entries, want %d", len(f.Metadata), len(md))
		}
		for i, kv := range md {
			if !reflect.DeepEqual(f.Metadata[i], kv) {
				t.Errorf("metadata %d = %#v, want %#v", i, f.Metadata[i], kv)
			}
		}
		for i, want := range tensors {
			got := f.Tensors[i]
			if got.Name != want.Name || got.Type != want.Type || !reflect.DeepEqual(got.Dims, want.Dims) ||
				!bytes.Equal(got.Data, want.Data) {
				t.Errorf("tensor %d = %s %v %v (%d bytes), want %s %v %v (%d bytes)", i,
					got.Name, got.Type, got.Dims, len(got.Data), want.Name, want.Type, want.Dims, len(want.Data))
			}
			if got.Offset%align != 0 {
				t.Errorf("tensor %q at offset %d, not aligned to %d", got.Name, got.Offset, align)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := WriteFile(path, everyValue(), randomTensors(rand.New(rand.NewPCG(1, 1)))); err != nil {
		t.Fatal(err)
	}
	bad := []Tensor{{Name: "x", Dims: []int64{2}, Type: quant.F32, Data: []byte{1}}}
	if err := WriteFile(path, nil, bad); err == nil || !strings.Contains(err.Error(), "data is 1 bytes, but F32[2] needs 8") {
		t.Errorf("WriteFile with short data: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want 1", len(entries))
	}
	f, err := Open(path)
	if err != nil {
		t.Fatalf("the failed write damaged the file: %v", err)
	}
	f.Close()
}

func TestGetters(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, 3, everyValue(), nil); err != nil {
		t.Fatal(err)
	}
	f, err := Parse("m.gguf", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.GetInt("u16"); n != 60000 || err != nil {
		t.Errorf("GetInt(u16) = %d, %v", n, err)
	}
	if n, err := f.GetInt("i8"); n != -100 || err != nil {
		t.Errorf("GetInt(i8) = %d, %v", n, err)
	}
	if x, err := f.GetFloat("f32"); x != 1.5 || err != nil {
		t.Errorf("GetFloat(f32) = %v, %v", x, err)
	}
	if b, err := f.GetBool("bool"); !b || err != nil {
		t.Errorf("GetBool = %v, %v", b, err)
	}
	if s, err := f.GetStrings("a.str"); !reflect.DeepEqual(s, []string{"", "a", "▁b"}) || err != nil {
		t.Errorf("GetStrings = %q, %v", s, err)
	}
	if s, err := f.GetFloat32s("a.f32"); !reflect.DeepEqual(s, []float32{0.25}) || err != nil {
		t.Errorf("GetFloat32s = %v, %v", s, err)
	}
	if s, err := f.GetInts("a.i32"); !reflect.DeepEqual(s, []int64{-9, 3}) || err != nil {
		t.Errorf("GetInts = %v, %v", s, err)
	}
	for _, tc := range []struct {
		get  func() error
		want string
	}{
		{func() error { _, err := f.GetInt("u64"); return err }, `gguf: m.gguf: metadata "u64": has type uint64, want an integer`},
		{func() error { _, err := f.GetString("nope"); return err }, `gguf: m.gguf: metadata "nope": missing`},
		{func() error { _, err := f.GetFloat("str"); return err }, `metadata "str": has type string, want a float`},
		{func() error { _, err := f.GetStrings("a.i32"); return err }, `metadata "a.i32": has type array of int32, want array of string`},
		{func() error { _, err := f.GetInts("a.f32"); return err }, `has type array of float32, want array of integers`},
		{func() error { _, err := f.GetFloat32s("str"); return err }, `has type string, want array of float32`},
	} {
		if err := tc.get(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	if _, err := f.GetInt("nope"); !errorsIsMissing(err) {
		t.Errorf("missing key error %v does not wrap ErrMissing", err)
	}
}

func errorsIsMissing(err error) bool {
	return err != nil && strings.Contains(err.Error(), ErrMissing.Error())
}

// TestErrors: every malformed file gets one line naming the file and the
// field, and nothing is allocated from an unchecked count.
func TestErrors(t *testing.T) {
	header := func(nt, nkv uint64) *raw { return (&raw{}).bytes('G', 'G', 'U', 'F').u32(3).u64(nt).u64(nkv) }
	tensorFile := func(typ uint32, dims []uint64, off uint64, data int) []byte {
		r := header(1, 0)
		r.str("w").u32(uint32(len(dims)))
		for _, d := range dims {
			r.u64(d)
		}
		r.u32(typ).u64(off).pad(32)
		r.b = append(r.b, make([]byte, data)...)
		return r.b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "header magic: truncated"},
		{"magic", []byte("PK\x03\x04rest of a zip"), `header: magic is "PK\x03\x04", not "GGUF"`},
		{"v1", (&raw{}).bytes('G', 'G', 'U', 'F').u32(1).b, "GGUF version 1 is not supported"},
		{"v4", (&raw{}).bytes('G', 'G', 'U', 'F').u32(4).b, "GGUF version 4 is not supported"},
		{"big-endian", (&raw{}).bytes('G', 'G', 'U', 'F').u32(3 << 24).b, "big-endian GGUF files are not supported"},
		{"huge tensor count", header(1<<62, 0).b, "header tensor_count is 4611686018427387904, but the 8 bytes left in the file hold at most 0"},
		{"huge kv count", header(0, 1<<40).b, "header metadata_kv_count is 1099511627776"},
		{"huge string", header(0, 1).str("k").u32(uint32(TypeString)).u64(1 << 60).b, `metadata[0] "k": truncated: needs 1152921504606846976 bytes`},
		{"huge array", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint8)).u64(1 << 62).b, `metadata[0] "k" array length is 4611686018427387904`},
		{"huge string array", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(3).u64(0).u64(0).b, `array length is 3, but the 16 bytes left in the file hold at most 2`},
		{"bad value type", header(0, 1).str("k").u32(13).b, `metadata[0] "k": unknown value type 13`},
		{"bad array type", header(0, 1).str("k").u32(uint32(TypeArray)).u32(77).u64(0).b, `unknown array element type 77`},
		{"bool", header(0, 1).str("k").u32(uint32(TypeBool)).bytes(2).b, `metadata[0] "k": bool byte is 2`},
		{"duplicate key", header(0, 2).str("k").u32(uint32(TypeUint8)).bytes(1).str("k").u32(uint32(TypeUint8)).bytes(1).b, `metadata[1] "k": duplicate key`},
		{"alignment type", header(0, 1).str(AlignmentKey).u32(uint32(TypeUint64)).u64(32).b, `"general.alignment": has type uint64, want uint32`},
		{"alignment value", header(0, 1).str(AlignmentKey).u32(uint32(TypeUint32)).u32(24).b, `"general.alignment": 24 is not a power of two`},
		{"nesting", nested(20), "arrays nested more than 16 deep"},
		{"unsupported type", tensorFile(17, []uint64{256}, 0, 74), `tensor_infos[0] "w": tensor type IQ2_XS (17) is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)`},
		{"unknown type", tensorFile(99, []uint64{1}, 0, 4), `tensor_infos[0] "w": unknown tensor type 99 (supported: F32`},
		{"five dims", tensorFile(0, []uint64{1, 1, 1, 1, 1}, 0, 4), "5 dimensions, at most 4 are allowed"},
		{"partial block", tensorFile(uint32(quant.Q4_K), []uint64{128, 2}, 0, 144), "a row of 128 elements is not a whole number of Q4_K blocks of 256"},
		{"dims overflow", tensorFile(0, []uint64{1 << 40, 1 << 40}, 0, 4), `dims[1] = 1099511627776 overflows the element count`},
		{"data past end", tensorFile(0, []uint64{4, 2}, 0, 31), `tensor "w": data [0, 32) ends past the end of the file (the data section has 31 bytes)`},
		{"offset past end", tensorFile(0, []uint64{1}, 1<<40, 4), `data [1099511627776, 1099511627780) ends past the end of the file`},
		{"unaligned offset", tensorFile(0, []uint64{1}, 4, 8), "data offset 4 is not a multiple of the alignment 32"},
		{"overlap", overlapping(), `tensor "b": data at file offset 128 overlaps tensor "a"`},
		{"duplicate tensor", duplicateTensor(), `tensor_infos[1] "a": duplicate tensor name`},
	} {
		_, err := Parse("bad.gguf", tc.b)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "gguf: bad.gguf: ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q, want one line containing %q", tc.name, msg, tc.want)
		}
	}
}

func nested(depth int) []byte {
	r := (&raw{}).bytes('G', 'G', 'U', 'F').u32(3).u64(0).u64(1).str("k").u32(uint32(TypeArray))
	for range depth {
		r.u32(uint32(TypeArray)).u64(1)
	}
	return r.u32(uint32(TypeUint8)).u64(0).b
}

func overlapping() []byte {
	r := (&raw{}).bytes('G', 'G', 'U', 'F').u32(3).u64(2).u64(0)
	r.str("a").u32(1).u64(16).u32(0).u64(0)
	r.str("b").u32(1).u64(1).u32(0).u64(32)
	r.pad(32)
	r.b = append(r.b, make([]byte, 64)...)
	return r.b
}

func duplicateTensor() []byte {
	r := (&raw{}).bytes('G', 'G', 'U', 'F').u32(3).u64(2).u64(0)
	r.str("a").u32(1).u64(1).u32(0).u64(0)
	r.str("a").u32(1).u64(1).u32(0).u64(32)
	r.pad(32)
	r.b = append(r.b, make([]byte, 64)...)
	return r.b
}

// TestTruncated cuts a valid file at every length: each prefix is refused
// with an error (an empty trailing tensor aside, none can parse), and none
// panics.
func TestTruncated(t *testing.T) {
	b := handMade()
	for n := range len(b) {
		if _, err := Parse("cut.gguf", b[:n]); err == nil {
			t.Fatalf("a file cut to %d of %d bytes parsed", n, len(b))
		} else if !strings.HasPrefix(err.Error(), "gguf: cut.gguf: ") {
			t.Fatalf("error %q does not name the file", err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "none.gguf")); err == nil || !strings.Contains(err.Error(), "none.gguf") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), "empty.gguf: header magic: truncated") {
		t.Errorf("empty file: %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	for _, tc := range []struct {
		md      []KV
		tensors []Tensor
		want    string
	}{
		{[]KV{{"k", Value{TypeUint32, "x"}}}, nil, `metadata "k": value of type uint32 holds string`},
		{[]KV{{"k", Value{TypeArray, Array{TypeInt8, []uint8{1}}}}}, nil, "array of int8 holds []uint8"},
		{[]KV{{"k", Uint8(1)}, {"k", Uint8(1)}}, nil, "duplicate key"},
		{[]KV{{AlignmentKey, Uint32(3)}}, nil, "must be a uint32 power of two"},
		{nil, []Tensor{{Name: "x", Dims: []int64{256}, Type: 17, Data: make([]byte, 74)}}, "IQ2_XS is not a supported type"},
		{nil, []Tensor{{Name: "x", Dims: []int64{16}, Type: quant.Q4_0, Data: make([]byte, 9)}}, "not a whole number of Q4_0 blocks"},
		{nil, []Tensor{{Name: "", Dims: []int64{}, Type: quant.F32, Data: make([]byte, 4)}}, "empty name"},
	} {
		var buf bytes.Buffer
		err := Write(&buf, 3, tc.md, tc.tensors)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Write: %v, want %q", err, tc.want)
		}
		if buf.Len() != 0 {
			t.Errorf("Write wrote %d bytes before failing", buf.Len())
		}
	}
}
