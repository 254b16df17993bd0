// Package kcache is the on-disk cache of compiled kernel objects (shared
// libraries of the CPU device, CUBIN or PTX images of the CUDA device). An entry is addressed by a key (a hash of
// everything the object depends on) and is verified, not trusted, before
// it is loaded: each file ends in a trailer that records its key and the
// SHA-256 of the object, written when it was built. A missing, truncated,
// zeroed, swapped, non-regular or unreadable entry fails the check and is
// rebuilt; loading an unchecked file into the process could crash it
// (SIGBUS inside dlopen) or run another kernel's code.
//
// Entries are compiled in a private build-* folder and renamed into place,
// so concurrent processes never see half an entry. Each build folder holds
// a lock file its process keeps locked (flock) while it builds; folders
// left by killed processes are recognized by their free lock and removed.
// When the cache folder is not writable, objects are compiled into a
// private temporary folder and not kept.
package kcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Ext is the file extension of entries.
const Ext = ".so"

// magic starts the trailer: it marks the format version.
const magic = "\x00tgc-kcache-v1\x00\x00"

// trailerLen is the trailer's size: magic, key (hex), SHA-256 (hex).
const trailerLen = len(magic) + 64 + 64

// MaxSize bounds an entry read for verification; a larger file is not an
// object tgc wrote.
const MaxSize = 256 << 20

// StaleAge is how old a build folder must be before its lock is tried: a
// live process locks its folder microseconds after creating it.
const StaleAge = time.Minute

// Path is where the entry for key lives in dir.
func Path(dir, key string) string { return filepath.Join(dir, key+Ext) }

// Lookup returns the path of the verified entry for key in dir. A missing
// entry is ("", nil); an entry that fails verification is ("", err) with
// err naming the file and what is wrong with it.
func Lookup(dir, key string) (string, error) {
	path := Path(dir, key)
	if err := Verify(path, key); err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "", nil
		}
		return "", err
	}
	return path, nil
}

// Verify checks that path is a regular file sealed for key whose content
// matches its recorded digest. It never blocks on a FIFO or device: the
// file is inspected with lstat before it is opened, opened non-blocking
// without following a symlink, and checked again once open.
func Verify(path, key string) error {
	_, err := read(path, key)
	return err
}

// Load returns the object of the verified entry for key in dir, without
// its seal: (nil, nil) when there is none, an error naming the file when
// it fails verification (the caller rebuilds it).
func Load(dir, key string) ([]byte, error) {
	data, err := read(Path(dir, key), key)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return data[:len(data)-trailerLen], nil
}

// Store writes obj as the entry for key in dir, atomically (built in a
// build folder, sealed, renamed into place). A cache that cannot be
// written keeps nothing: the reason is returned.
func Store(dir, key string, obj []byte) error {
	b, reason := NewBuild(dir)
	if b == nil {
		return reason
	}
	defer b.Close()
	if b.Private {
		return reason
	}
	if err := os.WriteFile(filepath.Join(b.Dir, "object"), obj, 0o600); err != nil {
		return err
	}
	_, err := b.Commit("object", key)
	return err
}

// read returns the sealed file at path (object and seal) once verified.
func read(path, key string) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, kind(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fst.Mode().IsRegular() || !os.SameFile(st, fst) {
		return nil, fmt.Errorf("%s: replaced while being checked", path)
	}
	if fst.Size() < int64(trailerLen) || fst.Size() > MaxSize {
		return nil, fmt.Errorf("%s: %d bytes, not a sealed kernel object (truncated?)", path, fst.Size())
	}
	data := make([]byte, fst.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, check(data, key, path)
}

// check verifies a sealed object's trailer and digest.
func check(data []byte, key, path string) error {
	body, tr := data[:len(data)-trailerLen], data[len(data)-trailerLen:]
	if !bytes.HasPrefix(tr, []byte(magic)) {
		return fmt.Errorf("%s: no tgc seal at its end (truncated, or not written by this tgc)", path)
	}
	gotKey, gotSum := string(tr[len(magic):len(magic)+64]), string(tr[len(magic)+64:])
	if gotKey != key {
		return fmt.Errorf("%s: sealed for another kernel (%.12s…), a swapped file", path, gotKey)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != gotSum {
		return fmt.Errorf("%s: content does not match the digest recorded when it was built (corrupted)", path)
	}
	return nil
}

// Seal appends the trailer for key to the object file at path. Loaders
// ignore bytes after the last section an ELF file's headers name.
func Seal(path, key string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(magic + key + hex.EncodeToString(sum[:]))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// Build is an object being built: Dir is an empty folder to compile into.
// Commit seals the object and moves it into the cache; Close releases the
// folder (call it once the object is loaded: a loaded object's file may go).
type Build struct {
	Dir string
	// Private is set when the object cannot be kept: the cache is not
	// writable, so Dir is a private temporary folder.
	Private bool
	cache   string
	lock    *os.File
}

// NewBuild makes a build folder in the cache folder dir (created if
// missing), or, when dir cannot be written, a private temporary one: then
// err is the reason (the caller warns), and b is still usable.
func NewBuild(dir string) (b *Build, reason error) {
	b, reason = newShared(dir)
	if reason == nil {
		return b, nil
	}
	tmp, err := os.MkdirTemp("", "tgc-build-")
	if err != nil {
		return nil, fmt.Errorf("kernel cache %s is not writable (%v), nor is the temporary folder: %w", dir, reason, err)
	}
	return &Build{Dir: tmp, Private: true}, reason
}

func newShared(dir string) (*Build, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(tmp, "lock"), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		if err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &Build{Dir: tmp, cache: dir, lock: lock}, nil
}

// Commit seals the object Dir/name for key and renames it into the cache.
// It returns the path to load: the cache entry, or, when the object could
// not be kept (private build, or the rename failed), the object in Dir
// (with the reason in err; the path is still good to load until Close).
func (b *Build) Commit(name, key string) (string, error) {
	obj := filepath.Join(b.Dir, name)
	if b.Private {
		return obj, nil
	}
	if err := Seal(obj, key); err != nil {
		return obj, err
	}
	dst := Path(b.cache, key)
	if err := os.Rename(obj, dst); err != nil {
		return obj, err
	}
	return dst, nil
}

// Close removes the build folder.
func (b *Build) Close() {
	os.RemoveAll(b.Dir)
	if b.lock != nil {
		b.lock.Close() // after the removal: the lock guards the folder until it is gone
	}
}

// CleanStale removes the build folders in dir left by processes that died
// while building (their lock is free), and reports how many it removed.
// Folders younger than StaleAge are left alone whatever their lock says:
// their process may not have locked them yet.
func CleanStale(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "build-") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if st, err := e.Info(); err != nil || time.Since(st.ModTime()) < StaleAge {
			continue
		}
		lock, err := os.OpenFile(filepath.Join(path, "lock"), os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// A folder without a lock: an older tgc's, or one whose
			// process died before locking it (over a minute ago).
		case err != nil:
			continue
		default:
			err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err != nil { // a live process holds it
				lock.Close()
				continue
			}
		}
		if os.RemoveAll(path) == nil {
			n++
		}
		if lock != nil {
			lock.Close()
		}
	}
	return n
}

// kind names a non-regular file mode.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device node"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}
