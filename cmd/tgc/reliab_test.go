package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKernelCacheIsVerified is issue 9 rows 1-3 from the command line: a
// kernel cache entry truncated, zeroed in its middle, swapped for another
// kernel's or replaced by a FIFO makes the next run rebuild it with one
// warning and print the right number (136), never crash in dlopen, print
// 240 (the other kernel's sum) or hang.
func TestKernelCacheIsVerified(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	cache := os.Getenv("TGC_CACHE")
	kernels := filepath.Join(cache, "kernels")
	a := writeScript(t, "a.tg", "print((Tensor.arange(16).float()*2).sum().item())\n")
	b := writeScript(t, "b.tg", "print((Tensor.arange(16).float()+1).sum().item())\n")
	entries := func() []string {
		m, _ := filepath.Glob(filepath.Join(kernels, "*.so"))
		return m
	}
	run := func(file string) (string, string) {
		out, errs, st := tgcProcess(t, time.Minute, "run", file, "--device", "CPU", "-q")
		if st != 0 {
			t.Fatalf("tgc run %s: status %d\n%s", file, st, errs)
		}
		return strings.TrimSpace(out), errs
	}
	if out, _ := run(a); out != "240.0" {
		t.Fatalf("a.tg printed %q", out)
	}
	aEntries := entries()
	if out, _ := run(b); out != "136.0" {
		t.Fatalf("b.tg printed %q", out)
	}
	var bEntry, aEntry string
	for _, e := range entries() {
		if !slices.Contains(aEntries, e) {
			bEntry = e
		}
	}
	if len(aEntries) != 1 || bEntry == "" {
		t.Fatalf("entries %v then %v: want one per script", aEntries, entries())
	}
	aEntry = aEntries[0]
	good, err := os.ReadFile(bEntry)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		damage func() error
	}{
		{"truncated to 12000 bytes", func() error { return os.Truncate(bEntry, 12000) }},
		{"4 KiB zeroed in the middle", func() error {
			data := slices.Clone(good)
			clear(data[len(data)/2-2048 : len(data)/2+2048])
			return os.WriteFile(bEntry, data, 0o600)
		}},
		{"the other kernel's file", func() error {
			data, err := os.ReadFile(aEntry)
			if err != nil {
				return err
			}
			return os.WriteFile(bEntry, data, 0o600)
		}},
		{"a FIFO", func() error {
			os.Remove(bEntry)
			return syscall.Mkfifo(bEntry, 0o600)
		}},
	} {
		if err := os.WriteFile(bEntry, good, 0o600); err != nil {
			os.Remove(bEntry)
			if err := os.WriteFile(bEntry, good, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := tc.damage(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out, errs, st := tgcProcess(t, time.Minute, "run", b, "--device", "CPU", "-q")
		if st != 0 || strings.TrimSpace(out) != "136.0" {
			t.Errorf("%s: b.tg printed %q with status %d, want 136.0 and 0", tc.name, out, st)
			continue
		}
		if n := strings.Count(errs, "warning: kernel cache"); n != 1 || !strings.Contains(errs, bEntry) {
			t.Errorf("%s: want one warning naming %s, stderr:\n%s", tc.name, bEntry, errs)
		}
		if _, errs := run(b); errs != "" {
			t.Errorf("%s: the run after the rebuild still warns:\n%s", tc.name, errs)
		}
	}
}

// TestKernelCacheNotWritable: a cache that cannot be written does not stop
// tgc run; it warns once.
func TestKernelCacheNotWritable(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := writeScript(t, "two.tg", "a = (Tensor.arange(16).float()+1).sum()\nb = (Tensor.arange(8).float()*3).max()\nprint(a.item(), b.item())\n")
	out, errs, st := tgcProcess(t, time.Minute, "run", f, "--device", "CPU", "-q", "--cache", filepath.Join(file, "cache"))
	if st != 0 || strings.TrimSpace(out) != "136.0 21.0" {
		t.Fatalf("status %d, stdout %q, stderr:\n%s", st, out, errs)
	}
	if strings.Count(errs, "warning:") != 1 || !strings.Contains(errs, "is not writable") {
		t.Errorf("want one warning that the cache is not writable, stderr:\n%s", errs)
	}
}

// TestCraftedBeamEntry is issue 9 row 4 from the command line: a BEAM
// store entry whose amounts overflow (4 × 4611686018427387904 = 0 in
// int64) is ignored with a warning; the run prints the right sum.
func TestCraftedBeamEntry(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	f := writeScript(t, "mm.tg", "a = Tensor.ones(32, 48) * 0.5\nb = Tensor.ones(48, 32)\nprint(a.dot(b).sum().item())\n")
	args := []string{"run", f, "--device", "CPU", "-q", "--beam", "1", "--beam-budget", "1s"}
	out, errs, st := tgcProcess(t, time.Minute, args...)
	if st != 0 || strings.TrimSpace(out) != "24576.0" {
		t.Fatalf("status %d, stdout %q, stderr:\n%s", st, out, errs)
	}
	entries, _ := filepath.Glob(filepath.Join(os.Getenv("TGC_CACHE"), "beam", "*.json"))
	if len(entries) == 0 {
		t.Fatal("no stored BEAM results")
	}
	crafted := `{"kernel":"x","opts":[{"kind":"UPCAST","axis":0,"amt":4},{"kind":"UPCAST","axis":0,"amt":4611686018427387904}],"seconds":1e-6,"heuristic_seconds":1e-6,"base_seconds":1e-6,"candidates":1,"width":1}`
	for _, e := range entries {
		if err := os.WriteFile(e, []byte(crafted), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, errs, st = tgcProcess(t, time.Minute, args...)
	if st != 0 || strings.TrimSpace(out) != "24576.0" {
		t.Fatalf("crafted entries: status %d, stdout %q, stderr:\n%s", st, out, errs)
	}
	if n := strings.Count(errs, "warning: BEAM: ignoring the stored result"); n != len(entries) || !strings.Contains(errs, "amount out of range") {
		t.Errorf("want %d warnings about the crafted entries, stderr:\n%s", len(entries), errs)
	}
}

// saveScript saves w = [2, 4, 6] to path.
func saveScript(path string) string {
	return `nn.state.safe_save({"w": Tensor([1., 2., 3.]) * 2}, "` + path + `")` + "\n"
}

// TestEmitWritesNoUserFiles is issue 9 row 8: tgc emit of a script that
// saves leaves the file alone (it would hold zeros: emit runs nothing) and
// says so at the script line; a load still reads the real file.
func TestEmitWritesNoUserFiles(t *testing.T) {
	setup(t)
	f := writeScript(t, "s.tg", "\n"+saveScript("w.st"))
	if _, errs, st := tgc(t, "run", f, "--device", "GO", "-q"); st != 0 {
		t.Fatalf("run: %s", errs)
	}
	before, err := os.ReadFile("w.st")
	if err != nil {
		t.Fatal(err)
	}
	_, errs, st := tgc(t, "emit", f, "-o", "plan")
	if st != 0 {
		t.Fatalf("emit: status %d\n%s", st, errs)
	}
	if after, _ := os.ReadFile("w.st"); string(after) != string(before) {
		t.Errorf("emit rewrote w.st")
	}
	if !strings.Contains(errs, "s.tg:2:") || !strings.Contains(errs, "w.st is not written") {
		t.Errorf("no warning naming the line and the file:\n%s", errs)
	}
	if _, err := os.Stat(filepath.Join("plan", "plan.json")); err != nil {
		t.Errorf("no plan: %v", err)
	}
	l := writeScript(t, "l.tg", `print(nn.state.safe_load("w.st")["w"].tolist())`+"\n")
	out, errs, st := tgc(t, "emit", l, "-o", "plan2")
	if st != 0 || strings.TrimSpace(out) != "[2.0, 4.0, 6.0]" {
		t.Errorf("emit of a load: status %d, stdout %q, want the file's values\n%s", st, out, errs)
	}
}

// TestScriptFileAccess is issue 9 row 12: a script reads and writes only
// regular files in its folder, the current folder and --allow-path ones
// (links resolved first); FIFOs and devices are refused without blocking;
// a failed save leaves the old file.
func TestScriptFileAccess(t *testing.T) {
	work := filepath.Join(setup(t), "a", "b") // ../../x.st stays in the test's folder
	os.MkdirAll(work, 0o700)
	t.Chdir(work)
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.MkdirAll(outside, 0o700)
	os.WriteFile(filepath.Join(outside, "target.st"), []byte("keep"), 0o600)
	os.Symlink(filepath.Join(outside, "target.st"), "link-out.st")
	os.Symlink(filepath.Join(outside, "target.st"), filepath.Join(outside, "link-in.st"))
	run := func(src string, extra ...string) (string, string, int) {
		f := writeScript(t, "f.tg", src)
		return tgcProcess(t, time.Minute, append([]string{"run", f, "--device", "GO", "-q"}, extra...)...)
	}
	mustFail := func(name, src, want string, extra ...string) {
		t.Helper()
		_, errs, st := run(src, extra...)
		if st != 1 || !strings.Contains(errs, want) {
			t.Errorf("%s: status %d, want 1 and %q in:\n%s", name, st, want, errs)
		}
	}
	mustFail("save to ../../x.st", saveScript("../../x.st"), "outside the folders")
	mustFail("save to an absolute path outside", saveScript(filepath.Join(outside, "abs.st")), "outside the folders")
	mustFail("save through a link leading out", saveScript("link-out.st"), "resolves to "+filepath.Join(outside, "target.st"))
	mustFail("load /etc/passwd", `nn.state.safe_load("/etc/passwd")`, "outside the folders")
	mustFail("mnist from a folder outside", `nn.datasets.mnist(dir="`+outside+`")`, "outside the folders")
	if data, _ := os.ReadFile(filepath.Join(outside, "target.st")); string(data) != "keep" {
		t.Errorf("a refused save changed the file outside: %q", data)
	}
	for _, f := range []string{filepath.Join(filepath.Dir(filepath.Dir(work)), "x.st"), filepath.Join(outside, "abs.st")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("refused save created %s", f)
		}
	}
	// FIFOs and devices: refused, left as they are, nothing blocks.
	if err := syscall.Mkfifo("fifo.st", 0o600); err != nil {
		t.Fatal(err)
	}
	mustFail("save to a FIFO", saveScript("fifo.st"), "a FIFO, not a regular file")
	mustFail("load a FIFO", `nn.state.safe_load("fifo.st")`, "a FIFO, not a regular file")
	if st, err := os.Lstat("fifo.st"); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced")
	}
	if err := syscall.Mkfifo("fifo.tg", 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, st := tgcProcess(t, time.Minute, "run", "fifo.tg"); st != 1 || !strings.Contains(errs, "a FIFO") {
		t.Errorf("tgc run of a FIFO: status %d\n%s", st, errs)
	}
	mustFail("save to a device", saveScript("/dev/null"), "a device node, not a regular file", "--allow-path", "/dev/null")
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device")
	}
	// --allow-path and allow_path in tgc.yaml widen the policy; a link is
	// followed (its target written, the link kept).
	if _, errs, st := run(saveScript(filepath.Join(outside, "link-in.st")), "--allow-path", outside); st != 0 {
		t.Errorf("save with --allow-path: %s", errs)
	}
	if st, err := os.Lstat(filepath.Join(outside, "link-in.st")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "target.st")); string(data) == "keep" {
		t.Errorf("the link's target was not written")
	}
	os.WriteFile("tgc.yaml", []byte("allow_path: ["+outside+"]\n"), 0o600)
	t.Setenv("DEBUG", "1")
	_, errs, st := run(`print(nn.state.safe_load("` + filepath.Join(outside, "target.st") + `")["w"].tolist())`)
	if st != 0 || !strings.Contains(errs, "tgc.yaml sets allow_path = ["+outside+"]") {
		t.Errorf("allow_path in tgc.yaml: status %d, want it listed under DEBUG=1:\n%s", st, errs)
	}
	os.Unsetenv("DEBUG")
	os.Remove("tgc.yaml")
	// A save that fails (here: past a file size limit) leaves the old
	// file whole and no temporary file.
	if _, errs, st := run(saveScript("w.st")); st != 0 {
		t.Fatal(errs)
	}
	old, _ := os.ReadFile("w.st")
	t.Setenv("TGC_TEST_FSIZE", "65536")
	mustFail("save past the file size limit", `nn.state.safe_save({"w": Tensor.ones(100000)}, "w.st")`, "safe_save")
	os.Unsetenv("TGC_TEST_FSIZE")
	if data, _ := os.ReadFile("w.st"); string(data) != string(old) {
		t.Errorf("a failed save changed w.st (%d bytes, was %d)", len(data), len(old))
	}
	if tmp, _ := filepath.Glob(".w.st.tmp*"); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}
