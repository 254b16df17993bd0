package gguf

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// FuzzParse checks that Parse never panics, that what it accepts lies inside
// the input and is aligned, and that writing it back and parsing again gives
// the same file. Seeds live in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add(handMade())
	var buf bytes.Buffer
	if err := Write(&buf, 2, everyValue()[:6], randomTensors(rand.New(rand.NewPCG(5, 6)))[:3]); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse("fuzz.gguf", b)
		if err != nil {
			return
		}
		for _, tn := range file.Tensors {
			if len(tn.Data) == 0 {
				continue
			}
			if tn.Offset%int64(file.Alignment) != 0 || tn.Offset < file.DataOffset {
				t.Fatalf("tensor %q at offset %d", tn.Name, tn.Offset)
			}
			if &tn.Data[0] != &b[tn.Offset] {
				t.Fatalf("tensor %q does not alias the input", tn.Name)
			}
		}
		var enc bytes.Buffer
		if err := Write(&enc, file.Version, file.Metadata, file.Tensors); err != nil {
			t.Fatalf("Write rejected a parsed file: %v", err)
		}
		again, err := Parse("again.gguf", enc.Bytes())
		if err != nil {
			t.Fatalf("Parse rejected Write's output: %v", err)
		}
		for i := range file.Tensors {
			if !bytes.Equal(again.Tensors[i].Data, file.Tensors[i].Data) {
				t.Fatalf("tensor %q changed in the round trip", file.Tensors[i].Name)
			}
		}
		var enc2 bytes.Buffer
		if err := Write(&enc2, again.Version, again.Metadata, again.Tensors); err != nil || !bytes.Equal(enc.Bytes(), enc2.Bytes()) {
			t.Fatalf("re-encoding is not stable: %v", err)
		}
	})
}
