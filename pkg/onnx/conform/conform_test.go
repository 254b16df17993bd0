package conform

import (
	"os"
	"slices"
	"strings"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/realize"
)

// The conformance suite: ONNX's backend test data through tgc, each outcome
// compared with testdata/expected.txt (every case that does not pass, and
// why). Every case runs on CPU (about a minute: a sample once let a
// regression of one node case through) and the targets are checked;
// a sample runs on GO and CL, every case with TGC_ONNX_FULL=1.

func full() bool { return os.Getenv("TGC_ONNX_FULL") != "" }

func cases(t *testing.T) []Case {
	t.Helper()
	cs, err := Cases(DefaultRoot, Groups...)
	if err != nil {
		t.Skipf("libonnx-testdata is not installed (Debian: apt-get install libonnx-testdata): %v", err)
	}
	return cs
}

// sample keeps every k-th node case and every case of the other groups.
func sample(cs []Case, k int) []Case {
	var out []Case
	i := 0
	for _, c := range cs {
		if c.Group == "node" {
			i++
			if i%k != 0 {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

func runOn(t *testing.T, device string, cs []Case) []Outcome {
	t.Helper()
	e, err := realize.Open(device, realize.Options{})
	if err != nil {
		t.Skipf("%s: %v", device, err)
	}
	outs := make([]Outcome, 0, len(cs))
	for _, c := range cs {
		o := Run(e, c)
		if strings.HasPrefix(o.Reason, "panic:") {
			t.Errorf("%s/%s panicked: %s", c.Group, c.Name, o.Reason)
		}
		outs = append(outs, o)
	}
	return outs
}

func check(t *testing.T, device string, outs []Outcome) {
	t.Helper()
	exp, err := ReadExpectations("testdata/expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	diffs, gained := exp.Check(outs)
	if len(diffs) > 0 {
		t.Errorf("%s: %d cases differ from testdata/expected.txt (if intended: go run ./tools/onnxconf -expect pkg/onnx/conform/testdata/expected.txt):\n%s",
			device, len(diffs), strings.Join(diffs, "\n"))
	}
	if len(gained) > 0 {
		t.Logf("%s: %d cases refused for a data type pass now (regenerate testdata/expected.txt and docs/onnx.md: go run ./tools/onnxconf -md docs/onnx.md -expect pkg/onnx/conform/testdata/expected.txt)", device, len(gained))
	}
	t.Logf("%s:\n%s", device, Summarize(outs).Text())
}

func TestConformanceCPU(t *testing.T) {
	outs := runOn(t, "CPU", cases(t))
	check(t, "CPU", outs)
	// The targets: every case of the pytorch groups and simple
	// outside the by-design refusals, 95 % of node.
	for _, g := range Summarize(outs).Groups {
		want := 1.0
		if g.Group == "node" {
			want = 0.95
		}
		if g.Rate() < want {
			t.Errorf("%s: %.1f %% of %d pass, the target is %.0f %%", g.Group, 100*g.Rate(), g.Total-g.ByDesign, 100*want)
		}
	}
}

// A sample on the interpreter and on OpenCL: the same expectations hold.
func TestConformanceOtherDevices(t *testing.T) {
	small := cases(t)
	if !full() {
		small = nil
		for i, c := range sample(cases(t), 15) {
			if c.Group == "node" || i%3 == 0 {
				small = append(small, c)
			}
		}
	}
	for _, dev := range []string{"GO", "CL", "CUDA"} {
		if !slices.Contains(backend.Names(), dev) {
			t.Logf("%s is not available", dev)
			continue
		}
		t.Run(dev, func(t *testing.T) { check(t, dev, runOn(t, dev, small)) })
	}
}
