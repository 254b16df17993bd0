package script

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"tgc/pkg/fileaccess"
	"tgc/pkg/ir"
	"tgc/pkg/realize"
	"tgc/pkg/safetensors"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// useGO makes a context on a new engine of the pure-Go device for the test.
func useGO(t *testing.T) *tensor.Context {
	t.Helper()
	ctx, _, err := realize.NewContext("GO", realize.Options{})
	if err != nil {
		t.Fatalf("GO device: %v", err)
	}
	return ctx
}

// run executes src as model.tg in ctx and returns stdout, stderr and the
// error.
func run(t *testing.T, ctx *tensor.Context, src string, maxSteps uint64) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(Options{File: "model.tg", Src: []byte(src), Stdout: &out, Stderr: &errOut, MaxSteps: maxSteps, Files: testFiles(t), Context: ctx})
	return out.String(), errOut.String(), err
}

// testFiles is the file access of test scripts: the current folder and the
// temporary folders of tests.
func testFiles(t *testing.T) *fileaccess.Policy {
	p := fileaccess.ForScript("")
	if err := p.Allow(os.TempDir(), "the tests' temporary folders"); err != nil {
		t.Fatal(err)
	}
	return p
}

// firstLine is the first line of an error's text.
func firstLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func TestErrors(t *testing.T) {
	ctx := useGO(t)
	tests := []struct {
		name, src, want string
	}{
		{"shape error at the op", "x = Tensor.rand(32, 784)\nw = Tensor.rand(128, 10)\n\n\n\n\nlogits = x.dot(w)\n",
			"model.tg:7:12: dot: cannot multiply (32, 784) by (128, 10): inner dimensions 784 and 128 differ"},
		{"chained op names the failing method", "x = Tensor.rand(2, 3)\ny = x.relu().reshape(4, 2).sum()\n",
			"model.tg:2:14: reshape: cannot reshape (2, 3) (6 elements) into (4, 2) (8 elements)"},
		{"binary op", "a = Tensor.rand(2, 3)\nb = Tensor.rand(4)\nc = a + b\n",
			"model.tg:3:7: add: shapes [(2, 3) (4,)] cannot be broadcast together"},
		{"unknown method", "x = Tensor.rand(3)\ny = x.sofmax()\n",
			`model.tg:2:7: Tensor has no method "sofmax" (did you mean "softmax"?)`},
		{"unknown property", "x = Tensor.rand(3)\nprint(x.shap)\n",
			`model.tg:2:9: Tensor has no attribute "shap" (did you mean "shape"?)`},
		{"unknown method without suggestion", "x = Tensor.rand(3)\nx.frobnicate()\n",
			`model.tg:2:3: Tensor has no method "frobnicate"`},
		{"unknown static", "x = Tensor.rnd(3)\n", `model.tg:1:12: Tensor has no method "rnd" (did you mean "rand"?)`},
		{"unknown dtype", "d = dtypes.flaot32\n", `model.tg:1:12: dtypes has no attribute "flaot32" (did you mean "float32"?)`},
		{"wrong argument type", "x = Tensor.rand(3)\nx.sum(axis=\"a\")\n",
			"model.tg:2:3: sum: for parameter \"axis\": got string, want int, tuple of ints or None"},
		{"unknown keyword", "x = Tensor.rand(3)\nx.softmax(dim=0)\n", "model.tg:2:3: softmax: unexpected keyword argument \"dim\""},
		{"tensor plus string", "x = Tensor.rand(3)\ny = x + \"a\"\n", "model.tg:2:7: unknown binary op: Tensor + string"},
		{"truth of a tensor", "x = Tensor.rand(3)\nif x > 0.5:\n    pass\n",
			"model.tg:2:4: the truth value of a Tensor is ambiguous: compare its value instead, e.g. t.item() > 0 or (t > 0).sum().item() > 0"},
		{"bool of a tensor", "x = Tensor.rand(3)\nb = bool(x)\n", "model.tg:2:5: bool: the truth value of a Tensor is ambiguous"},
		{"not of a tensor", "x = Tensor.rand(3)\nb = not x\n", "model.tg:2:9: the truth value of a Tensor is ambiguous"},
		{"item of many elements", "x = Tensor.rand(3)\nv = x.item()\n", "model.tg:2:7: item: tensor of shape (3,) has 3 elements, item() needs exactly one"},
		{"syntax error", "x = Tensor.rand(3\ny = 2\n", "model.tg:2:2: got identifier, want ','"},
		{"undefined name", "x = Tensr.rand(3)\n", "model.tg:1:5: undefined: Tensr (did you mean Tensor?)"},
		{"columns map back through the slice rewrite", "x = Tensor.rand(4, 4)\ny = x[0:2, ::2].reshape(3)\n",
			"model.tg:2:17: reshape: cannot reshape (2, 2) (4 elements) into (3,) (3 elements)"},
		{"index out of range", "x = Tensor.rand(4, 4)\ny = x[5]\n", "model.tg:2:6: index:"},
		{"ragged list", "x = Tensor([[1, 2], [3]])\n",
			"model.tg:1:5: Tensor: the nested list is not rectangular: data[1] should be a list of 2 elements, got a list of 1 elements"},
		{"Tensor with a string", "x = Tensor(\"abc\")\n", "model.tg:1:5: Tensor: data is string, want a number"},
		{"load is refused", "load(\"x.star\", \"y\")\n", "model.tg:1:1: cannot load x.star: load is not supported in .tg scripts"},
		{"shift of floats", "x = Tensor.rand(3)\ny = x << 2\n", "model.tg:2:7: lshift: needs integer tensors, got float32"},
		{"shift by floats", "x = Tensor([1, 2])\ny = x.rshift(Tensor([1.5, 2.0]))\n", "model.tg:2:7: rshift: needs integer tensors, got float32"},
		{"negative shift count", "x = Tensor([1, 2])\ny = x >> -1\n", "model.tg:2:7: rshift: negative shift count -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := run(t, ctx, tc.src, 0)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error is %T, want *script.Error: %v", err, err)
			}
			if got := firstLine(err); !strings.HasPrefix(got, tc.want) {
				t.Errorf("error:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestErrorTraceback(t *testing.T) {
	ctx := useGO(t)
	src := `def layer(x, w):
    return x.dot(w)

def model(x):
    return layer(x, Tensor.rand(5, 2))

y = model(Tensor.rand(3, 4))
`
	_, _, err := run(t, ctx, src, 0)
	want := `model.tg:2:14: dot: cannot multiply (3, 4) by (5, 2): inner dimensions 4 and 5 differ
Traceback (most recent call last):
  model.tg:7:5: in <toplevel>
  model.tg:5:12: in model
  model.tg:2:14: in layer`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	var se *Error
	if errors.As(err, &se) {
		if se.Pos != (tensor.Pos{File: "model.tg", Line: 2, Col: 14}) || len(se.Stack) != 3 {
			t.Errorf("Error fields: %+v", se)
		}
	}
}

func TestStepLimit(t *testing.T) {
	_, _, err := run(t, nil, "i = 0\nwhile True:\n    i += 1\n", 10000)
	want := "script exceeded the step limit of 10000 steps (raise it with --max-steps)"
	if err == nil || !strings.Contains(firstLine(err), want) || !strings.HasPrefix(err.Error(), "model.tg:") {
		t.Errorf("error %v, want %q at a script position", err, want)
	}
	// A loop that fits the limit runs.
	if _, _, err := run(t, nil, "n = 0\nfor i in range(100):\n    n += i\n", 10000); err != nil {
		t.Errorf("short loop: %v", err)
	}
}

func TestPanicBecomesError(t *testing.T) {
	in := newInterp(nil, "model.tg", nil, nil, 0)
	boom := pyrt.Builtin("boom", func(c *pyrt.Call) (starlark.Value, error) { panic("kaboom") })
	_, err := starlark.Call(in.thread, boom, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "boom: internal error: kaboom") {
		t.Errorf("panic gave %v", err)
	}
}

func TestValues(t *testing.T) {
	ctx := useGO(t)
	src := `x = Tensor([[1, 2], [3, 4]])
f = Tensor([1.5])
print(x, x.dtype, x.shape, x.ndim, x.numel(), len(x))
print(f.dtype, Tensor([True, False]).dtype, Tensor(2.5).shape, Tensor([]).shape)
print(x.tolist(), x.sum().item(), f.item(), (x > 2).tolist(), (x > 2).any().item())
print(Tensor([[1, 2], [3, 4]], dtype=dtypes.float16).dtype, Tensor([1, 2.5, -3]).tolist())
print(x.T.tolist(), x[1].tolist(), x[:, 0].tolist(), x[1:2, ::-1].tolist(), x[..., 1].tolist(), x[None].shape)
print(x.reshape(-1).tolist(), x.reshape((4, 1)).shape, x.reshape(None, 2).shape, Tensor.cat(x, x, dim=1).shape)
print([r.tolist() for r in x], x.dtype == dtypes.int32, x.dtype == dtypes.float, x.dtype != dtypes.int)
print(Tensor.arange(5).tolist(), Tensor.arange(0.0, 1.0, 0.25).tolist(), Tensor.full((2,), 7).dtype)
print((1, 2), (3,), "s", 1.0, sep=", ", end="!\n")
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `<Tensor shape=(2, 2) dtype=int32> dtypes.int32 (2, 2) 2 4 2
dtypes.float32 dtypes.bool () (0,)
[[1, 2], [3, 4]] 10 1.5 [[False, False], [True, True]] True
dtypes.float16 [1.0, 2.5, -3.0]
[[1, 3], [2, 4]] [3, 4] [1, 3] [[4, 3]] [2, 4] (1, 2, 2)
[1, 2, 3, 4] (4, 1) (2, 2) (2, 4)
[[1, 2], [3, 4]] True False False
[0, 1, 2, 3, 4] [0.0, 0.25, 0.5, 0.75] dtypes.int32
(1, 2), (3,), s, 1.0!
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestComparisons(t *testing.T) {
	ctx := useGO(t)
	src := `x = Tensor([1.0, 2.0, 3.0])
print((x < 2).tolist(), (x <= 2).tolist(), (x > 2).tolist(), (x >= 2).tolist(), (x == 2).tolist(), (x != 2).tolist())
print((2 < x).tolist(), (2 >= x).tolist(), (x == x).dtype, (x < Tensor([3, 2, 1])).tolist())
print(1 < 2, "a" == "a", [1] != [2], None == None, x == None, x != "s", (1, 2) < (1, 3))
l = [x]
print(x in l, 3 > 2 and 2 > 1, [i for i in range(5) if i % 2 == 0])
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `[True, False, False] [True, True, False] [False, False, True] [False, True, True] [False, True, False] [True, False, True]
[False, False, True] [True, True, False] dtypes.bool [True, False, False]
True True True True False True True
True True [0, 2, 4]
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if _, _, err := run(t, ctx, "print(1 < \"a\")\n", 0); err == nil || !strings.Contains(err.Error(), "not implemented") {
		t.Errorf("int < string: %v", err)
	}
}

func TestScalarDTypes(t *testing.T) {
	ctx := useGO(t)
	env := map[string]*tensor.Tensor{
		"i32": ctx.Full([]int{2}, 3, ir.Int32),
		"u8":  ctx.Full([]int{2}, 3, ir.Uint8),
		"f16": ctx.Full([]int{2}, 3, ir.Float16),
		"f32": ctx.Full([]int{2}, 3, ir.Float32),
		"b":   ctx.Full([]int{2}, 1, ir.Bool),
	}
	tests := []struct {
		expr string
		want ir.DType
	}{
		{"i32 + 1", ir.Int32}, {"1 + i32", ir.Int32}, {"i32 + 1.5", ir.Float32}, {"1.5 + i32", ir.Float32},
		{"i32 * 2", ir.Int32}, {"2 * i32", ir.Int32}, {"i32 - 2.0", ir.Float32}, {"2.0 - i32", ir.Float32},
		{"i32 / 2", ir.Float32}, {"2 / i32", ir.Float32}, {"i32 // 2", ir.Int32}, {"7 // i32", ir.Int32},
		{"i32 % 2", ir.Int32}, {"7 % i32", ir.Int32}, {"u8 * 2", ir.Uint8}, {"2 * u8", ir.Uint8},
		{"u8 + 1.5", ir.Float32}, {"f16 * 2.5", ir.Float16}, {"2.5 * f16", ir.Float16}, {"f16 + 1", ir.Float16},
		{"f32 + i32", ir.Float32}, {"u8 + i32", ir.Int32}, {"f16 + f32", ir.Float32},
		{"-i32", ir.Int32}, {"-f16", ir.Float16}, {"b & b", ir.Bool}, {"~b", ir.Bool}, {"~i32", ir.Int32},
		{"i32 < 2", ir.Bool}, {"2.5 > f32", ir.Bool}, {"i32 << 2", ir.Int32}, {"i32 >> 1", ir.Int32},
		{"b + True", ir.Bool}, {"i32.maximum(0.5)", ir.Float32}, {"(i32 > 0).where(1.5, -2.0)", ir.Float32},
		{"(i32 > 0).where(1, 0)", ir.Int32}, {"(i32 > 0).where(f16, 0)", ir.Float16},
	}
	for _, tc := range tests {
		got, err := Eval(ctx, tc.expr, env)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if got.DType() != tc.want {
			t.Errorf("%s: dtype %s, want %s", tc.expr, got.DType(), tc.want)
		}
	}
	for expr, want := range map[string]float64{"7 // i32": 2, "2 - i32": -1, "i32 // 2": 1, "1 / i32": 1.0 / 3} {
		got, err := Eval(ctx, expr, env)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := got.Floats()
		if err != nil {
			t.Fatal(err)
		}
		if d := vals[0] - want; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s = %v, want %v", expr, vals[0], want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	if _, err := Eval(nil, "1 + 2", nil); err == nil || !strings.Contains(err.Error(), "gives int, not a Tensor") {
		t.Errorf("non-tensor result: %v", err)
	}
	if _, err := Eval(nil, "x.frob()", map[string]*tensor.Tensor{"x": tensor.NewContext(nil).Full([]int{1}, 0, ir.Float32)}); err == nil ||
		!strings.HasPrefix(err.Error(), `<expr>:1:3: Tensor has no method "frob"`) {
		t.Errorf("unknown method: %v", err)
	}
	if _, err := Eval(nil, "x[1:2, ", nil); err == nil || !strings.HasPrefix(err.Error(), "<expr>:1:") {
		t.Errorf("syntax error: %v", err)
	}
}

func TestSafetensorsRoundTrip(t *testing.T) {
	ctx := useGO(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "w.safetensors")
	src := `w = {
    "f32": Tensor([[1.5, -2.0], [0.25, 4.0]]),
    "f16": Tensor([1.0, 0.5], dtype=dtypes.float16),
    "i32": Tensor.arange(3),
    "u8": Tensor([255, 0], dtype=dtypes.uint8),
    "i8": Tensor([-128, 127], dtype=dtypes.int8),
    "b": Tensor([True, False]),
    "lazy": Tensor.ones(2, 2) * 3,
    "scalar": Tensor(7.0),
}
nn.state.safe_save(w, PATH)
r = nn.state.safe_load(PATH)
for k in sorted(r.keys()):
    print(k, r[k].dtype, r[k].shape, r[k].tolist() == w[k].tolist())
`
	src = strings.ReplaceAll(src, "PATH", "\""+path+"\"")
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `b dtypes.bool (2,) True
f16 dtypes.float16 (2,) True
f32 dtypes.float32 (2, 2) True
i32 dtypes.int32 (3,) True
i8 dtypes.int8 (2,) True
lazy dtypes.float32 (2, 2) True
scalar dtypes.float32 () True
u8 dtypes.uint8 (2,) True
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	sts, _, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, st := range sts {
		names[st.Name] = st.DType
	}
	for k, dt := range map[string]string{"f32": "F32", "f16": "F16", "i32": "I32", "u8": "U8", "i8": "I8", "b": "BOOL"} {
		if names[k] != dt {
			t.Errorf("%s stored as %q, want %s", k, names[k], dt)
		}
	}
}

func TestSafetensorsConversions(t *testing.T) {
	ctx := useGO(t)
	path := filepath.Join(t.TempDir(), "c.safetensors")
	f64 := make([]byte, 16)
	copy(f64, []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f})  // 1.5
	copy(f64[8:], []byte{0, 0, 0, 0, 0, 0, 0, 0xc0}) // -2
	i64 := []byte{5, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	err := safetensors.WriteFile(path, []safetensors.Tensor{
		{Name: "d", DType: "F64", Shape: []int{2}, Data: f64},
		{Name: "l", DType: "I64", Shape: []int{2}, Data: i64},
		{Name: "h", DType: "BF16", Shape: []int{1}, Data: []byte{0xc0, 0x3f}}, // 1.5
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, ctx, `r = nn.state.safe_load("`+path+`")
print(r["d"].dtype, r["d"].tolist(), r["l"].dtype, r["l"].tolist(), r["h"].tolist())
`, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "dtypes.float64 [1.5, -2.0] dtypes.int64 [5, -1] [1.5]\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestCorruptSafetensors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, data, want string
	}{
		{"short.safetensors", "abc", "file is 3 bytes, shorter than the 8-byte length prefix"},
		{"huge.safetensors", "\xff\xff\xff\xff\xff\xff\xff\x7f{}", "header"},
		{"badjson.safetensors", "\x04\x00\x00\x00\x00\x00\x00\x00{x}}", ""},
		{"offsets.safetensors", "\x40\x00\x00\x00\x00\x00\x00\x00" + `{"a":{"dtype":"F32","shape":[1000],"data_offsets":[0,4000]}}    `, ""},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := run(t, nil, "\nw = nn.state.safe_load(\""+path+"\")\n", 0)
		prefix := "model.tg:2:14: safe_load: safetensors: " + path + ": "
		if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want prefix %q containing %q", tc.name, err, prefix, tc.want)
		}
	}
	_, _, err := run(t, nil, "w = nn.state.safe_load(\""+filepath.Join(dir, "missing")+"\")\n", 0)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestStateDict(t *testing.T) {
	ctx := useGO(t)
	src := `def Linear(i, o):
    return struct(weight = Tensor.kaiming_uniform(o, i), bias = Tensor.zeros(o))
model = struct(l1 = Linear(4, 3), layers = [Linear(3, 2)], name = "m")
sd = nn.state.get_state_dict(model)
print(sorted(sd.keys()), len(nn.state.get_parameters(model)), sd["l1.weight"].shape)
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[\"l1.bias\", \"l1.weight\", \"layers.0.bias\", \"layers.0.weight\"] 4 (3, 4)\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestTrainingFlag(t *testing.T) {
	ctx := useGO(t)
	src := `x = Tensor.ones(1000)
print(Tensor.training, x.dropout(0.5).sum().item())
Tensor.training = True
y = x.dropout(0.5)
print(Tensor.training, y.sum().item() != 1000.0, (y == 0).sum().item() > 300)
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "False 1000.0\nTrue True True\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestManualSeed(t *testing.T) {
	ctx := useGO(t)
	src := `Tensor.manual_seed(42)
a = Tensor.rand(4).tolist()
Tensor.manual_seed(42)
b = Tensor.rand(4).tolist()
c = Tensor.rand(4).tolist()
print(a == b, a != c, Tensor.randint(100, high=5).max().item() < 5, Tensor.randn(3, 2).shape)
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "True True True (3, 2)\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// traceEngine is a stand-in for the emit engine: it realizes nothing and
// reads zeros.
type traceEngine struct{}

func (traceEngine) Tracing() bool                       { return true }
func (traceEngine) Realize(nodes ...*tensor.Node) error { return nil }
func (traceEngine) Read(n *tensor.Node) ([]byte, error) {
	return make([]byte, n.Numel()*n.DType.Size()), nil
}

func TestTraceModeWarnings(t *testing.T) {
	src := `c = Tensor.rand(3, 3).sum()
for i in range(3):
    v = c.item()
print(v, Tensor.rand(2).tolist())
`
	out, stderr, err := run(t, tensor.NewContext(traceEngine{}), src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out != "0.0 [0.0, 0.0]\n" {
		t.Errorf("stdout %q", out)
	}
	msg := "warning: value read in trace mode: this tensor becomes an output of the plan and reads as zeros; control flow that depends on it is not traced\n"
	if want := "model.tg:3:11: " + msg + "model.tg:4:25: " + msg; stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
}

func TestNoEngine(t *testing.T) {
	_, _, err := run(t, nil, "x = Tensor.rand(2)\nprint(x.sum().item())\n", 0)
	if err == nil || !strings.Contains(err.Error(), "no engine is installed") {
		t.Errorf("got %v", err)
	}
}

func TestArgv(t *testing.T) {
	var out bytes.Buffer
	err := Run(Options{File: "a.tg", Src: []byte("print(argv)\n"), Stdout: &out, Argv: []string{"x", "y"}})
	if err != nil || out.String() != "[\"x\", \"y\"]\n" {
		t.Errorf("argv: %q, %v", out.String(), err)
	}
}

func TestRunReadsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.tg")
	if err := os.WriteFile(path, []byte("x = 1\nx.foo()\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Run(Options{File: path, Stdout: &bytes.Buffer{}})
	if err == nil || !strings.HasPrefix(err.Error(), path+":2:3: ") {
		t.Errorf("got %v", err)
	}
	if err := Run(Options{File: filepath.Join(t.TempDir(), "none.tg")}); err == nil || !strings.Contains(err.Error(), "cannot read script") {
		t.Errorf("missing file: %v", err)
	}
}

func TestSequenceSlices(t *testing.T) {
	src := `l = [0, 1, 2, 3, 4]
s = "hello"
print(l[1:3], l[::-1], l[-2:], l[:-3:-1], l[10:], s[1:4], s[::2], (1, 2, 3)[1:], l[3:1])
`
	out, _, err := run(t, nil, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[1, 2] [4, 3, 2, 1, 0] [3, 4] [4, 3] [] ell hlo (2, 3) []\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	if _, _, err := run(t, nil, "l = [1, 2]\nprint(l[::0])\n", 0); err == nil || !strings.Contains(err.Error(), "slice step cannot be zero") {
		t.Errorf("zero step: %v", err)
	}
	if _, _, err := run(t, nil, "print(len[1:2])\n", 0); err == nil || !strings.Contains(err.Error(), "invalid slice operand builtin_function_or_method") {
		t.Errorf("bad operand: %v", err)
	}
}
