// Package conform runs ONNX's backend test data (Debian's libonnx-testdata:
// node, pytorch-converted, pytorch-operator, simple) through tgc and
// compares the outputs with ONNX's tolerances. The Go test and the
// generator of docs/onnx.md's conformance table share it.
package conform

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"tgc/pkg/onnx"
	"tgc/pkg/tensor"
)

// DefaultRoot is where Debian's libonnx-testdata installs the cases.
const DefaultRoot = "/usr/share/libonnx-testdata/data"

// Groups are the folders of the test data, in table order.
var Groups = []string{"node", "pytorch-converted", "pytorch-operator", "simple"}

// ONNX's backend test tolerances (onnx/backend/test/runner).
const (
	RTol = 1e-3
	ATol = 1e-7
)

// Case is one test: a model and its data sets.
type Case struct {
	Group, Name, Dir string
}

// Status of one case.
type Status string

const (
	Pass    Status = "pass"
	Fail    Status = "fail"
	Refused Status = "refused" // refused at load time, by design or as a gap
)

// Outcome is the result of one case.
type Outcome struct {
	Case
	Status   Status
	Category string // for refusals: onnx.Cat*
	Reason   string // the first line of the error or mismatch
	Time     time.Duration
}

// ByDesign says whether the case is outside what tgc means to run (a
// refusal of SequenceMap, sequence inputs and outputs, strings, optional
// types, training or random operators).
func (o Outcome) ByDesign() bool { return o.Status == Refused && onnx.ByDesign(o.Category) }

// Cases lists the cases of the given groups under root, sorted by name.
func Cases(root string, groups ...string) ([]Case, error) {
	var cs []Case
	for _, g := range groups {
		ents, err := os.ReadDir(filepath.Join(root, g))
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			dir := filepath.Join(root, g, e.Name())
			if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err == nil {
				cs = append(cs, Case{Group: g, Name: e.Name(), Dir: dir})
			}
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Group != cs[j].Group {
			return cs[i].Group < cs[j].Group
		}
		return cs[i].Name < cs[j].Name
	})
	return cs, nil
}

var modelPath = regexp.MustCompile(`\S*/model\.onnx: `)

// Run runs one case on the engine, in a context of its own. A panic is
// caught and reported as a failure (it is a bug: tgc must never panic on a
// model).
func Run(e tensor.Engine, c Case) (o Outcome) {
	o.Case = c
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			o.Status, o.Reason = Fail, fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
		}
		o.Time = time.Since(start)
	}()
	m, err := onnx.Load(filepath.Join(c.Dir, "model.onnx"))
	var ref *onnx.RefusedError
	switch {
	case errors.As(err, &ref):
		o.Status, o.Category, o.Reason = Refused, ref.Category(), firstLine(ref.Error())
		return o
	case err != nil:
		o.Status, o.Reason = Fail, firstLine(err.Error())
		return o
	}
	sets, _ := filepath.Glob(filepath.Join(c.Dir, "test_data_set_*"))
	sort.Strings(sets)
	if len(sets) == 0 {
		o.Status, o.Reason = Fail, "no test_data_set folders"
		return o
	}
	for _, set := range sets {
		if err := runSet(tensor.NewContext(e), m, set); err != nil {
			if errors.As(err, &ref) {
				o.Status, o.Category, o.Reason = Refused, ref.Category(), firstLine(ref.Error())
				return o
			}
			o.Status, o.Reason = Fail, firstLine(fmt.Sprintf("%s: %v", filepath.Base(set), err))
			return o
		}
	}
	o.Status = Pass
	return o
}

// firstLine is the error's first line without the case's own path.
func firstLine(s string) string {
	s = modelPath.ReplaceAllString(s, "")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// runSet runs one data set: inputs bound by name where the file names an
// input, else in the graph's input order.
func runSet(ctx *tensor.Context, m *onnx.Model, set string) error {
	inputs := map[string]onnx.Input{}
	files, _ := filepath.Glob(filepath.Join(set, "input_*.pb"))
	sortNumbered(files)
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		name, a, err := onnx.DecodeTensor(data, "")
		if err != nil {
			return fmt.Errorf("%s: %v", filepath.Base(f), err)
		}
		if !m.HasInput(name) {
			if i >= len(m.Inputs) {
				return fmt.Errorf("%s: the model has %d inputs", filepath.Base(f), len(m.Inputs))
			}
			name = m.Inputs[i].Name
		}
		for _, vi := range m.Inputs {
			if vi.Name == name {
				bfloat16Bits(a, vi.Type)
			}
		}
		inputs[name] = onnx.Input{Array: a}
	}
	outs, err := m.Run(ctx, inputs, onnx.RunOptions{})
	if err != nil {
		return err
	}
	got, err := onnx.RealizeOutputs(outs)
	if err != nil {
		return err
	}
	wantFiles, _ := filepath.Glob(filepath.Join(set, "output_*.pb"))
	sortNumbered(wantFiles)
	if len(wantFiles) != len(outs) {
		return fmt.Errorf("%d expected outputs, the model has %d", len(wantFiles), len(outs))
	}
	for i, f := range wantFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		_, want, err := onnx.DecodeTensor(data, "")
		if err != nil {
			return fmt.Errorf("%s: %v", filepath.Base(f), err)
		}
		bfloat16Bits(want, m.Outputs[i].Type)
		if err := Compare(got[i], want); err != nil {
			return fmt.Errorf("output %q: %v", m.Outputs[i].Name, err)
		}
	}
	return nil
}

// bfloat16Bits retags a uint16 array as the bfloat16 the model declares:
// ONNX 1.12 writes bfloat16 test tensors as their uint16 bit patterns
// (numpy has no bfloat16).
func bfloat16Bits(a *onnx.Array, declared onnx.DataType) {
	if declared == onnx.BFloat16 && a.Type == onnx.Uint16 {
		a.Type = onnx.BFloat16
	}
}

// sortNumbered sorts input_2.pb before input_10.pb.
func sortNumbered(files []string) {
	num := func(f string) int {
		b := filepath.Base(f)
		n := 0
		for _, c := range b[strings.IndexByte(b, '_')+1:] {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	sort.Slice(files, func(i, j int) bool { return num(files[i]) < num(files[j]) })
}

// Compare checks dtype, shape and values as ONNX's runner does
// (numpy.testing.assert_allclose: |got-want| <= atol + rtol*|want|, NaN
// equal to NaN, infinities equal only to themselves).
func Compare(got, want *onnx.Array) error {
	if got.Type != want.Type {
		return fmt.Errorf("dtype %s, expected %s", got.Type.Name(), want.Type.Name())
	}
	if !equalShape(got.Shape, want.Shape) {
		return fmt.Errorf("shape %s, expected %s", tensor.FormatShape(got.Shape), tensor.FormatShape(want.Shape))
	}
	bad, first := 0, -1
	var worst float64
	for i := range want.Numel() {
		var ok bool
		var diff float64
		if want.Type.IsFloat() {
			g, w := got.Float(i), want.Float(i)
			switch {
			case math.IsNaN(w):
				ok = math.IsNaN(g)
			case math.IsInf(w, 0):
				ok = g == w
			default:
				diff = math.Abs(g - w)
				ok = diff <= ATol+RTol*math.Abs(w)
			}
		} else {
			ok = got.Int(i) == want.Int(i)
		}
		if !ok {
			bad++
			if first < 0 {
				first = i
			}
			worst = max(worst, diff)
		}
	}
	if bad > 0 {
		if want.Type.IsFloat() {
			return fmt.Errorf("%d of %d values differ (first at %d: %g, expected %g)", bad, want.Numel(), first, got.Float(first), want.Float(first))
		}
		return fmt.Errorf("%d of %d values differ (first at %d: %d, expected %d)", bad, want.Numel(), first, got.Int(first), want.Int(first))
	}
	return nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
