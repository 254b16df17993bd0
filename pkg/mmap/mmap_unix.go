//go:build unix

package mmap

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}

// Release tells the kernel that the pages of b, a part of a mapping, are
// not needed now: they leave the process's resident memory (a read-only
// file mapping reads them again from the file if they are touched).
func Release(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(syscall.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	first := start &^ (page - 1)
	end := (start + uintptr(len(b)) + page - 1) &^ (page - 1)
	syscall.Syscall(syscall.SYS_MADVISE, first, end-first, syscall.MADV_DONTNEED)
}
