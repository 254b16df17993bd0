package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The programs of tinygrad's introduction, saved verbatim as .py files in
// testdata, run with tgc run.

// article copies a testdata program into the test's folder.
func article(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testdataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return writeScript(t, name, string(src))
}

var testdataDir, _ = filepath.Abs("testdata")

// TestArticleMatmul runs the matmul program and checks that what it prints
// (numpy's summary of a 1024x1024 array) holds the product's values.
func TestArticleMatmul(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	f := article(t, "article_matmul.py")
	out, errs, st := tgc(t, "run", f, "--device", "CPU", "--seed", "7", "-q")
	if st != 0 {
		t.Fatalf("status %d\nstderr:\n%s", st, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// numpy prints the 3 first and 3 last rows, each with its 3 first and 3
	// last values, and a row of "..." between.
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "[[") || strings.TrimSpace(lines[3]) != "..." || !strings.HasSuffix(lines[6], "]]") {
		t.Fatalf("not numpy's summary of a 1024x1024 array:\n%s", out)
	}
	printed := func(line string) []float64 {
		var vals []float64
		for _, f := range strings.Fields(strings.NewReplacer("[", " ", "]", " ", "...", " ").Replace(line)) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("%q in %q: %v", f, line, err)
			}
			vals = append(vals, v)
		}
		if len(vals) != 6 {
			t.Fatalf("row %q: %d values, want 6", line, len(vals))
		}
		return vals
	}
	// The same product, read back as numbers.
	check := writeScript(t, "check.py", `from tinygrad import Tensor
N = 1024
a = Tensor.rand(N, N)
b = Tensor.rand(N, N)
c = (a.dot(b)).realize().tolist()
for r in [0, 1, 2, N - 3, N - 2, N - 1]:
    print(*[c[r][k] for k in [0, 1, 2, N - 3, N - 2, N - 1]])
`)
	ref, errs, st := tgc(t, "run", check, "--device", "CPU", "--seed", "7", "-q")
	if st != 0 {
		t.Fatalf("check: status %d\n%s", st, errs)
	}
	refRows := strings.Split(strings.TrimSpace(ref), "\n")
	for i, line := range []string{lines[0], lines[1], lines[2], lines[4], lines[5], lines[6]} {
		got := printed(line)
		for k, f := range strings.Fields(refRows[i]) {
			want, _ := strconv.ParseFloat(f, 64)
			if math.Abs(got[k]-want) > 1e-4*math.Abs(want) || want < 200 || want > 320 {
				t.Errorf("row %d value %d: printed %v, the product holds %v", i, k, got[k], want)
			}
		}
	}
}

var stepRE = regexp.MustCompile(`(?m)^Step (\d+), Loss: ([0-9.]+)$`)

// TestArticleTinyNet runs the TinyNet program: ten steps whose loss
// decreases.
func TestArticleTinyNet(t *testing.T) {
	setup(t)
	device := "GO"
	if available("CPU") {
		device = "CPU"
	}
	f := article(t, "article_tinynet.py")
	out, errs, st := tgc(t, "run", f, "--device", device, "--seed", "3", "-q")
	if st != 0 {
		t.Fatalf("status %d\nstderr:\n%s", st, errs)
	}
	m := stepRE.FindAllStringSubmatch(out, -1)
	if len(m) != 10 {
		t.Fatalf("want 10 steps, got:\n%s", out)
	}
	var loss []float64
	for i, s := range m {
		if s[1] != strconv.Itoa(i) {
			t.Fatalf("step %s at line %d", s[1], i)
		}
		v, _ := strconv.ParseFloat(s[2], 64)
		loss = append(loss, v)
	}
	if !(loss[9] < loss[0]/2) {
		t.Errorf("the loss did not decrease: %v", loss)
	}
	for i := 1; i < 10; i++ {
		if loss[i] > loss[i-1]*1.05 {
			t.Errorf("the loss rose at step %d: %v", i, loss)
		}
	}
}

// TestArticleDevice prints the default device.
func TestArticleDevice(t *testing.T) {
	setup(t)
	f := article(t, "article_device.py")
	for _, device := range []string{"GO", "CPU"} {
		if !available(device) {
			continue
		}
		out, errs, st := tgc(t, "run", f, "--device", device, "-q")
		if st != 0 || out != device+"\n" {
			t.Errorf("--device %s: status %d, stdout %q, stderr %q", device, st, out, errs)
		}
	}
}
