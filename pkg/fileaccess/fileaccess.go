// Package fileaccess is how tgc reads and writes files that users and
// scripts name. Only regular files are read or written: a FIFO, a device
// node or a directory is refused before it is opened for real, so nothing
// blocks on a FIFO or writes into /dev/sda. Writes are atomic: the data
// goes to a temporary file in the target's folder, which is synced and
// renamed over the target, so a failed write never leaves half a file.
// A Policy confines the paths a script names to allowed folders.
package fileaccess

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Open opens a regular file for reading. The file is checked with stat
// first and opened non-blocking (a FIFO swapped in between cannot block),
// then checked again through the open descriptor.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: notRegular(st.Mode())}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fst, err := f.Stat()
	if err == nil && (!fst.Mode().IsRegular() || !os.SameFile(st, fst)) {
		err = &fs.PathError{Op: "open", Path: path, Err: errors.New("replaced while being opened")}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads a regular file of at most limit bytes (limit <= 0: any
// size).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if limit > 0 && st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, over the limit of %d", path, st.Size(), limit)
	}
	r := io.Reader(f)
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: over the limit of %d bytes", path, limit)
	}
	return data, nil
}

// WriteFile writes data to path atomically. A symbolic link is followed
// (its target is replaced, the link stays); an existing target that is not
// a regular file is refused; an existing file keeps its permissions, a new
// one gets perm.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	target, err := writeTarget(path)
	if err != nil {
		return err
	}
	if st, err := os.Stat(target); err == nil {
		perm = st.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), target)
}

// writeTarget is the file a write to path replaces: path, or the file a
// symbolic link at path points to. A target that exists must be regular.
func writeTarget(path string) (string, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return path, nil
	case err != nil:
		return "", err
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := filepath.EvalSymlinks(path)
		if errors.Is(err, fs.ErrNotExist) {
			return "", &fs.PathError{Op: "write", Path: path, Err: errors.New("a symbolic link to a missing file")}
		}
		if err != nil {
			return "", err
		}
		return writeTarget(target)
	case !st.Mode().IsRegular():
		return "", &fs.PathError{Op: "write", Path: path, Err: notRegular(st.Mode())}
	}
	return path, nil
}

// notRegular says what a file is instead of a regular file.
func notRegular(m fs.FileMode) error {
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory, not a regular file"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO, not a regular file"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		what = "a device node, not a regular file"
	case m&fs.ModeSocket != 0:
		what = "a socket, not a regular file"
	}
	return errors.New(what)
}
