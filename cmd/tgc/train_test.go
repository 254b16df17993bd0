package main

import (
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"tgc/models"
	"tgc/pkg/mnist"
	"tgc/pkg/safetensors"
)

// writeMNIST writes a small synthetic MNIST into a new folder.
func writeMNIST(t *testing.T, nTrain, nTest int) string {
	t.Helper()
	dir := t.TempDir()
	if err := mnist.WriteSynthetic(dir, nTrain, nTest); err != nil {
		t.Fatal(err)
	}
	return dir
}

var progressRE = regexp.MustCompile(`(?m)^step (\d+)/(\d+) loss ([0-9.]+) \d+ samples/s \([0-9.]+ steps/s\)$`)

// TestTrainMNIST is CI's training run: the built-in mlp, a few steps of a
// small batch on a small synthetic MNIST, on the GO device.
func TestTrainMNIST(t *testing.T) {
	setup(t)
	data := writeMNIST(t, 200, 50)
	out, errs, st := tgc(t, "train", "mnist", "--data", data, "--device", "GO", "--steps", "24", "--batch", "16",
		"--log-every", "6", "--plot", "loss.png", "--save", "mlp.safetensors", "--min-accuracy", "0.5")
	if st != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
	}
	// Plain progress lines (not a terminal), and a loss that decreases.
	m := progressRE.FindAllStringSubmatch(out, -1)
	if len(m) != 4 || m[0][1] != "6" || m[3][1] != "24" || m[3][2] != "24" {
		t.Fatalf("progress lines %q in\n%s", m, out)
	}
	first, _ := strconv.ParseFloat(m[0][3], 64)
	last, _ := strconv.ParseFloat(m[3][3], 64)
	if !(last < first) {
		t.Errorf("loss did not decrease: %v at step 6, %v at step 24", first, last)
	}
	for _, re := range []string{`(?m)^test accuracy +\d+\.\d\d%$`, `(?m)^steps +24$`, `(?m)^batch +16$`, `(?m)^wall time +[0-9.]+ m?s$`,
		`(?m)^samples/s +\d+$`, `(?m)^final loss +[0-9.]+$`, `(?m)^loss +[▁▂▃▄▅▆▇█]+$`, `(?m)^model +mnist mlp$`, `(?m)^device +GO$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no %s in the table:\n%s", re, out)
		}
	}
	if !summaryRE.MatchString(errs) {
		t.Errorf("no summary line in stderr:\n%s", errs)
	}
	f, err := os.Open("loss.png")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width < 100 || cfg.Height < 100 {
		t.Errorf("loss.png: %+v, %v", cfg, err)
	}
	b, err := os.ReadFile("mlp.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := safetensors.Decode(b)
	if err != nil {
		t.Fatalf("mlp.safetensors: %v", err)
	}
	if len(ts) != 2 {
		t.Errorf("mlp.safetensors holds %d tensors, want l1.weight and l2.weight", len(ts))
	}
}

func TestTrainMinAccuracy(t *testing.T) {
	setup(t)
	data := writeMNIST(t, 100, 20)
	out, errs, st := tgc(t, "train", "mnist", "--data", data, "--device", "GO", "--steps", "2", "--batch", "4", "--min-accuracy", "0.99", "-q")
	if st != 1 {
		t.Fatalf("status %d, want 1\nstdout:\n%s\nstderr:\n%s", st, out, errs)
	}
	if !regexp.MustCompile(`^tgc: test accuracy \d+\.\d\d% is below --min-accuracy 99\.00%\n$`).MatchString(errs) {
		t.Errorf("stderr %q", errs)
	}
	if !strings.Contains(out, "test accuracy") {
		t.Errorf("no table before the failure:\n%s", out)
	}
}

func TestTrainErrors(t *testing.T) {
	dir := setup(t)
	empty := t.TempDir()
	_, errs, st := tgc(t, "train", "mnist", "--data", empty)
	if st != 1 || !strings.Contains(errs, "MNIST data not found in "+empty) || !strings.Contains(errs, "go mod download "+mnist.Module) {
		t.Errorf("missing data: status %d, stderr %q", st, errs)
	}
	nan := writeScript(t, filepath.Join(dir, "nan.tg"), `w = Tensor([1.0], requires_grad=True)
opt = nn.optim.SGD([w], lr=1.0)
for i in trange(config.get("steps", 10)):
    Tensor.training = True
    loss = (w - 2.0).sqrt().sum()
    opt.zero_grad()
    loss.backward()
    opt.step(loss)
    report(step=i, loss=loss)
`)
	_, errs, st = tgc(t, "train", nan, "--device", "GO", "--steps", "5")
	if st != 1 || !strings.Contains(errs, "nan.tg:9:5: loss is NaN at step 0: training stopped") {
		t.Errorf("NaN loss: status %d, stderr %q", st, errs)
	}
	cfg := writeScript(t, filepath.Join(dir, "cfg.tg"), "print(sorted(config.items()), argv)\nreport(loss=0.5)\n")
	out, errs, st := tgc(t, "train", cfg, "--device", "GO", "--steps", "3", "--lr", "0.01", "--seed", "4", "--", "x")
	if st != 0 || !strings.HasPrefix(out, `[("lr", 0.01), ("seed", 4), ("steps", 3)] ["x"]`) {
		t.Errorf("config: status %d, stdout %q, stderr %q", st, out, errs)
	}
	_, errs, st = tgc(t, "train", cfg, "--device", "GO", "--min-accuracy", "0.5", "--save", "x.safetensors")
	if st != 1 || !strings.Contains(errs, "--save x.safetensors: the script did not write it") {
		t.Errorf("unsaved: status %d, stderr %q", st, errs)
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"mnist", "--model", "rnn"}, `unknown --model "rnn": want mlp or cnn`},
		{[]string{"mnist", "--min-accuracy", "98"}, "--min-accuracy is a fraction between 0 and 1"},
		{[]string{"mnist", "--steps", "0"}, "--steps must be positive"},
		{[]string{cfg, "--model", "cnn"}, "--model applies to tgc train mnist"},
		{[]string{"mnist", "extra"}, "unexpected arguments after mnist"},
	} {
		_, errs, st := tgc(t, append([]string{"train"}, c.args...)...)
		if st != 2 || !strings.Contains(errs, c.err) {
			t.Errorf("%v: status %d, stderr %q, want %q", c.args, st, errs, c.err)
		}
	}
}

// TestTrainCNNEvalChunks: beautiful_mnist's test accuracy, measured 500
// images at a time (two jitted chunks and a remainder of 100 here), equals
// the accuracy of tinygrad's one pass over all the test images after the
// same training (the built-in script with that pass put back).
func TestTrainCNNEvalChunks(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	data := writeMNIST(t, 300, 1100)
	src, err := models.Script("beautiful_mnist.tg")
	if err != nil {
		t.Fatal(err)
	}
	chunked := regexp.MustCompile(`(?s)  # the test images 500 at a time.*?return Tensor\(correct\*100/n\)\n`)
	if !chunked.Match(src) {
		t.Fatal("no chunked evaluation in models/beautiful_mnist.tg")
	}
	onePass := chunked.ReplaceAll(src, []byte("  @TinyJit\n  @Tensor.test()\n"+
		"  def get_test_acc() -> Tensor: return (model(X_test).argmax(axis=1) == Y_test).mean()*100\n"))
	if err := os.WriteFile("one_pass.tg", onePass, 0o644); err != nil {
		t.Fatal(err)
	}
	accRE := regexp.MustCompile(`(?m)^test accuracy +(\d+\.\d\d)%$`)
	var accs []string
	for _, script := range []string{"mnist", "one_pass.tg"} {
		args := []string{"train", script, "--data", data, "--device", "CPU", "--steps", "3", "--batch", "32"}
		if script == "mnist" {
			args = append(args, "--model", "cnn")
		}
		out, errs, st := tgc(t, args...)
		m := accRE.FindStringSubmatch(out)
		if st != 0 || m == nil {
			t.Fatalf("%v: status %d\nstdout:\n%s\nstderr:\n%s", args, st, out, errs)
		}
		accs = append(accs, m[1])
	}
	if accs[0] != accs[1] {
		t.Errorf("test accuracy %s%% in chunks of 500, %s%% in one pass", accs[0], accs[1])
	}
}

var cnnProgressRE = regexp.MustCompile(`(?m)^step (\d+)/(\d+) loss: +([0-9.]+) test_accuracy: +([0-9.]+|nan)% \d+ samples/s`)

// TestTrainCNN is CI's short run of tinygrad's beautiful_mnist
// (models/beautiful_mnist.tg) through tgc train: a few steps on a small
// synthetic MNIST on the CPU, with the TinyJit capture and replays, the
// test accuracy every 4 steps and the table.
func TestTrainCNN(t *testing.T) {
	setup(t)
	if !available("CPU") {
		t.Skip("CPU device unavailable (no C compiler)")
	}
	data := writeMNIST(t, 300, 100)
	out, errs, st := tgc(t, "train", "mnist", "--model", "cnn", "--data", data, "--device", "CPU", "--steps", "8", "--batch", "32",
		"--eval-every", "4", "--log-every", "2", "--save", "cnn.safetensors")
	if st != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, out, errs)
	}
	m := cnnProgressRE.FindAllStringSubmatch(out, -1)
	if len(m) != 4 || m[3][1] != "8" || m[3][2] != "8" {
		t.Fatalf("progress lines %q in\n%s", m, out)
	}
	first, _ := strconv.ParseFloat(m[0][3], 64)
	last, _ := strconv.ParseFloat(m[3][3], 64)
	if !(last < first) {
		t.Errorf("loss did not decrease: %v at step 2, %v at step 8", first, last)
	}
	if m[0][4] != "nan" || m[1][4] == "nan" {
		t.Errorf("test accuracy should appear from step 4 on: %q", m)
	}
	for _, re := range []string{`(?m)^model +mnist cnn$`, `(?m)^test accuracy +\d+\.\d\d%$`, `(?m)^steps +8$`, `(?m)^batch +32$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no %s in the table:\n%s", re, out)
		}
	}
	b, err := os.ReadFile("cnn.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := safetensors.Decode(b)
	if err != nil || len(ts) != 20 { // 4 convolutions and a linear layer (weight, bias), 2 batch norms (5 tensors each)
		t.Errorf("cnn.safetensors: %d tensors, %v", len(ts), err)
	}
}
