package script

import (
	"strings"
	"testing"
)

func TestTinyJitInScripts(t *testing.T) {
	ctx := useGO(t)
	src := `net = struct(l1 = nn.Linear(3, 8), l2 = nn.Linear(8, 2))
def step(x, y):
    loss = net.l2(net.l1(x).relu()).sparse_categorical_crossentropy(y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss

def losses(f):
    Tensor.manual_seed(1)
    for p in nn.state.get_parameters(net):
        p.assign(Tensor.rand(*p.shape) - 0.5)
    out = []
    for i in range(5):
        x = Tensor([[1.0 * i, 2.0, -1.0], [0.5, -1.0 * i, 3.0]])
        y = Tensor([i % 2, 1])
        out.append(f(x, y).item())
    return out

Tensor.training = True
opt = nn.optim.Adam(nn.state.get_parameters(net), lr=0.01)
plain = losses(step)
opt = nn.optim.Adam(nn.state.get_parameters(net), lr=0.01)
jit = TinyJit(step)
print(plain == losses(jit), plain[-1] < plain[0])
add = TinyJit(lambda a, b: (a + b, a * b))
for i in range(3):
    s, p = add(Tensor([1.0, 2.0]) * i, Tensor([3.0, 4.0]))
print(s.tolist(), p.tolist())
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "True True\n[5.0, 8.0] [6.0, 16.0]\n"; out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	for _, c := range []struct{ src, err string }{
		{"f = TinyJit(lambda x: x * 2)\nf(Tensor([1.0]))\nf(Tensor([1.0]))\nf(Tensor([1.0, 2.0]))", "input 0 is float32 (2,), but the function was captured with float32 (1,)"},
		{"def g(x):\n    print(x.sum().item())\n    return x\nTinyJit(g)(Tensor([1.0]))", "TinyJit function g reads a tensor's value"},
		{"TinyJit(lambda x: x)(1)", "takes Tensors"},
	} {
		_, _, err := run(t, ctx, c.src, 0)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.err)
		}
	}
}
