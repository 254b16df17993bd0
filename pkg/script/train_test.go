package script

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestAutogradInScripts(t *testing.T) {
	ctx := useGO(t)
	src := `x = Tensor([1.0, -2.0, 3.0])
x.requires_grad = True
w = Tensor([0.5, 0.5, 2.0], requires_grad=True)
loss = (x * x * w).sum()
print(x.requires_grad, x.grad, loss.backward() != None)
print(x.grad.tolist(), w.grad.tolist())
gx, gw = loss.gradient(x, w)
print(gx.tolist(), gw.tolist())
(x * x.detach()).sum().backward()
print(x.grad.tolist())
x.grad = None
print(x.grad, Tensor.training)
y = Tensor.zeros(3)
y.assign(Tensor([1.0, 2.0, 3.0]))
print(y.tolist(), Tensor.ones(2).requires_grad_().requires_grad)
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `True None True
[1.0, -2.0, 12.0] [1.0, 4.0, 9.0]
[1.0, -2.0, 12.0] [1.0, 4.0, 9.0]
[2.0, -4.0, 15.0]
None False
[1.0, 2.0, 3.0] True
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	for _, c := range []struct{ src, err string }{
		{"Tensor([1.0, 2.0]).sum().backward()", "does not depend on any tensor that requires grad"},
		{"Tensor([1.0, 2.0], requires_grad=True).backward()", "must be a scalar"},
		{"x = Tensor([1.0], requires_grad=True)\nx.sum().gradient(Tensor([2.0]))", "not used to compute the loss"},
		{"Tensor.zeros(2).assign(Tensor.zeros(3))", "cannot assign a value of shape (3,)"},
		{"l = nn.Linear(2, 3)\nl(Tensor.zeros(2, 4))", "model.tg:2:1: dot: cannot multiply (2, 4) by (2, 3)"},
		{"nn.Linear(2, 3).wieght", `did you mean "weight"`},
		{"w = Tensor([1.0], requires_grad=True)\nopt = nn.optim.SGD([w])\nopt.step()", "Tensor.training is False"},
		{"w = Tensor([1.0], requires_grad=True)\nopt = nn.optim.SGD([w])\nTensor.training = True\nopt.step()", "has no gradient"},
	} {
		_, _, err := run(t, ctx, c.src, 0)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.err)
		}
	}
}

func TestLayersAndOptimizersInScripts(t *testing.T) {
	ctx := useGO(t)
	dir := t.TempDir()
	src := `Tensor.manual_seed(1)
model = struct(l1 = nn.Linear(3, 4), bn = nn.BatchNorm(4), c = nn.Conv2d(1, 2, 3, padding=1, bias=False),
               ln = nn.LayerNorm(4), rms = nn.RMSNorm(4), emb = nn.Embedding(5, 4), bn2 = nn.BatchNorm2d(2))
print(sorted(nn.state.get_state_dict(model).keys()))
print(model.l1.weight.shape, model.l1.bias.shape, model.c.bias, model.c(Tensor.rand(1, 1, 4, 4)).shape)
print(model.emb(Tensor([[1, 2]])).shape, model.ln(Tensor.rand(2, 4)).shape, model.rms(Tensor.rand(2, 4)).shape)
x = Tensor.rand(8, 3)
target = Tensor.rand(8, 4)
params = nn.state.get_parameters([model.l1, model.bn, model.ln, model.rms])
opt = nn.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
print(len(opt.params), opt.lr.item() > 0.09)
Tensor.training = True
losses = []
for i in range(10):
    out = model.rms(model.ln(model.bn(model.l1(x)).relu()))
    loss = ((out - target).square()).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(losses[-1] < losses[0], model.bn.num_batches_tracked.item())
Tensor.training = False
sd = nn.state.get_state_dict(model)
nn.state.safe_save(sd, DIR + "/m.safetensors")
before = model.l1(x).tolist()
model.l1.weight.assign(Tensor.zeros(4, 3))
nn.state.load_state_dict(model, nn.state.safe_load(DIR + "/m.safetensors"))
print(model.l1(x).tolist() == before)
for o in [nn.optim.Adam(params, lr=0.01), nn.optim.AdamW(params, lr=0.01, weight_decay=0.1)]:
    print(o)
`
	out, _, err := run(t, ctx, strings.ReplaceAll(src, "DIR", strconv.Quote(dir)), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `["bn.bias", "bn.num_batches_tracked", "bn.running_mean", "bn.running_var", "bn.weight", "bn2.bias", "bn2.num_batches_tracked", "bn2.running_mean", "bn2.running_var", "bn2.weight", "c.weight", "emb.weight", "l1.bias", "l1.weight", "ln.bias", "ln.weight", "rms.weight"]
(4, 3) (4,) None (1, 2, 4, 4)
(1, 2, 4) (2, 4) (2, 4)
7 True
True 10
True
<nn.optim.Adam>
<nn.optim.AdamW>
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

// TestMLPTrainExample runs models/mlp_train.tg for a few steps and checks
// that its loss decreases.
func TestMLPTrainExample(t *testing.T) {
	ctx := useGO(t)
	path := filepath.Join("..", "..", "models", "mlp_train.tg")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Run(Options{File: path, Src: src, Stdout: &out, Argv: []string{"8", "16"}, Context: ctx}); err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for _, m := range regexp.MustCompile(`loss (\S+)`).FindAllStringSubmatch(out.String(), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, v)
	}
	if len(losses) != 8 {
		t.Fatalf("%d losses printed, want 8:\n%s", len(losses), out.String())
	}
	if !(losses[7] < 0.5*losses[0]) {
		t.Errorf("loss did not decrease: %v", losses)
	}
}
