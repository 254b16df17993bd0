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
