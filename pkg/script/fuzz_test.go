package script

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"tgc/pkg/fileaccess"
	"tgc/pkg/script/frontend"
	"tgc/pkg/tensor"
)

// fuzzEngine reads zeros without computing, and refuses large tensors so a
// fuzzed script cannot exhaust memory.
type fuzzEngine struct{}

func (fuzzEngine) Realize(nodes ...*tensor.Node) error { return nil }
func (fuzzEngine) Read(n *tensor.Node) ([]byte, error) {
	if n.Numel() > 1<<16 {
		return nil, fmt.Errorf("fuzz engine: %d elements is too many", n.Numel())
	}
	return make([]byte, n.Numel()*n.DType.Size()), nil
}

// FuzzRun feeds arbitrary source to the preprocessor, the rewriter and the
// interpreter: nothing may panic (a recovered panic shows up as an
// "internal error"), every error must be a *script.Error, and the
// preprocessor must keep the line count.
func FuzzRun(f *testing.F) {
	f.Add([]byte("N = 4\na = Tensor.rand(N, N)\nb = Tensor.rand(N, N)\nc = a.dot(b).realize()\nprint(c.shape, c.sum().item())\n"))
	f.Add([]byte("x = Tensor.arange(12).reshape(3, 4)\nprint(x[1:3, ::2].tolist(), x[..., -1], x[None, :, 0])\n"))
	f.Add([]byte("s = \"x[1:2, 3]\" # y[::2, 1]\nt = '''\n[:, :]\n'''\n"))
	f.Add([]byte("x = Tensor([1.0, 2.0])\nif (x > 1).sum().item() > 0:\n    print(x < 2, 2 <= x)\n"))
	f.Add([]byte("def f(*a, **k):\n  return [i for i in a if i != None]\nprint(f(1, None, x=2), ...)\n"))
	f.Add([]byte("from tinygrad import Tensor, nn\nclass M(object):\n  K = 2\n  def __init__(self): self.w = Tensor.ones(2, 2)\n  def __call__(self, x: Tensor) -> Tensor: return (x @ self.w) ** 2\n  @property\n  def p(self): return super().__init__()\nm = M()\nprint(m(Tensor.ones(1, 2)).numpy(), m.p, isinstance(m, M))\n"))
	f.Add([]byte("@TinyJit\n@Tensor.train()\ndef step(x): return x * 2\nwith Context(TRAINING=1), Tensor.test() as t:\n  assert t is None, f\"{t=}\"\n  del d[0]\nraise ValueError(sum(i for i in range(3)))\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := strings.Count(strings.ReplaceAll(strings.ReplaceAll(string(src), "\r\n", "\n"), "\r", "\n"), "\n")
		if tr, err := frontend.Translate(src); err == nil && strings.Count(string(tr.Text), "\n") != lines {
			t.Fatalf("the translation changed the line count:\n%q\n->\n%q", src, tr.Text)
		}
		ctx := tensor.NewContext(fuzzEngine{})
		err := Run(Options{File: "fuzz.tg", Src: src, Stdout: io.Discard, Stderr: io.Discard, MaxSteps: 20000, Context: ctx, Files: &fileaccess.Policy{}}) // no file access
		if err == nil {
			return
		}
		var se *Error
		if !errors.As(err, &se) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if strings.Contains(err.Error(), "internal error") {
			t.Fatalf("internal error for %q: %v", src, err)
		}
	})
}
