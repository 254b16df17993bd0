package script

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tgc/pkg/script/tensorlib"
)

// TestDocsListEveryName keeps docs/language.md complete: every method,
// property, static function and predeclared name must appear in it.
func TestDocsListEveryName(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "language.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	documented := func(name string) bool {
		for _, form := range []string{"`" + name + "(", "`" + name + "`", "`Tensor." + name + "(", "`Tensor." + name + "`", "(alias `" + name + "`)", "alias `" + name + "`"} {
			if strings.Contains(doc, form) {
				return true
			}
		}
		return false
	}
	names := append(append(tensorlib.MethodNames(), tensorlib.StaticNames()...), tensorlib.PropertyNames()...)
	for n := range newInterp(nil, "x", nil, nil, 0).predeclared() {
		if !strings.HasPrefix(n, "__") {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if !documented(n) {
			t.Errorf("%s is not documented in docs/language.md", n)
		}
	}
}

// TestDocExamples runs examples from docs/language.md.
func TestDocExamples(t *testing.T) {
	ctx := useGO(t)
	src := `def Linear(fan_in, fan_out):
    return struct(weight = Tensor.kaiming_uniform(fan_out, fan_in),
                  bias = Tensor.zeros(fan_out))

def linear(l, x):
    return x.linear(l.weight.T, l.bias)

model = struct(l1 = Linear(784, 128), l2 = Linear(128, 10))
def forward(x):
    return linear(model.l2, linear(model.l1, x).relu())
print(forward(Tensor.rand(2, 784)).shape, sorted(nn.state.get_state_dict(model).keys()))

x = Tensor.arange(12).reshape(3, 4)
print(x[1].shape, x[1, 2].shape, x[:, -1].tolist(), x[1:3, ::2].tolist(), x[::-1][0].tolist(), x[..., 0].tolist(), x[None].shape)
print(x.argmax(axis=1).dtype, x.argmax().item(), x.size(0), x.size(), x.dim(), x.nbytes(), x.element_size())
print(Tensor.linspace(0, 1, 5).tolist(), x.shrink(((1, 3), None)).shape, x.unflatten(1, (2, 2)).shape)
print(x.float().batchnorm(None, None, Tensor.zeros(4), Tensor.ones(4)).shape)
print(format(0.25, ".1%"), format(1234567, ","), Tensor([1, 3, 2]).one_hot().tolist())
q = Tensor.rand(1, 4, 8)
print(q.scaled_dot_product_attention(q, q, is_causal=True).shape, q.chunk(2, dim=-1)[1].shape)
a, b = x.split([1, 3], dim=1)
print(a.shape, b.shape, x.pad(((1, 1), (2, 0)), value=-1).shape, x.pad((1, 2)).shape)
print(Tensor.full((2, 2), 7).dtype, (x // 3).tolist()[0], (x % 3).tolist()[0], ((x > 2) & (x < 4)).tolist()[0])
print(dtypes.float32.itemsize, dtypes.half.name, dtypes.is_float(dtypes.float16), x.device)
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `(2, 10) ["l1.bias", "l1.weight", "l2.bias", "l2.weight"]
(4,) () [3, 7, 11] [[4, 6], [8, 10]] [8, 9, 10, 11] [0, 4, 8] (1, 3, 4)
dtypes.int32 11 3 (3, 4) 2 48 4
[0.0, 0.25, 0.5, 0.75, 1.0] (2, 4) (3, 2, 2)
(3, 4)
25.0% 1,234,567 [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]
(1, 4, 8) (1, 4, 4)
(3, 1) (3, 3) (5, 6) (3, 7)
dtypes.int32 [0, 0, 0, 1] [0, 1, 2, 0] [False, False, False, True]
4 float16 True GO
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}
