//go:build !unix

package mmap

import (
	"io"
	"os"
)

func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}

// Release does nothing where files are read into memory: the bytes are
// the Go heap's.
func Release(b []byte) {}
