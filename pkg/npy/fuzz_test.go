package npy

import (
	"os"
	"testing"
)

func readRaw(p string) ([]byte, error) { return os.ReadFile(p) }

// FuzzDecode: Decode never panics, and what it accepts has as many bytes
// as its shape and dtype say, and survives Encode and Decode.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"float32", "fortran", "bigendian", "scalar", "empty"} {
		if b, err := os.ReadFile("testdata/" + name + ".npy"); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Decode(b)
		if err != nil {
			return
		}
		n := Size(a.DType)
		for _, d := range a.Shape {
			n *= d
		}
		if n != len(a.Data) {
			t.Fatalf("%s %v with %d bytes", a.DType, a.Shape, len(a.Data))
		}
		enc, err := Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(enc); err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
	})
}
