package fileaccess

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test when f does not return in time (an open of a
// FIFO for reading or writing blocks until the other end appears).
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("blocked (on a FIFO?)")
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func TestOpenOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "r")
	os.WriteFile(regular, []byte("data"), 0o600)
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	link := filepath.Join(dir, "link")
	os.Symlink(regular, link)
	for _, tc := range []struct{ path, want string }{
		{regular, ""},
		{link, ""},
		{fifo, "a FIFO"},
		{"/dev/null", "a device node"},
		{dir, "a directory"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		within(t, func() {
			data, err := ReadFile(tc.path, 0)
			switch {
			case tc.want == "" && (err != nil || string(data) != "data"):
				t.Errorf("%s: %q, %v", tc.path, data, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: error %v, want %q", tc.path, err, tc.want)
			}
		})
	}
	if _, err := ReadFile(regular, 3); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("4 bytes with a limit of 3: %v", err)
	}
}

func TestWriteFileAtomicAndRegularOnly(t *testing.T) {
	dir := t.TempDir()
	onlyFile := func(want ...string) {
		t.Helper()
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if strings.Join(names, " ") != strings.Join(want, " ") {
			t.Errorf("folder holds %v, want %v (a temporary file left?)", names, want)
		}
	}
	// A new file gets perm; a replaced one keeps its own.
	p := filepath.Join(dir, "a")
	if err := WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o600)
	if err := WriteFile(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v after replacing a 0600 file", st.Mode().Perm())
	}
	// Through a symbolic link: the target is replaced, the link stays.
	link := filepath.Join(dir, "link")
	os.Symlink(p, link)
	if err := WriteFile(link, []byte("three"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if data, _ := os.ReadFile(p); string(data) != "three" {
		t.Errorf("target holds %q", data)
	}
	onlyFile("a", "link")
	// Refused: a FIFO (left as it is), a dangling link, a directory, a
	// device node.
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	for _, tc := range []struct{ path, want string }{
		{fifo, "a FIFO"},
		{dangling, "a symbolic link to a missing file"},
		{sub, "a directory"},
		{"/dev/null", "a device node"},
	} {
		within(t, func() {
			err := WriteFile(tc.path, []byte("x"), 0o644)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
			}
		})
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", st.Mode())
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v", st.Mode())
	}
	onlyFile("a", "dangling", "fifo", "link", "sub")
}

// TestWriteFileFailureKeepsOldFile: a write that fails (its folder is not
// writable here) leaves the old file as it was and no temporary file.
func TestWriteFileFailureKeepsOldFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only folders (the CLI test covers a failing write with a file size limit)")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "w")
	os.WriteFile(p, []byte("old"), 0o644)
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	if err := WriteFile(p, []byte("new"), 0o644); err == nil {
		t.Fatal("write into a read-only folder succeeded")
	}
	if data, _ := os.ReadFile(p); string(data) != "old" {
		t.Errorf("old file holds %q", data)
	}
}

func TestPolicy(t *testing.T) {
	base := t.TempDir()
	work := filepath.Join(base, "work")
	scripts := filepath.Join(base, "scripts")
	outside := filepath.Join(base, "outside")
	allowed := filepath.Join(base, "allowed")
	for _, d := range []string{work, scripts, outside, allowed, filepath.Join(base, "workx")} {
		os.MkdirAll(d, 0o700)
	}
	for _, f := range []string{filepath.Join(work, "in.st"), filepath.Join(outside, "secret"), filepath.Join(scripts, "s.tg"), filepath.Join(allowed, "a.st"), filepath.Join(base, "workx", "f")} {
		os.WriteFile(f, []byte("data"), 0o600)
	}
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(work, "out-link"))
	os.Symlink(outside, filepath.Join(work, "out-dir"))
	os.Symlink(filepath.Join(work, "in.st"), filepath.Join(outside, "in-link"))
	t.Chdir(work)
	p := ForScript(filepath.Join(scripts, "s.tg"))
	if err := p.Allow(allowed, "--allow-path"); err != nil {
		t.Fatal(err)
	}
	if err := p.AllowNew(filepath.Join(outside, "model.st"), "--save"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path  string
		write bool
		want  string // "" allowed, else in the error
	}{
		{"in.st", false, ""},
		{"new.st", true, ""},
		{"./in.st", false, ""},
		{filepath.Join(scripts, "s.tg"), false, ""},
		{filepath.Join(scripts, "new.st"), true, ""},
		{filepath.Join(allowed, "a.st"), false, ""},
		{filepath.Join(allowed, "b.st"), true, ""},
		{filepath.Join(outside, "model.st"), true, ""},
		{filepath.Join(outside, "in-link"), false, ""}, // resolves into work
		{"../outside/secret", false, "outside the folders"},
		{"../outside/x.st", true, "outside the folders"},
		{"../../x.st", true, "outside the folders"},
		{"../workx/f", false, "outside the folders"}, // a sibling whose name extends work
		{"/etc/passwd", false, "outside the folders"},
		{"out-link", false, "resolves to " + filepath.Join(outside, "secret")},
		{"out-link", true, "resolves to " + filepath.Join(outside, "secret")},
		{"out-dir/secret", false, "outside the folders"},
		{"out-dir/new.st", true, "outside the folders"},
		{filepath.Join(outside, "model2.st"), true, "outside the folders"},
	} {
		var err error
		if tc.write {
			err = p.WriteFile(tc.path, []byte("w"), 0o644)
		} else {
			var f *os.File
			if f, err = p.Open(tc.path); err == nil {
				f.Close()
			}
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (write %v): %v", tc.path, tc.write, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s (write %v): %v, want %q", tc.path, tc.write, err, tc.want)
		case tc.want != "" && !errors.Is(err, ErrNotAllowed):
			t.Errorf("%s: %v is not ErrNotAllowed", tc.path, err)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret")); string(data) != "data" {
		t.Errorf("a refused write changed the file outside: %q", data)
	}
	for _, f := range []string{"x.st", "model2.st", "new.st"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("refused write created %s", f)
		}
	}
	// The empty policy allows nothing (fuzzed scripts run with it).
	if _, err := (&Policy{}).Open(filepath.Join(work, "in.st")); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("empty policy: %v", err)
	}
}
