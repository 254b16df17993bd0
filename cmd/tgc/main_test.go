package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tgc/pkg/backend"
)

// setup isolates a test: no settings from the environment, a private
// kernel cache, and a fresh working directory (no tgc.yaml, and emit's
// default build/ goes there).
func setup(t *testing.T) string {
	t.Helper()
	for _, k := range []string{"TGC_DEVICE", "DEVICE", "DEV", "TGC_DEBUG", "DEBUG", "TGC_BEAM", "BEAM",
		"TGC_BEAM_BUDGET", "TGC_SEED", "TGC_MAX_STEPS", "NO_COLOR"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("TGC_CACHE", t.TempDir())
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// tgc runs the CLI in-process.
func tgc(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errb bytes.Buffer
	status = execute(args, &out, &errb)
	stdout, stderr = out.String(), errb.String()
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic:") {
		t.Errorf("tgc %v printed a Go stack trace:\n%s", args, stderr)
	}
	return
}

func writeScript(t *testing.T, name, src string) string {
	t.Helper()
	if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

const sumScript = `a = Tensor([[1.0, 2.0], [3.0, 4.0]])
b = (a * a + 1).sum()
print("sum", b.item())
`

const matmulScript = `N = 32
a = Tensor.rand(N, N)
b = Tensor.rand(N, N)
c = a.dot(b).relu().realize()
print(c.shape, c.sum().item())
`

var summaryRE = regexp.MustCompile(`(?m)^ran \d+ kernels? on (\w+) in [0-9.]+ m?s( \(.*\))?$`)

func TestRun(t *testing.T) {
	setup(t)
	f := writeScript(t, "sum.tg", sumScript)
	out, errs, st := tgc(t, "run", f, "--device", "GO")
	if st != 0 {
		t.Fatalf("status %d, stderr:\n%s", st, errs)
	}
	if strings.TrimSpace(out) != "sum 34.0" {
		t.Errorf("stdout %q, want \"sum 34.0\"", out)
	}
	m := summaryRE.FindStringSubmatch(errs)
	if m == nil || m[1] != "GO" {
		t.Errorf("no summary line for GO in stderr:\n%s", errs)
	}
	if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("want exactly one line on stderr, got:\n%s", errs)
	}
}

func TestRunCPU(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	f := writeScript(t, "matmul.tg", matmulScript)
	out, errs, st := tgc(t, "run", f, "--device=cpu")
	if st != 0 {
		t.Fatalf("status %d, stderr:\n%s", st, errs)
	}
	if !strings.HasPrefix(out, "(32, 32) ") {
		t.Errorf("stdout %q", out)
	}
	m := summaryRE.FindStringSubmatch(errs)
	if m == nil || m[1] != "CPU" || !strings.Contains(errs, "(compile ") {
		t.Errorf("summary line for CPU with compile time missing in:\n%s", errs)
	}
	// Same script again. In-process the device keeps its compiled kernels
	// in memory, so there is nothing to build.
	_, errs, st = tgc(t, "run", f, "--device=cpu")
	if st != 0 || strings.Contains(errs, "built") || summaryRE.FindString(errs) == "" {
		t.Errorf("second run: status %d, want no builds in:\n%s", st, errs)
	}
}

// TestCacheFlag: --cache reaches the CPU device explicitly: kernels are
// stored there, not in $TGC_CACHE, and the environment is left alone.
func TestCacheFlag(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	env := os.Getenv("TGC_CACHE")
	dir := t.TempDir()
	f := writeScript(t, "cache.tg", "print((Tensor.arange(7) * 3 + 2).sum().item())\n")
	out, errs, st := tgc(t, "run", f, "--device=cpu", "-q", "--cache", dir)
	if st != 0 || strings.TrimSpace(out) != "77" {
		t.Fatalf("status %d, stdout %q, stderr:\n%s", st, out, errs)
	}
	if sos, _ := filepath.Glob(filepath.Join(dir, "kernels", "*.so")); len(sos) == 0 {
		t.Errorf("no kernel stored under --cache %s", dir)
	}
	if _, err := os.Stat(filepath.Join(env, "kernels")); err == nil {
		t.Errorf("kernels stored under $TGC_CACHE %s despite --cache", env)
	}
	if got := os.Getenv("TGC_CACHE"); got != env {
		t.Errorf("TGC_CACHE changed from %q to %q", env, got)
	}
}

func available(dev string) bool {
	for _, d := range backend.List() {
		if d.Name == dev {
			return d.Available
		}
	}
	return false
}

func TestQuiet(t *testing.T) {
	setup(t)
	f := writeScript(t, "sum.tg", sumScript)
	for _, args := range [][]string{{"run", f, "--quiet", "--device", "GO"}, {"run", "-q", f, "--device", "GO"}} {
		out, errs, st := tgc(t, args...)
		if st != 0 || errs != "" || !strings.Contains(out, "sum 34.0") {
			t.Errorf("%v: status %d, stdout %q, stderr %q; want the output and nothing on stderr", args, st, out, errs)
		}
	}
}

func TestSeed(t *testing.T) {
	setup(t)
	f := writeScript(t, "rand.tg", "print(Tensor.rand(4).tolist())\n")
	run := func(args ...string) string {
		out, errs, st := tgc(t, append([]string{"run", f, "-q", "--device", "GO"}, args...)...)
		if st != 0 {
			t.Fatalf("status %d: %s", st, errs)
		}
		return out
	}
	a, b, c := run("--seed", "3"), run("--seed", "3"), run("--seed", "4")
	if a != b || a == c {
		t.Errorf("seed 3: %q and %q (want equal); seed 4: %q (want different)", a, b, c)
	}
	t.Setenv("TGC_SEED", "3")
	if d := run(); d != a {
		t.Errorf("TGC_SEED=3 gave %q, want %q", d, a)
	}
}

func TestDebugNoColorWhenNotTerminal(t *testing.T) {
	setup(t)
	f := writeScript(t, "sum.tg", sumScript)
	t.Setenv("DEBUG", "2")
	_, errs, st := tgc(t, "run", f, "--device", "GO")
	if st != 0 {
		t.Fatalf("status %d: %s", st, errs)
	}
	if !strings.Contains(errs, "*** GO") {
		t.Errorf("DEBUG=2: no kernel launch lines in:\n%s", errs)
	}
	if strings.Contains(errs, "\x1b[") {
		t.Errorf("colour codes in output that is not a terminal:\n%q", errs)
	}
}

func TestEmit(t *testing.T) {
	setup(t)
	// The CPU dialect must not need a C compiler.
	t.Setenv("PATH", "")
	t.Setenv("CC", "")
	f := writeScript(t, "matmul.tg", matmulScript)
	dir := filepath.Join(t.TempDir(), "plan")
	out, errs, st := tgc(t, "emit", f, "--device", "CPU", "--out", dir)
	if st != 0 {
		t.Fatalf("status %d, stderr:\n%s", st, errs)
	}
	if !strings.HasPrefix(out, "(32, 32) 0") {
		t.Errorf("trace-mode values should read as zeros: stdout %q", out)
	}
	if !regexp.MustCompile(`(?m)^wrote \d+ kernels? and plan.json to ` + regexp.QuoteMeta(dir) + `$`).MatchString(errs) {
		t.Errorf("no 'wrote ...' line in stderr:\n%s", errs)
	}
	checkPlan(t, dir, "CPU", ".c")
}

// TestEmitDebug checks that emit runs the same pipeline as a device:
// DEBUG=5 shows the kernel after every pass, DEBUG=3 its source.
func TestEmitDebug(t *testing.T) {
	setup(t)
	f := writeScript(t, "matmul.tg", matmulScript)
	_, errs, st := tgc(t, "emit", f, "--device", "CPU", "--debug", "5", "-o", "plan")
	if st != 0 {
		t.Fatalf("status %d, stderr:\n%s", st, errs)
	}
	for _, want := range []string{"scheduled ", "--- r_32_32_32 after lowered ---", "--- r_32_32_32 after simplify ---",
		"--- r_32_32_32 after opts ---", "--- r_32_32 after simd ---", "  simd acc   x8 ", "// r_32_32 opts [UNROLL(", "void r_32_32_32(void **bufs"} {
		if !strings.Contains(errs, want) {
			t.Errorf("emit --debug 5: no %q in stderr:\n%s", want, errs)
		}
	}
}

func TestEmitDefaults(t *testing.T) {
	setup(t)
	f := writeScript(t, "sum.tg", sumScript)
	_, errs, st := tgc(t, "emit", f)
	if st != 0 {
		t.Fatalf("status %d, stderr:\n%s", st, errs)
	}
	if !strings.Contains(errs, "to "+filepath.Join("build", "sum")+"\n") {
		t.Errorf("default output directory not build/sum:\n%s", errs)
	}
	checkPlan(t, filepath.Join("build", "sum"), "CPU", ".c")

	_, errs, st = tgc(t, "emit", f, "--device", "go", "-o", "ir", "--quiet")
	if st != 0 || strings.Contains(errs, "wrote") {
		t.Fatalf("emit --device go --quiet: status %d, stderr:\n%s", st, errs)
	}
	checkPlan(t, "ir", "GO", ".ir")
}

type planBuffer struct {
	ID    int
	DType string
	Shape []int
	Bytes int
	Role  string
}

// checkPlan reads DIR/plan.json and checks it against the files beside it.
func checkPlan(t *testing.T, dir, device, ext string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Version int
		Device  string
		Buffers []planBuffer
		Kernels []struct {
			Name, Source, Entry string
			Global              []int64
			Args                []int
		}
	}
	if err := json.Unmarshal(data, &plan); err != nil {
		t.Fatalf("plan.json: %v", err)
	}
	if plan.Version < 1 || plan.Device != device {
		t.Errorf("plan version %d device %q, want >= 1 and %q", plan.Version, plan.Device, device)
	}
	if len(plan.Kernels) == 0 {
		t.Fatal("plan has no kernels")
	}
	for _, b := range plan.Buffers {
		if !slices.Contains([]string{"input", "weight", "output", "scratch"}, b.Role) || b.DType == "" {
			t.Errorf("buffer %d: role %q dtype %q", b.ID, b.Role, b.DType)
		}
	}
	if !slices.ContainsFunc(plan.Buffers, func(b planBuffer) bool { return b.Role == "output" }) {
		t.Error("no output buffer in the plan, though the script reads a value")
	}
	for _, k := range plan.Kernels {
		if k.Entry == "" || len(k.Args) == 0 || filepath.Ext(k.Source) != ext {
			t.Errorf("kernel %+v", k)
		}
		src, err := os.ReadFile(filepath.Join(dir, k.Source))
		if err != nil {
			t.Errorf("kernel %s: %v", k.Name, err)
		} else if !bytes.Contains(src, []byte(k.Entry)) {
			t.Errorf("kernel source %s does not mention its entry %s", k.Source, k.Entry)
		}
		for _, a := range k.Args {
			if a < 0 || a >= len(plan.Buffers) {
				t.Errorf("kernel %s: argument %d is not a buffer", k.Name, a)
			}
		}
	}
}

func TestDevices(t *testing.T) {
	setup(t)
	out, errs, st := tgc(t, "devices")
	if st != 0 {
		t.Fatalf("status %d: %s", st, errs)
	}
	for _, want := range []string{"DEVICE", "STATUS", "DETAILS", "GO", "CPU", "(default)"} {
		if !strings.Contains(out, want) {
			t.Errorf("devices output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") || strings.ContainsRune(out, '│') {
		t.Errorf("want plain text when stdout is not a terminal:\n%s", out)
	}
	def := backend.Default()
	if !regexp.MustCompile(`(?m)^` + def + ` \*\s+available \(default\)`).MatchString(out) {
		t.Errorf("default %s not marked:\n%s", def, out)
	}
	for _, d := range backend.List() {
		if !d.Available && !strings.Contains(out, d.Reason) {
			t.Errorf("reason for %s (%q) missing:\n%s", d.Name, d.Reason, out)
		}
	}
	t.Setenv("DEV", "go")
	out, _, _ = tgc(t, "devices")
	if !strings.Contains(out, "tgc run uses GO (from DEV)") {
		t.Errorf("DEV=go not reported:\n%s", out)
	}
}

func TestErrors(t *testing.T) {
	setup(t)
	writeScript(t, "sum.tg", sumScript)
	writeScript(t, "shape.tg", "a = Tensor.ones(2, 3)\nb = Tensor.ones(4, 5)\nc = a.dot(b)\nprint(c.shape)\n")
	writeScript(t, "loop.tg", "x = 0\nwhile True:\n    x += 1\n")
	tests := []struct {
		name   string
		env    map[string]string
		yaml   string
		args   []string
		status int
		want   string // regexp on stderr
	}{
		{name: "bad DEBUG", env: map[string]string{"DEBUG": "abc"}, args: []string{"run", "sum.tg"},
			status: 1, want: `^tgc: invalid DEBUG value "abc": want an integer 0\.\.7\n$`},
		{name: "DEBUG out of range", env: map[string]string{"TGC_DEBUG": "11"}, args: []string{"emit", "sum.tg"},
			status: 1, want: `invalid TGC_DEBUG value "11"`},
		{name: "bad --debug", args: []string{"run", "sum.tg", "--debug", "x"},
			status: 2, want: `invalid argument "x" for "--debug"`},
		{name: "unknown device", env: map[string]string{"DEVICE": "TPUX"}, args: []string{"run", "sum.tg"},
			status: 1, want: `invalid DEVICE value "TPUX": unknown device`},
		{name: "yaml typo", yaml: "devcie: GO\n", args: []string{"run", "sum.tg"},
			status: 1, want: `tgc\.yaml: unknown key "devcie" \(did you mean "device"\?\)`},
		{name: "shape error", args: []string{"run", "shape.tg", "--device", "GO"},
			status: 1, want: `(?m)^shape\.tg:3:\d+: dot: cannot multiply \(2, 3\) by \(4, 5\)`},
		{name: "step limit", args: []string{"run", "loop.tg", "--device", "GO", "--max-steps", "5000"},
			status: 1, want: `loop\.tg:\d+:\d+: .*step limit`},
		{name: "missing file", args: []string{"run", "nope.tg"},
			status: 1, want: `^tgc: script nope\.tg does not exist\n$`},
		{name: "missing file emit", args: []string{"emit", "nope.tg"},
			status: 1, want: `^tgc: script nope\.tg does not exist\n$`},
		{name: "directory", args: []string{"run", "."},
			status: 1, want: `is a directory`},
		{name: "no file", args: []string{"run"},
			status: 2, want: `missing the script file`},
		{name: "unknown flag", args: []string{"run", "sum.tg", "--fast"},
			status: 2, want: `unknown flag: --fast\nRun 'tgc run --help' for usage`},
		{name: "unknown command", args: []string{"rnu"},
			status: 2, want: `unknown command "rnu"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if tc.yaml != "" {
				writeScript(t, "tgc.yaml", tc.yaml)
				defer os.Remove("tgc.yaml")
			}
			out, errs, st := tgc(t, tc.args...)
			if st != tc.status {
				t.Errorf("status %d, want %d", st, tc.status)
			}
			if !regexp.MustCompile(tc.want).MatchString(errs) {
				t.Errorf("stderr:\n%s\nwant match for %q", errs, tc.want)
			}
			if strings.Contains(errs, "Usage:") || strings.Contains(out, "Usage:") {
				t.Errorf("usage dump printed:\n%s%s", out, errs)
			}
		})
	}
}

func TestVersionAndCompletion(t *testing.T) {
	setup(t)
	out, _, st := tgc(t, "version")
	if st != 0 || !strings.HasPrefix(out, "tgc ") || !strings.Contains(out, "go1.") {
		t.Errorf("version: status %d, %q", st, out)
	}
	out, _, st = tgc(t, "completion", "bash")
	if st != 0 || !strings.Contains(out, "__start_tgc") {
		t.Errorf("completion bash: status %d, %d bytes", st, len(out))
	}
	out, _, st = tgc(t, "__complete", "run", "--device", "")
	if st != 0 || !strings.Contains(out, "GO\n") || !strings.Contains(out, "CPU\n") {
		t.Errorf("device completion: status %d, %q", st, out)
	}
}

// TestBeamRunThenEmit: `tgc run --beam` searches the matmul kernel and
// says so; a second run reuses the stored result without searching; `tgc
// emit --beam` uses it too (and says when a kernel has none).
func TestBeamRunThenEmit(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	f := writeScript(t, "matmul.tg", "a = Tensor.rand(48, 64).realize()\nb = Tensor.rand(64, 32).realize()\nc = a.dot(b).realize()\nprint(c.sum().item())\n")
	// Different seeds: the same kernels on new data (the realize tests
	// compare BEAM's results with the GO device).
	out, errs, st := tgc(t, "run", f, "--device=cpu", "--seed=1", "--beam=1", "--beam-budget=10s")
	if st != 0 || out == "" || !strings.Contains(errs, "beam r_48_32_64: ") {
		t.Fatalf("first run: status %d, stdout %q, want a search line in:\n%s", st, out, errs)
	}
	out, errs, st = tgc(t, "run", f, "--device=cpu", "--seed=2", "--beam=1")
	if st != 0 || out == "" || strings.Contains(errs, "beam r_48_32_64: ") || !strings.Contains(errs, "ran 4 kernels") {
		t.Fatalf("second run: status %d, stdout %q, want 4 kernels and no search in:\n%s", st, out, errs)
	}
	_, errs, st = tgc(t, "emit", f, "--device=cpu", "--beam=1", "-o", "plan")
	if st != 0 || strings.Contains(errs, "no stored search result") {
		t.Errorf("emit after the search: status %d:\n%s", st, errs)
	}
	if plan, err := os.ReadFile(filepath.Join("plan", "plan.json")); err != nil || !strings.Contains(string(plan), `"opts": "[UPCAST(`) {
		t.Errorf("plan.json does not record the matmul's opts (%v):\n%s", err, plan)
	}
	_, errs, st = tgc(t, "emit", f, "--device=cpu", "--beam=2", "-o", "plan2")
	if st != 0 || !strings.Contains(errs, "no stored search result for 2 kernels") {
		t.Errorf("emit with another width: status %d, want a note about the missing result:\n%s", st, errs)
	}
}
