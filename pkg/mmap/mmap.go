// Package mmap maps model files read-only into memory, so that their tensor
// data is read in place instead of being copied onto the Go heap. Where
// mapping is not available the file is read into memory once.
package mmap

import (
	"errors"
	"fmt"
	"math"
	"os"

	"tgc/pkg/fileaccess"
)

// Map returns the contents of the regular file at path and a function that
// releases them. The bytes must not be written, and not be used after
// release. The file is opened the way fileaccess opens files: a FIFO or a
// device is refused without blocking.
func Map(path string) ([]byte, func() error, error) {
	f, err := fileaccess.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return MapFile(f)
}

// MapFile is Map for a file already open (through a script's file access
// policy); f may be closed once it returns.
func MapFile(f *os.File) ([]byte, func() error, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, errors.New("not a regular file")
	}
	size := fi.Size()
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("file of %d bytes is too large for this platform", size)
	}
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	return mapFile(f, int(size))
}
