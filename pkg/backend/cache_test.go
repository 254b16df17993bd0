package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"tgc/pkg/backend/kcache"
)

// addN is a kernel that adds n to each element; tag makes its source (and
// so its cache key) unique to a test case.
func addN(n int, tag string) string {
	return fmt.Sprintf(`#include <stdint.h>
void add_n(void **bufs, const int64_t *vars, int64_t start, int64_t end) {
  float *o = (float *)bufs[0];
  for (int64_t i = start; i < end; i++) o[i] += %d.0f;
}
/* %s */
`, n, tag)
}

// runAddN calls add_n of lib on a buffer of zeros and returns the result.
func runAddN(t *testing.T, lib *library) []float32 {
	t.Helper()
	sym, err := purego.Dlsym(lib.handle, "add_n")
	if err != nil {
		t.Fatalf("add_n not found in %s: %v", lib.path, err)
	}
	buf := make([]float32, 8)
	ptrs := []uintptr{uintptr(unsafe.Pointer(&buf[0]))}
	vars := []int64{0}
	purego.SyscallN(sym, uintptr(unsafe.Pointer(&ptrs[0])), uintptr(unsafe.Pointer(&vars[0])), 0, uintptr(len(buf)))
	return buf
}

func (d *cpuDevice) cachePath(src string) string {
	return kcache.Path(filepath.Join(d.cacheRoot(), "kernels"), d.cacheKey(src))
}

// store builds the cache entry of src without loading it into this
// process (a loaded path would be served from the loader's own list).
func store(t *testing.T, d *cpuDevice, src string) string {
	t.Helper()
	dir := filepath.Join(CacheDir(), "kernels")
	path, b, stored, err := d.compile(src, dir, d.cacheKey(src), true)
	if err != nil || stored != nil {
		t.Fatal(err, stored)
	}
	b.Close()
	if path != d.cachePath(src) {
		t.Fatalf("entry stored at %s, want %s", path, d.cachePath(src))
	}
	return path
}

// buildWithin runs d.build, failing the test if it does not return in
// time (a FIFO opened for reading blocks forever).
func buildWithin(t *testing.T, d *cpuDevice, src string) (*library, error) {
	t.Helper()
	type result struct {
		lib *library
		err error
	}
	done := make(chan result, 1)
	go func() {
		lib, err := d.build(src)
		done <- result{lib, err}
	}()
	select {
	case r := <-done:
		return r.lib, r.err
	case <-time.After(60 * time.Second):
		t.Fatal("build hangs on the cache entry")
	}
	return nil, nil
}

// TestCacheEntriesAreVerified: every way a cache entry can be damaged or
// replaced (issue 9 rows 1-3) ends in a rebuilt, correct kernel and one
// warning naming the file — never a crash inside dlopen, a hang or the
// wrong kernel's result.
func TestCacheEntriesAreVerified(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, d *cpuDevice, path string)
		want   string // in the warning
	}{
		{"truncated", func(t *testing.T, _ *cpuDevice, path string) {
			st, _ := os.Stat(path)
			if err := os.Truncate(path, st.Size()*3/4); err != nil {
				t.Fatal(err)
			}
		}, "no tgc seal"},
		{"zeroed middle", func(t *testing.T, _ *cpuDevice, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(make([]byte, 4096), 4096); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}, "does not match the digest"},
		{"swapped", func(t *testing.T, d *cpuDevice, path string) {
			other := store(t, d, addN(7, "swapped: the other kernel"))
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, "sealed for another kernel"},
		{"unsealed object", func(t *testing.T, _ *cpuDevice, path string) {
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, data[:len(data)-144], 0o600); err != nil {
				t.Fatal(err)
			}
		}, "no tgc seal"},
		{"empty", func(t *testing.T, _ *cpuDevice, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "0 bytes"},
		{"fifo", func(t *testing.T, _ *cpuDevice, path string) {
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "a FIFO"},
		{"directory", func(t *testing.T, _ *cpuDevice, path string) {
			os.Remove(path)
			if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "a directory"},
		{"symlink", func(t *testing.T, d *cpuDevice, path string) {
			other := store(t, d, addN(7, "symlink: the other kernel"))
			os.Remove(path)
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link"},
		{"unreadable", func(t *testing.T, _ *cpuDevice, path string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads any file")
			}
			if err := os.Chmod(path, 0); err != nil {
				t.Fatal(err)
			}
		}, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := cpuOrSkip(t)
			src := addN(2, tc.name)
			path := store(t, d, src)
			tc.damage(t, d, path)
			lib, err := buildWithin(t, d, src)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			if got := runAddN(t, lib); got[0] != 2 || got[7] != 2 {
				t.Fatalf("kernel computes %v, want 2s", got)
			}
			w := d.TakeWarnings()
			if len(w) != 1 || !strings.Contains(w[0], path) || !strings.Contains(w[0], tc.want) {
				t.Errorf("warnings %q, want one naming %s and %q", w, path, tc.want)
			}
			// The next run finds a good entry (a directory cannot be replaced:
			// that kernel is compiled privately each time).
			if tc.name != "directory" {
				if p, err := kcache.Lookup(filepath.Dir(path), d.cacheKey(src)); err != nil || p != path {
					t.Errorf("entry not replaced by a good one: %q, %v", p, err)
				}
			}
		})
	}
}

// TestCacheNotWritable: a cache folder that cannot be created or written
// does not stop tgc: kernels are compiled into a private temporary folder,
// with one warning however many are built.
func TestCacheNotWritable(t *testing.T) {
	d := cpuOrSkip(t)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TGC_CACHE", filepath.Join(file, "cache")) // under a regular file: mkdir fails
	for i := range 3 {
		lib, err := d.build(addN(i+1, "not writable"))
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if got := runAddN(t, lib); got[3] != float32(i+1) {
			t.Fatalf("kernel %d computes %v", i, got)
		}
		if _, err := os.Stat(lib.path); !os.IsNotExist(err) {
			t.Errorf("private object %s kept after loading (%v)", lib.path, err)
		}
	}
	if w := d.TakeWarnings(); len(w) != 1 || !strings.Contains(w[0], "not writable") {
		t.Errorf("warnings %q, want exactly one saying the cache is not writable", w)
	}
}

// TestCacheReadOnlyFolder: a read-only cache folder still serves its good
// entries, and a bad entry there is compiled privately (not replaced).
// Root ignores permissions, so the test needs another user.
func TestCacheReadOnlyFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only folders")
	}
	d := cpuOrSkip(t)
	good, bad := addN(3, "ro good"), addN(4, "ro bad")
	store(t, d, good)
	badPath := store(t, d, bad)
	if err := os.Truncate(badPath, 100); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(badPath)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	for _, tc := range []struct {
		src  string
		want float32
	}{{good, 3}, {bad, 4}} {
		lib, err := d.build(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := runAddN(t, lib); got[0] != tc.want {
			t.Errorf("computes %v, want %v", got[0], tc.want)
		}
	}
	w := strings.Join(d.TakeWarnings(), "\n")
	if strings.Count(w, "\n") != 1 || !strings.Contains(w, badPath+": 100 bytes, not a sealed kernel object") || !strings.Contains(w, dir+" is not writable") {
		t.Errorf("warnings %q, want the bad entry and the read-only folder", w)
	}
}

// TestStaleBuildFoldersCleaned: build folders of killed runs (lock free,
// over a minute old) are removed by the next build; a folder whose lock a
// live builder holds, and a fresh one, are left alone.
func TestStaleBuildFoldersCleaned(t *testing.T) {
	d := cpuOrSkip(t)
	dir := filepath.Join(CacheDir(), "kernels")
	old := time.Now().Add(-2 * kcache.StaleAge)
	mk := func(name string, lock bool, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "kernels.c"), []byte("half"), 0o600)
		if lock {
			os.WriteFile(filepath.Join(p, "lock"), nil, 0o600)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := mk("build-dead", true, old)
	older := mk("build-nolock", false, old)
	live := mk("build-live", true, old)
	fresh := mk("build-fresh", false, time.Now())
	// A live builder: its lock held on another open file description.
	f, err := os.Open(filepath.Join(live, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := d.build(addN(5, "stale")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dead, older} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("stale %s not removed", filepath.Base(p))
		}
	}
	for _, p := range []string{live, fresh} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(p), err)
		}
	}
}
