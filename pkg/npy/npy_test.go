package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"testing"
)

// value reads element i as a float64 (enough for the small test values).
func value(a *Array, i int) float64 {
	d := a.Data
	switch a.DType {
	case "bool", "uint8":
		return float64(d[i])
	case "int8":
		return float64(int8(d[i]))
	case "int16":
		return float64(int16(binary.LittleEndian.Uint16(d[2*i:])))
	case "uint16":
		return float64(binary.LittleEndian.Uint16(d[2*i:]))
	case "int32":
		return float64(int32(binary.LittleEndian.Uint32(d[4*i:])))
	case "uint32":
		return float64(binary.LittleEndian.Uint32(d[4*i:]))
	case "int64":
		return float64(int64(binary.LittleEndian.Uint64(d[8*i:])))
	case "uint64":
		return float64(binary.LittleEndian.Uint64(d[8*i:]))
	case "float16": // small integers only: exponent and 10-bit mantissa
		h := binary.LittleEndian.Uint16(d[2*i:])
		if h == 0 {
			return 0
		}
		e := int(h>>10&31) - 15
		return math.Ldexp(1+float64(h&1023)/1024, e)
	case "float32":
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:])))
	case "float64":
		return math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:]))
	}
	panic(a.DType)
}

// The files are numpy's own output (testdata/gen.py).
func TestReadNumpyFiles(t *testing.T) {
	for _, dt := range []string{"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"} {
		a, err := ReadFile(filepath.Join("testdata", dt+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		wantShape := []int{2, 3}
		if dt == "bool" {
			wantShape = []int{6}
		}
		if a.DType != dt || !slices.Equal(a.Shape, wantShape) {
			t.Fatalf("%s: got %s %v", dt, a.DType, a.Shape)
		}
		for i := range 6 {
			want := float64(i)
			if dt == "bool" {
				want = float64(i % 2)
			}
			if got := value(a, i); got != want {
				t.Errorf("%s[%d] = %g, want %g", dt, i, got, want)
			}
		}
	}
}

func TestLayouts(t *testing.T) {
	a, err := ReadFile("testdata/fortran.npy")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 24 { // C order after reading: arange again
		if value(a, i) != float64(i) {
			t.Fatalf("fortran element %d = %g", i, value(a, i))
		}
	}
	b, err := ReadFile("testdata/bigendian.npy")
	if err != nil {
		t.Fatal(err)
	}
	if b.DType != "int32" || !slices.Equal(b.Shape, []int{3, 2}) || value(b, 5) != 5 {
		t.Fatalf("big-endian: %s %v %g", b.DType, b.Shape, value(b, 5))
	}
	s, err := ReadFile("testdata/scalar.npy")
	if err != nil || len(s.Shape) != 0 || value(s, 0) != 7.5 {
		t.Fatalf("scalar: %v %v", s, err)
	}
	e, err := ReadFile("testdata/empty.npy")
	if err != nil || !slices.Equal(e.Shape, []int{0, 3}) || len(e.Data) != 0 {
		t.Fatalf("empty: %v %v", e, err)
	}
}

// Encode writes what numpy writes: the same bytes for the same array.
func TestEncodeMatchesNumpy(t *testing.T) {
	for _, name := range []string{"float32", "int64", "uint8", "scalar", "empty", "bool"} {
		raw := mustRead(t, "testdata/"+name+".npy")
		a, err := Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, raw) {
			t.Errorf("%s: encoded\n%q\nnumpy wrote\n%q", name, enc[:min(len(enc), 80)], raw[:min(len(raw), 80)])
		}
	}
}

func TestBadFiles(t *testing.T) {
	good := mustRead(t, "testdata/float32.npy")
	cases := map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("xNUMPY"), good[6:]...),
		"truncated": good[:len(good)-1],
		"extra":     append(slices.Clone(good), 0),
		"header":    good[:20],
	}
	for name, b := range cases {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	hdr := func(h string) []byte {
		b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), 0)
		return append(b, h...)
	}
	for _, h := range []string{
		"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
		"{'descr': '<f4', 'fortran_order': False, 'shape': (99999, 99999, 99999), }",
		"{'descr': '<f4', 'shape': (1,), }",
		"{'descr': '<f4', 'fortran_order': maybe, 'shape': (1,), }",
	} {
		if _, err := Decode(hdr(h)); err == nil {
			t.Errorf("%s: no error", h)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	a, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	_ = a
	b, err := readRaw(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
