package mmap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	want := strings.Repeat("tgc", 5000)
	os.WriteFile(path, []byte(want), 0o644)
	b, release, err := Map(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Error("mapped bytes differ from the file")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}

	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	if b, release, err := Map(empty); err != nil || len(b) != 0 {
		t.Errorf("empty file: %d bytes, %v", len(b), err)
	} else {
		release()
	}
	if _, _, err := Map(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	if _, _, err := Map(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file mapped")
	}
}
