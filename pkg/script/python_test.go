package script

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"tgc/pkg/realize"
)

// TestPythonConstructs runs each construct of "Python you can use"
// (docs/language.md) and checks what it prints, as CPython with tinygrad
// prints it.
func TestPythonConstructs(t *testing.T) {
	ctx := useGO(t)
	tests := []struct{ name, src, want string }{
		{"class", `
class TinyNet:
    SCALE = 2
    def __init__(self, n):
        self.n = n
        self.l1 = Tensor.ones(n, 2)
    def __call__(self, x):
        return x.dot(self.l1) * self.SCALE
    def describe(self):
        return "TinyNet(" + str(self.n) + ")"
net = TinyNet(3)
net.extra = 5
print(net(Tensor.ones(1, 3)).tolist(), net.describe(), net.extra, TinyNet.SCALE, type(net))
`, "[[6.0, 6.0]] TinyNet(3) 5 2 TinyNet\n"},
		{"methods see the module, not the class", `
n = "module"
class A:
    n = "class"
    m = n + "!"
    def get(self):
        return n
print(A().get(), A.m)
`, "module class!\n"},
		{"class body with conditions and loops", `
class A:
    if True:
        x = 1
    else:
        y = 2
    squares = [i * i for i in range(4)]
print(A.x, hasattr(A, "y"), A.squares)
`, "1 False [0, 1, 4, 9]\n"},
		{"inheritance and super", `
class Base:
    def __init__(self, n):
        self.n = n
    def f(self):
        return self.n
class Child(Base):
    def __init__(self, n):
        super().__init__(n * 10)
    def f(self):
        return super().f() + 1
c = Child(2)
print(c.f(), isinstance(c, Base), isinstance(Base(1), Child), isinstance(c, (int, Base)))
`, "21 True False True\n"},
		{"staticmethod classmethod property", `
class A:
    def __init__(self, n):
        self.n = n
    @staticmethod
    def s(x):
        return x + 1
    @classmethod
    def make(cls, n):
        return cls(n)
    @property
    def twice(self):
        return 2 * self.n
a = A.make(4)
print(A.s(1), a.s(2), a.twice)
`, "2 3 8\n"},
		{"nested class", `
class Outer:
    class Inner:
        def f(self):
            return "inner"
    def g(self):
        return Outer.Inner().f()
print(Outer().g())
`, "inner\n"},
		{"decorators", `
def twice(f):
    def g(x):
        return f(f(x))
    return g
@twice
@twice
def inc(x):
    return x + 1
print(inc(0))
`, "4\n"},
		{"decorated method", `
def loud(f):
    def g(self, x):
        return f(self, x).upper()
    return g
class A:
    @loud
    def hi(self, x):
        return "hi " + x
print(A().hi("bob"))
`, "HI BOB\n"},
		{"with Tensor.train and Tensor.test", `
print(Tensor.training)
with Tensor.train():
    print(Tensor.training)
    with Tensor.test():
        print(Tensor.training)
    print(Tensor.training)
print(Tensor.training)
`, "False\nTrue\nFalse\nTrue\nFalse\n"},
		{"with leaves on return", `
def f():
    with Tensor.train():
        return Tensor.training
print(f(), Tensor.training)
`, "True False\n"},
		{"Context as a decorator and a context manager", `
@Context(TRAINING=1)
def f():
    return Tensor.training
@Tensor.train()
def g():
    return Tensor.training
with Context(TRAINING=1) as c, Tensor.test():
    inner = Tensor.training
print(f(), g(), Tensor.training, inner, c)
`, "True True False False None\n"},
		{"with over a script class", `
class Ctx:
    def __enter__(self):
        print("enter")
        return 7
    def __exit__(self, *args):
        print("exit", args)
with Ctx() as v:
    print("body", v)
`, "enter\nbody 7\nexit (None, None, None)\n"},
		{"imports", `
import math
import tinygrad
import tinygrad.nn as tnn
from tinygrad import Tensor as T, dtypes
from tinygrad.nn.state import get_parameters
from tinygrad.helpers import getenv, Context
from typing import List, Optional
print(math.sqrt(4.0), T == Tensor, tnn == nn, tinygrad.nn.optim.Adam == nn.optim.Adam, get_parameters == nn.state.get_parameters, getenv("TGC_NOT_SET", 3))
`, "2.0 True True True True 3\n"},
		{"main guard", `
if __name__ == "__main__":
    print("main")
`, "main\n"},
		{"annotations", `
def f(x: int, y: float = 2.0) -> float:
    z: float = x * y
    return z
class P:
    n: int
    m: int = 3
print(f(2), P.m)
`, "4.0 3\n"},
		{"power and matmul", `
a = Tensor([[1.0, 2.0], [3.0, 4.0]])
print(2 ** 10, 2 ** -2, -3 ** 2, 2 ** 3 ** 2, (a ** 2).tolist(), (2 ** a).tolist()[0])
print((a @ a).tolist(), (a @ a @ Tensor.eye(2)).tolist()[1])
`, "1024 0.25 -9 512 [[1.0, 4.0], [9.0, 16.0]] [2.0, 4.0]\n[[7.0, 10.0], [15.0, 22.0]] [15.0, 22.0]\n"},
		{"is", `
a = Tensor([1])
b = [1]
print(None is None, a is a, a is Tensor([1]), b is b, b is not [1], 1 is not None)
`, "True True False True True True\n"},
		{"builtins", `
print(sum(i * i for i in range(4)), sum([Tensor([1.0]), Tensor([2.0])]).tolist(), round(2.5), round(3.14159, 2), divmod(7, 2))
print(list(map(lambda x: x * 2, [1, 2])), list(filter(None, [0, 1, 2])), callable(print), pow(2, 5))
`, "14 [3.0] 2 3.14 (3, 1)\n[2, 4] [1, 2] True 32\n"},
		{"del", `
d = {"a": 1, "b": 2}
l = [1, 2, 3]
del d["a"], l[0]
print(d, l)
`, "{\"b\": 2} [2, 3]\n"},
		{"assert that holds", `
assert 1 + 1 == 2, "math"
assert [1]
print("ok")
`, "ok\n"},
		{"strings", `
print("ab" "cd", u"x", 1_000, f"{3:>4}")
`, "abcd x 1000    3\n"},
		{"Device", `
from tinygrad import Device
print(Device.DEFAULT, Device["GO"].device, Device.canonicalize("go:0"), Tensor.ones(2, device=Device.DEFAULT).to(Device.DEFAULT).shape)
`, "GO GO GO (2,)\n"},
		{"numpy", `
x = Tensor([[1.5, -2.0], [0.25, 4.0]])
n = x.numpy()
print(n)
print(repr(n), n.shape, n.dtype, n.tolist(), Tensor(3).numpy(), Tensor([True, False]).numpy())
`, "[[ 1.5  -2.  ]\n [ 0.25  4.  ]]\narray([[ 1.5 , -2.  ],\n       [ 0.25,  4.  ]], dtype=float32) (2, 2) float32 [[1.5, -2.0], [0.25, 4.0]] 3 [ True False]\n"},
		{"sequential and realize with others", `
x = Tensor([1.0, -2.0])
y = x.sequential([Tensor.relu, lambda t: t + 1])
z = (x * 2)
print(y.realize(z).tolist(), z.tolist())
`, "[2.0, 1.0] [2.0, -4.0]\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, ctx, strings.TrimPrefix(tc.src, "\n"), 0)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if out != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", out, tc.want)
			}
		})
	}
}

// TestPythonErrors checks that errors inside translated constructs point at
// the user's line and column, and the messages of the refused constructs.
func TestPythonErrors(t *testing.T) {
	ctx := useGO(t)
	tests := []struct{ name, src, want string }{
		{"shape error inside a method", "class M:\n    def __call__(self, x: Tensor) -> Tensor:\n        return x.dot(Tensor.ones(5, 2))\nM()(Tensor.ones(3, 4))\n",
			"model.tg:3:18: dot: cannot multiply (3, 4) by (5, 2): inner dimensions 4 and 5 differ"},
		{"traceback names the method", "class M:\n    def f(self):\n        return self.g()\n    def g(self):\n        return 1 + \"a\"\nM().f()\n",
			"model.tg:5:18: unknown binary op: int + string\nTraceback (most recent call last):\n  model.tg:6:5: in <toplevel>\n  model.tg:3:21: in M.f\n  model.tg:5:18: in M.g"},
		{"error after a power on the same line", "y = 2 ** 3 + Tensor.rand(2).sofmax()\n",
			`model.tg:1:29: Tensor has no method "sofmax" (did you mean "softmax"?)`},
		{"error after an annotation", "def f(x: Tensor, y: int = 1) -> Tensor: return x.reshape(7)\nf(Tensor.ones(2))\n",
			"model.tg:1:50: reshape: cannot reshape (2,) (2 elements) into (7,) (7 elements)"},
		{"error in a with block", "with Tensor.train():\n    x = Tensor.ones(2).reshape(3)\n", "model.tg:2:24: reshape: cannot reshape (2,) (2 elements) into (3,) (3 elements)"},
		{"raise", "x = 1\nif x:\n    raise ValueError(f\"bad x={x}\")\n", "model.tg:3:5: ValueError: bad x=1"},
		{"raise a class", "raise NotImplementedError\n", "model.tg:1:1: NotImplementedError"},
		{"raise a non-exception", "raise 3\n", "model.tg:1:1: raise: exceptions must be ValueError(...) and the like, got a int"},
		{"assert", "n = 3\nassert n == 4, f\"n is {n}\"\n", "model.tg:2:1: AssertionError: n is 3"},
		{"assert without a message", "assert []\n", "model.tg:1:1: AssertionError"},
		{"assert a tensor", "assert Tensor([1])\n", "model.tg:1:1: the truth value of a Tensor is ambiguous"},
		{"import of another module", "import numpy as np\n", "model.tg:1:8: no module named \"numpy\": a tgc script can import math, tinygrad, tinygrad.device, tinygrad.dtype, tinygrad.engine, tinygrad.engine.jit, tinygrad.helpers, tinygrad.nn, tinygrad.nn.datasets, tinygrad.nn.optim, tinygrad.nn.state, tinygrad.tensor, typing; tensors take numpy's place: t.numpy() prints like an array and has .tolist()"},
		{"import of os", "from os import path\n", "model.tg:1:6: no module named \"os\""},
		{"import of a missing name", "from tinygrad import Tensr\n", "model.tg:1:22: cannot import name \"Tensr\" from tinygrad (did you mean \"Tensor\"?)"},
		{"decorator without a def", "@TinyJit\nx = 1\n", "model.tg:1:1: a decorator must be followed by def or class"},
		{"break in a with block", "for i in range(3):\n    with Tensor.train():\n        break\n", "model.tg:3:9: break inside a with block is not supported: set a flag, leave the with block, then break"},
		{"with a non-manager", "with 3:\n    pass\n", "model.tg:1:1: with: a int is not a context manager"},
		{"Context with an unknown variable", "with Context(FOO=1):\n    pass\n", "model.tg:1:6: Context: unknown variable FOO (tgc has BEAM, DEBUG, TRAINING)"},
		{"setting Device.DEFAULT", "Device.DEFAULT = \"CL\"\n", "model.tg:1:7: Device.DEFAULT cannot be set in a script"},
		{"another device", "x = Tensor.ones(2, device=\"CPU\")\n", "model.tg:1:12: ones: device=\"CPU\", but this script runs on GO"},
		{"chained comparison", "print(1 < 2 < 3)\n", "model.tg:1:14: chained comparisons (a < b < c) are not supported: write a < b and b < c"},
		{"two base classes", "class A:\n    pass\nclass B:\n    pass\nclass C(A, B):\n    pass\n", "model.tg:5:7: class C: more than one base class is not supported"},
		{"a base that is not a class", "class C(3):\n    pass\n", "model.tg:1:7: class C: the base 3 is a int, not a class defined in the script"},
		{"subclassing an exception", "class E(ValueError):\n    pass\n", "model.tg:1:7: class E: subclassing ValueError is not supported"},
		{"calling an instance without __call__", "class A:\n    pass\nA()(1)\n", "model.tg:3:4: a A object is not callable (the class has no __call__)"},
		{"unknown attribute", "class A:\n    def __init__(self):\n        self.weight = 1\nprint(A().wieght)\n", `model.tg:4:11: A object has no attribute "wieght" (did you mean "weight"?)`},
		{"__init__ returning a value", "class A:\n    def __init__(self):\n        return 1\nA()\n", "model.tg:4:1: A.__init__ returned int; it must return None"},
		{"try (translation)", "x = 1\ntry:\n    x = 2\nexcept:\n    pass\n", "model.tg:2:1: try/except is not supported"},
		{"global (translation)", "def f():\n    global g\n", "model.tg:2:5: global is not supported"},
		{"NUL byte", "print(1)\n\x00print(2)\nfail(\"never\")\n", "model.tg:2:1: the script contains a NUL byte"},
		{"invalid UTF-8", "print(1)\nx = 1 \xc3\x28\n", "model.tg:2:7: invalid UTF-8 byte 0xc3 outside a string"},
		{"recursion", "def f(n):\n    return f(n + 1)\nf(0)\n", "model.tg:2:12: recursion too deep: more than 100000 nested calls"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, ctx, tc.src, 0)
			if err == nil {
				t.Fatalf("no error (output %q), want %q", out, tc.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error is %T: %v", err, err)
			}
			got := err.Error()
			if !strings.Contains(tc.want, "\n") {
				got = firstLine(err)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("error:\n got %q\nwant %q", got, tc.want)
			}
			if strings.HasPrefix(tc.name, "NUL") && out != "" {
				t.Errorf("the script ran before the error: %q", out)
			}
		})
	}
}

// Context(DEBUG=..., BEAM=...) sets the engine's settings inside its block
// and restores them after.
func TestContextEngineSettings(t *testing.T) {
	var dbg bytes.Buffer
	ctx, e, err := realize.NewContext("GO", realize.Options{Out: &dbg})
	if err != nil {
		t.Fatal(err)
	}
	src := `with Context(DEBUG=2, BEAM=3):
    a = (Tensor.ones(3) + 1).realize()
b = (Tensor.ones(3) * 5).realize()
print(a.tolist(), b.tolist())
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil || out != "[2.0, 2.0, 2.0] [5.0, 5.0, 5.0]\n" {
		t.Fatalf("out %q, err %v", out, err)
	}
	t.Logf("DEBUG=2 inside the block:\n%s", dbg.String())
	if !strings.Contains(dbg.String(), "GFLOP") && !strings.Contains(dbg.String(), "GB/s") {
		t.Errorf("no DEBUG=2 launch line inside the block:\n%s", dbg.String())
	}
	lines := dbg.String()
	dbg.Reset()
	if _, _, err := run(t, ctx, "x = (Tensor.ones(4) * 7).realize()\n", 0); err != nil {
		t.Fatal(err)
	}
	if dbg.Len() != 0 || e.Opts.Debug != 0 || e.Opts.Beam != 0 {
		t.Errorf("settings not restored: debug %d beam %d, output after the block %q (inside: %q)", e.Opts.Debug, e.Opts.Beam, dbg.String(), lines)
	}
}

// @TinyJit and @Context(TRAINING=1) on a method, as beautiful_mnist's
// model code writes them.
func TestJitMethod(t *testing.T) {
	ctx := useGO(t)
	src := `class Model:
    def __init__(self):
        self.w = Tensor([[1.0, 2.0], [3.0, 4.0]])
        self.calls = 0

    @TinyJit
    @Context(TRAINING=1)
    def step(self, x: Tensor) -> Tensor:
        self.calls += 1
        return (x @ self.w).dropout(0.0) * (2 if Tensor.training else 1)

m = Model()
outs = [m.step(Tensor([[1.0, float(i)]])).tolist() for i in range(4)]
print(outs, m.calls, Tensor.training)
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	// calls 0 and 1 run the method, 2 and 3 replay its kernels
	if want := "[[[2.0, 4.0]], [[8.0, 12.0]], [[14.0, 20.0]], [[20.0, 28.0]]] 2 False\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// Objects work where structs do: nn.state walks their attributes, nested
// objects, lists and dicts of them.
func TestObjectsInState(t *testing.T) {
	ctx := useGO(t)
	src := `class Block:
    def __init__(self, n):
        self.lin = nn.Linear(n, n)
        self.scale = Tensor.ones(n)
        self.name = "block"
class Net:
    def __init__(self):
        self.blocks = [Block(2), Block(2)]
        self.head = {"out": nn.Linear(2, 1)}
        self.cfg = {"depth": 2}
net = Net()
sd = nn.state.get_state_dict(net)
print(sorted(sd.keys()))
print(len(nn.state.get_parameters(net)))
w = {k: v * 0 + 3 for k, v in sd.items()}
nn.state.load_state_dict(net, w)
print(net.blocks[1].lin.weight.tolist(), net.head["out"].bias.tolist())
`
	out, _, err := run(t, ctx, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `["blocks.0.lin.bias", "blocks.0.lin.weight", "blocks.0.scale", "blocks.1.lin.bias", "blocks.1.lin.weight", "blocks.1.scale", "head.out.bias", "head.out.weight"]
8
[[3.0, 3.0], [3.0, 3.0]] [3.0]
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}
