package frontend

import (
	"strings"
	"testing"
	"time"
)

// TestConstructs is the table of Python constructs the translation
// rewrites: source -> translated text (docs/language.md, "Python you can
// use").
func TestConstructs(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"class", "class M:\n  x = 1\n", "def M(__tgclass__=()):\n  x = 1\n"},
		{"class with empty parens", "class M():\n  pass\n", "def M(__tgclass__=()):\n  pass\n"},
		{"class with a base", "class M(B):\n  pass\n", "def M(__tgclass__=(B,)):\n  pass\n"},
		{"class with bases and a trailing comma", "class M(a.B, C,):\n  pass\n", "def M(__tgclass__=(a.B, C,)):\n  pass\n"},
		{"class on one line", "class M: pass\n", "def M(__tgclass__=()): pass\n"},
		{"decorator", "@TinyJit\ndef f(): pass\n", "__tgdeco__(TinyJit)\ndef f(): pass\n"},
		{"decorator call", "@Context(TRAINING=1)\ndef f(): pass\n", "__tgdeco__(Context(TRAINING=1))\ndef f(): pass\n"},
		{"with", "with Tensor.train():\n  pass\n", "for __tgw in __tgwith__( Tensor.train()):\n  pass\n"},
		{"with as", "with Context(DEBUG=2) as c:\n  pass\n", "for c in __tgwith__( Context(DEBUG=2) ):\n  pass\n"},
		{"with two items", "with A() as a, B():\n  pass\n", "for a, __tgw in __tgwith__( A() , B()):\n  pass\n"},
		{"with in parentheses", "with (A() as a,\n      B() as b):\n  pass\n", "for a, b in __tgwith__( A() ,\n      B() ):\n  pass\n"},
		{"import", "import tinygrad\n", "tinygrad = __tgimport__(\"tinygrad\", None)"[0:0] + "tinygrad = __tgimport__(\"tinygrad\", None)\n"},
		{"import dotted", "import tinygrad.nn\n", "tinygrad = __tgimport__(\"tinygrad.nn\", None)\n"},
		{"import as", "import tinygrad.nn as nn, math\n", "nn, math = __tgimport__(\"tinygrad.nn\"), __tgimport__(\"math\", None)\n"},
		{"from import", "from tinygrad import Tensor, nn as n\n", "Tensor, n = __tgimport__(\"tinygrad\", \"Tensor\"), __tgimport__(\"tinygrad\", \"nn\")\n"},
		{"from import in parentheses", "from tinygrad import (Tensor,\n  nn,)\nx = 1\n", "Tensor, nn = __tgimport__(\"tinygrad\", \"Tensor\"), __tgimport__(\"tinygrad\", \"nn\"\n)\nx = 1\n"},
		{"from import star", "from tinygrad import *\n", "__tgimport__(\"tinygrad\", \"*\")\n"},
		{"assert", "assert x > 0\n", "__tgassert__( x > 0)\n"},
		{"assert with a message", "assert x > 0, f\"x={x}\"\n", "__tgassert__( x > 0, lambda: __fstr__(\"x={}\", (x)))\n"},
		{"assert after a colon", "if a: assert b\n", "if a: __tgassert__( b)\n"},
		{"raise", "raise ValueError(\"bad\")\n", "__tgraise__( ValueError(\"bad\"))\n"},
		{"raise from", "raise ValueError(\"bad\") from e\n", "__tgraise__( ValueError(\"bad\"))\n"},
		{"del", "del d[k]\n", "__tgdel__(d, (k))\n"},
		{"del two", "del d[1], l[-1]\n", "__tgdel__(d, (1)), __tgdel__(l, (-1))\n"},
		{"parameter annotations", "def f(x: Tensor, y: int = 2, *a: int, **k: str) -> Tensor:\n  pass\n", "def f(x, y = 2, *a, **k):\n  pass\n"},
		{"annotation with a subscript", "def f(x: List[Callable[[Tensor], Tensor]]=None): pass\n", "def f(x=None): pass\n"},
		{"lambda default is not an annotation", "def f(g=lambda x: x): pass\n", "def f(g=lambda x: x): pass\n"},
		{"variable annotation", "x: int = 5\n", "x = 5\n"},
		{"attribute annotation", "self.layers: List[int] = []\n", "self.layers = []\n"},
		{"bare annotation", "class C:\n  x: int\n", "def C(__tgclass__=()):\n  pass\n"},
		{"dict display is not an annotation", "{a: 1}\n", "{a: 1}\n"},
		{"power", "y = x ** 2\n", "y = __tgpow__(x, 2)\n"},
		{"power binds tighter than unary minus", "y = -x ** 2\n", "y = -__tgpow__(x, 2)\n"},
		{"power is right-associative", "y = a ** b ** c\n", "y = __tgpow__(a, __tgpow__(b, c))\n"},
		{"power of trailers", "y = f(x).a[1] ** -g(2)\n", "y = __tgpow__(f(x).a[1], -g(2))\n"},
		{"power of a parenthesized expression", "y = (a + b) ** 0.5\n", "y = __tgpow__((a + b), 0.5)\n"},
		{"keyword unpacking is not power", "f(**kw)\n", "f(**kw)\n"},
		{"matmul", "y = a @ b\n", "y = a * __tgmatmul__(b)\n"},
		{"matmul chain", "y = a @ b @ c.T\n", "y = a * __tgmatmul__(b) * __tgmatmul__(c.T)\n"},
		{"matmul of a power", "y = a @ b ** 2\n", "y = a * __tgmatmul__(__tgpow__(b, 2))\n"},
		{"matmul assign", "a @= b + 1\n", "a *= __tgmatmul__(b + 1)\n"},
		{"is", "y = x is None\n", "y = x == None\n"},
		{"is not", "y = x is not None\n", "y = x != None\n"},
		{"generator argument", "y = sum(p.numel() for p in ps)\n", "y = sum([p.numel() for p in ps])\n"},
		{"generator with a condition", "y = all(x > 0 for x in xs if x)\n", "y = all([x > 0 for x in xs if x])\n"},
		{"two arguments are not a generator", "y = f(a, [x for x in b])\n", "y = f(a, [x for x in b])\n"},
		{"string concatenation", "s = \"a\" \"b\"\n", "s = (\"a\" + \"b\")\n"},
		{"string concatenation across lines", "s = (\"a\"\n  \"b\")\n", "s = ((\"a\"\n  + \"b\"))\n"},
		{"u prefix", "s = u\"x\"\n", "s = \"x\"\n"},
		{"underscores in numbers", "n = 1_000_000 + 0x_ff\n", "n = 1000000 + 0xff\n"},
		{"main guard untouched", "if __name__ == \"__main__\":\n  main()\n", "if __name__ == \"__main__\":\n  main()\n"},
		{"keywords in strings untouched", "s = \"class with import assert\"\n", "s = \"class with import assert\"\n"},
		{"comments untouched", "x = 1 # class A: with a as b\n", "x = 1 # class A: with a as b\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := translated(tc.in)
			if got != tc.want {
				t.Errorf("Translate(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if strings.Count(got, "\n") != strings.Count(tc.in, "\n") {
				t.Errorf("line count changed")
			}
		})
	}
}

// TestRefused is the table of Python that tgc does not run: each gives its
// message at the construct (docs/language.md, "Python you cannot").
func TestRefused(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"try", "x = 1\ntry:\n  f()\nexcept ValueError:\n  pass\n", "2:1: try/except is not supported: a tgc script stops at the first error (check the values before the call instead)"},
		{"global", "def f():\n  global x\n", "2:3: global is not supported: a function cannot rebind names outside it (return the new value, or keep state in an object's attribute)"},
		{"nonlocal", "def f():\n  x = 1; nonlocal y\n", "2:10: nonlocal is not supported: a function cannot rebind names outside it (return the new value, or keep state in an object's attribute)"},
		{"yield", "def f():\n  yield 1\n", "2:3: yield is not supported: build and return a list instead"},
		{"async", "async def f():\n  pass\n", "1:1: async is not supported: tgc scripts run sequentially"},
		{"await", "x = await f()\n", "1:5: await is not supported: tgc scripts run sequentially"},
		{"walrus", "if (n := len(a)) > 3:\n  pass\n", "1:7: the walrus operator := is not supported: assign on a line of its own"},
		{"power assignment", "x **= 2\n", "1:3: **= is not supported: write x = x ** y"},
		{"for else", "for i in x:\n  pass\nelse:\n  pass\n", "3:1: for ... else is not supported: use a flag set before break"},
		{"while else", "while x:\n  pass\nelse:\n  pass\n", "3:1: while ... else is not supported: use a flag set before break"},
		{"complex number", "z = 1 + 2j\n", "1:9: complex numbers are not supported"},
		{"bare raise", "raise\n", "1:1: raise needs an exception: raise ValueError(\"message\") (a bare raise re-raises in an except block, and tgc has no try/except)"},
		{"del of a name", "del x\n", "1:5: del removes an item (del d[key], del l[i]); a name cannot be deleted (assign None instead)"},
		{"del of a slice", "del l[1:3]\n", "1:6: del of a slice is not supported: assign the kept part instead (l = l[:i] + l[j:])"},
		{"relative import", "from . import x\n", "1:6: relative imports are not supported: tgc scripts can import tinygrad, math and typing"},
		{"metaclass", "class M(B, metaclass=Meta):\n  pass\n", "1:21: class keyword arguments and unpacked bases (metaclass=...) are not supported"},
		{"class without a name", "class (A):\n  pass\n", "1:7: class needs a name: class Model:"},
		{"with without a manager", "with:\n  pass\n", "1:1: with needs a context manager: with Tensor.train():"},
		{"assert without a condition", "assert\n", "1:1: assert needs a condition: assert x > 0, \"message\""},
		{"NUL byte", "print(1)\n\x00print(2)\n", "2:1: the script contains a NUL byte (a binary file, or a corrupt one?)"},
		{"invalid UTF-8", "x = 1\ny = \xff\n", "2:5: invalid UTF-8 byte 0xff outside a string (a script is UTF-8 text)"},
		{"invalid UTF-8 in a name", "ab\xc3 = 1\n", "1:3: invalid UTF-8 byte 0xc3 outside a string (a script is UTF-8 text)"},
		{"invalid UTF-8 in a comment", "x = 1 # \xfe\n", "1:9: invalid UTF-8 byte 0xfe in a comment (a script is UTF-8 text)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Translate([]byte(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Translate(%q)\n got %v\nwant %s", tc.in, err, tc.want)
			}
		})
	}
}

// Invalid UTF-8 inside a string is the string's business.
func TestBytesInStrings(t *testing.T) {
	if got := translated("s = \"\xff\"\n"); got != "s = \"\xff\"\n" {
		t.Errorf("got %q", got)
	}
}

func TestLimits(t *testing.T) {
	big := make([]byte, MaxSource+1)
	for i := range big {
		big[i] = '\n'
	}
	if _, err := Translate(big); err == nil || !strings.Contains(err.Error(), "a script may have at most 4194304 (4 MiB)") {
		t.Errorf("big script: %v", err)
	}
	lit := "x = \"" + strings.Repeat("a", MaxLiteral) + "\"\n"
	if _, err := Translate([]byte(lit)); err == nil || !strings.HasPrefix(err.Error(), "1:5: a string literal of 1048578 bytes; a literal may have at most 1048576 (1 MiB)") {
		t.Errorf("big string: %v", err)
	}
	list := "\n\nx = [" + strings.Repeat("1,", MaxLiteral/2) + "]\n"
	if _, err := Translate([]byte(list)); err == nil || !strings.HasPrefix(err.Error(), "3:5: a literal of 1048578 bytes; a literal may have at most 1048576 (1 MiB)") {
		t.Errorf("big list: %v", err)
	}
}

// Long chains translate in linear time (a ** b ** ... asks for the end of
// each link's right side).
func TestLongChains(t *testing.T) {
	src := "y = " + strings.Repeat("x ** ", 200000) + "x\n"
	done := make(chan struct{})
	go func() {
		Translate([]byte(src))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a chain of 200000 ** did not translate in 20 s")
	}
}
