package safetensors

import (
	"bytes"
	"testing"
)

// FuzzDecode checks that Decode never panics on arbitrary input, and that
// whatever it accepts is consistent and survives an Encode/Decode round trip.
// Seeds live in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(raw(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, "\x00\x00\x80\x3f\x00\x00\x00\x40"))
	f.Add(raw(`{"__metadata__":{"k":"v"}}`, ""))
	f.Fuzz(func(t *testing.T, b []byte) {
		tensors, md, err := Decode(b)
		if err != nil {
			return
		}
		// Accepted files tile the buffer in offset order.
		n := 0
		for _, tn := range tensors {
			n += len(tn.Data)
		}
		hdrEnd := len(b) - n
		if hdrEnd < 8 {
			t.Fatalf("tensors hold %d bytes of a %d-byte file", n, len(b))
		}
		pos := hdrEnd
		for _, tn := range tensors {
			if len(tn.Data) > 0 && &tn.Data[0] != &b[pos] {
				t.Fatalf("tensor %q is not at offset %d", tn.Name, pos-hdrEnd)
			}
			pos += len(tn.Data)
		}

		enc, err := Encode(tensors, md)
		if err != nil {
			t.Fatalf("Encode rejected decoded tensors: %v", err)
		}
		tensors2, md2, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode rejected Encode output: %v\n%q", err, enc)
		}
		equalTensors(t, tensors2, tensors)
		equalMetadata(t, md2, md) // an empty __metadata__ may become absent
		enc2, err := Encode(tensors2, md2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding is not stable: %v", err)
		}
	})
}
