package kcache

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestSealVerify: a sealed file verifies for its key only, and any change
// to its bytes (a flipped bit anywhere, a cut at any length) is caught.
func TestSealVerify(t *testing.T) {
	dir := t.TempDir()
	body := bytes.Repeat([]byte("\x7fELF object bytes "), 100)
	path := Path(dir, key)
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Verify(path, key); err == nil {
		t.Fatal("an unsealed file verified")
	}
	if err := Seal(path, key); err != nil {
		t.Fatal(err)
	}
	if err := Verify(path, key); err != nil {
		t.Fatalf("sealed file: %v", err)
	}
	if got, err := Lookup(dir, key); got != path || err != nil {
		t.Fatalf("Lookup: %q, %v", got, err)
	}
	other := strings.Repeat("f", 64)
	if err := Verify(path, other); err == nil || !strings.Contains(err.Error(), "another kernel") {
		t.Errorf("verified for another key: %v", err)
	}
	sealed, _ := os.ReadFile(path)
	for i := 0; i < len(sealed); i += 7 {
		data := bytes.Clone(sealed)
		data[i] ^= 0x10
		if check(data, key, path) == nil {
			t.Fatalf("a flipped bit at %d was not caught", i)
		}
	}
	for n := 0; n < len(sealed); n += 13 {
		if n >= trailerLen && check(sealed[:n], key, path) == nil {
			t.Fatalf("a cut at %d bytes was not caught", n)
		}
	}
	if got, err := Lookup(filepath.Join(dir, "missing"), key); got != "" || err != nil {
		t.Errorf("missing folder: %q, %v", got, err)
	}
}

// FuzzCheck: the trailer check never panics and accepts only what Seal
// writes for the key.
func FuzzCheck(f *testing.F) {
	f.Add([]byte("body"))
	f.Add([]byte(magic + key + strings.Repeat("0", 64)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < trailerLen {
			return
		}
		if check(data, key, "x") == nil {
			// Only a correct seal passes: recompute it.
			body := data[:len(data)-trailerLen]
			dir := t.TempDir()
			p := filepath.Join(dir, "o")
			os.WriteFile(p, body, 0o600)
			Seal(p, key)
			sealed, _ := os.ReadFile(p)
			if !bytes.Equal(sealed, data) {
				t.Fatalf("accepted a file Seal would not write")
			}
		}
	})
}

// TestStoreLoad: a stored object loads back byte for byte without its
// seal, leaves no build folder behind, and a missing entry is (nil, nil)
// while a damaged one is an error naming the file.
func TestStoreLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cuda")
	if got, err := Load(dir, key); got != nil || err != nil {
		t.Fatalf("missing entry: %q, %v", got, err)
	}
	obj := []byte("\x7fELF cubin\x00with a NUL inside\x00")
	if err := Store(dir, key, obj); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir, key)
	if err != nil || !bytes.Equal(got, obj) {
		t.Fatalf("Load: %q, %v; want %q", got, err, obj)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the cache, want the entry alone", len(ents))
	}
	path := Path(dir, key)
	data, _ := os.ReadFile(path)
	data[3] ^= 1
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(dir, key); got != nil || err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("damaged entry: %q, %v", got, err)
	}
	if err := Store(dir, key, obj); err != nil { // a rebuild replaces it
		t.Fatal(err)
	}
	if got, err := Load(dir, key); err != nil || !bytes.Equal(got, obj) {
		t.Errorf("after the rebuild: %q, %v", got, err)
	}
}
