package script

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"tgc/pkg/mnist"
	"tgc/pkg/report"
)

// writeMNIST writes a small synthetic MNIST into dir.
func writeMNIST(t *testing.T, dir string, nTrain, nTest int) {
	t.Helper()
	if err := mnist.WriteSynthetic(dir, nTrain, nTest); err != nil {
		t.Fatal(err)
	}
}

func TestMNISTDataset(t *testing.T) {
	ctx := useGO(t)
	dir := t.TempDir()
	writeMNIST(t, dir, 30, 20)
	src := `X_train, Y_train, X_test, Y_test = nn.datasets.mnist(dir="` + dir + `")
print(X_train.shape, X_train.dtype, Y_train.shape, Y_train.dtype, X_test.shape, Y_test.shape)
print(Y_train[:12].tolist(), Y_test[:3].tolist(), X_train[4, 0, 8].tolist()[:3], X_train[4, 0, 0].sum().item())
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `(30, 1, 28, 28) dtypes.uint8 (30,) dtypes.uint8 (20, 1, 28, 28) (20,)
[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1] [3, 4, 5] [255, 255, 255] 0
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	// The directory comes from TGC_MNIST_DIR when not given.
	t.Setenv(MNISTDirEnv, dir)
	if out, _, err := run(t, ctx, "print(nn.datasets.mnist()[3].shape)", 0); err != nil || out != "(20,)\n" {
		t.Errorf("with %s: %q, %v", MNISTDirEnv, out, err)
	}

	// A folder without the files says how to get them.
	empty := t.TempDir()
	_, _, err = run(t, ctx, `X = nn.datasets.mnist(dir="`+empty+`")`, 0)
	if err == nil {
		t.Fatal("no error for an empty data folder")
	}
	for _, w := range []string{"model.tg:1:17: mnist: MNIST data not found in " + empty, "go mod download " + mnist.Module, "--data DIR"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestHostGather(t *testing.T) {
	ctx := useGO(t)
	src := `x = Tensor.arange(12).reshape(4, 3).realize()
idx = Tensor([3, 0, -1, 3])
g = x[idx]
print(g.shape, g.dtype, g.tolist())
print(x[Tensor([[1], [2]])].shape)
u = Tensor([[1, 2], [3, 4], [5, 6]], dtype=dtypes.uint8)
print(u[Tensor.arange(3).flip(0)].tolist(), u[Tensor([1], dtype=dtypes.uint8)].dtype)
v = (Tensor.arange(6).reshape(3, 2) * 10)[1:]
print(v[Tensor([1, 1, 0])].tolist(), (x + 1)[Tensor([2])].tolist())
samples = Tensor.randint(5, high=4)
xs = x[samples]
print([r[0] // 3 for r in xs.tolist()] == samples.tolist())
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `(4, 3) dtypes.int32 [[9, 10, 11], [0, 1, 2], [9, 10, 11], [9, 10, 11]]
(2, 1, 3)
[[5, 6], [3, 4], [1, 2]] dtypes.uint8
[[40, 50], [40, 50], [20, 30]] [[7, 8, 9]]
True
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	for _, c := range []struct{ src, err string }{
		{"x = Tensor.zeros(3, 2)\nx[Tensor([3])]", "model.tg:2:2: index: index 3 is out of bounds for dimension 0 with size 3"},
		{"x = Tensor.zeros(3, 2)\nx[Tensor([1.0])]", "the index tensor must be an integer tensor"},
		{"x = Tensor.zeros(3, 2, requires_grad=True)\nx[Tensor([1])]", "has no gradient"},
	} {
		_, _, err := run(t, ctx, c.src, 0)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.err)
		}
	}
}

func TestTrainingSession(t *testing.T) {
	ctx := useGO(t)
	src := `print(config["steps"], config.get("lr"), config.get("missing", 7))
t = trange(config["steps"], batch=4)
for i in t:
    report(step=i, loss=Tensor([2.0]) / (i + 1), accuracy=None if i < 4 else 0.5)
    t.set_description(f"step {i}")
print(t.n, t.total)
for i in trange(3):
    if i == 1:
        break
report(accuracy=0.75)
`
	var out bytes.Buffer
	s := &TrainSession{Config: map[string]any{"steps": 5, "lr": 0.5, "data": "x"}, Every: 2}
	err := RunTraining(Options{File: "model.tg", Src: []byte(src), Stdout: &out, Context: ctx}, s)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "5 0.5 7" || !strings.HasPrefix(lines[1], "step 2/5 step 1 ") || !strings.Contains(lines[1], "samples/s") ||
		!strings.HasPrefix(lines[3], "step 5/5 step 4") || lines[4] != "5 5" {
		t.Errorf("output:\n%s", out.String())
	}
	if s.Steps != 6 || s.Batch != 4 || s.TrainTime <= 0 {
		t.Errorf("session steps %d batch %d time %v, want 6 steps (5 + 1 before the break), batch 4", s.Steps, s.Batch, s.TrainTime)
	}
	series := map[string]*report.Series{}
	for _, ser := range s.Recorder.Series() {
		series[ser.Name] = ser
	}
	if l := series["loss"]; l == nil || len(l.Vals) != 5 || math.Abs(l.Vals[4]-0.4) > 1e-6 {
		t.Errorf("loss series %+v", l)
	}
	if a := series["accuracy"]; a == nil || len(a.Steps) != 2 || a.Steps[1] != 5 || a.Vals[1] != 0.75 {
		t.Errorf("accuracy series %+v", a)
	}

	// Outside a session config is empty and report() records nowhere.
	if out, _, err := run(t, ctx, "report(loss=1.0)\nprint(len(config))", 0); err != nil || out != "0\n" {
		t.Errorf("without a session: %q, %v", out, err)
	}
	// A NaN loss stops the script, naming the step.
	_, _, err = run(t, ctx, "for i in range(5):\n    loss = Tensor([-1.0 + 1 - i]).sqrt().sum()\n    report(step=i, loss=loss)\n", 0)
	if err == nil || !strings.Contains(err.Error(), "model.tg:3:5: loss is NaN at step 1: training stopped") {
		t.Errorf("NaN loss: %v", err)
	}
	for _, c := range []struct{ src, err string }{
		{"report(1.0)", "keyword arguments only"},
		{"report(loss=Tensor([1.0, 2.0]))", "want one element"},
		{"report(loss=\"x\")", "want a number"},
		{"trange(3).foo", `trange has no attribute "foo"`},
		{"config[\"x\"] = 1", "frozen"},
	} {
		_, _, err := run(t, ctx, c.src, 0)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.err)
		}
	}
}
