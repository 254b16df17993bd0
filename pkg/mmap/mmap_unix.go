//go:build unix

package mmap

import (
	"fmt"
	"os"
	"syscall"
)

func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
