package frontend

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzTranslate feeds arbitrary source to the translation and the AST
// rewrite: nothing may panic, the line count never changes, and every
// position, of an error or of any rune of the translated text, lies inside
// the source.
func FuzzTranslate(f *testing.F) {
	for _, s := range []string{
		"class M(B):\n  X: int = 1\n  @staticmethod\n  def f(x: T = 2) -> T:\n    return super().f(x) ** 2 @ w\n",
		"with Tensor.train() as t, (Context(DEBUG=2)):\n  y = x[1:2, ..., ::2]\n  assert y is not None, f\"{y=}\"\n",
		"from tinygrad import (Tensor,\n  nn as n,)\nimport a.b as c, d\nraise ValueError('x') from e\n",
		"del d[k], l[1]\nprint(sum(i for i in r), \"a\" \"b\", 1_0, u'x')\n",
		"try:\n  pass\nexcept:\n  pass\n",
		"x = (a := 1)\n",
		"for i in x:\n  with A():\n    break\nelse:\n  pass\n",
		"@d\n@e(1)\nclass A: pass\n",
		"s = '''\nclass with\n'''\n# \xff\n",
		"\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		tr, err := Translate(src)
		src = unixNewlines(src) // positions count \r\n and \r as one newline, as Starlark does
		lines := bytes.Count(src, []byte{'\n'}) + 1
		inside := func(line, col int) bool {
			if line < 1 || line > lines || col < 1 {
				return false
			}
			l := bytes.Split(src, []byte{'\n'})[line-1]
			return col <= utf8.RuneCount(l)+2
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if !inside(e.Line, e.Col) {
				t.Fatalf("error position %d:%d outside the source:\n%q", e.Line, e.Col, src)
			}
			return
		}
		if bytes.Count(tr.Text, []byte{'\n'}) != lines-1 {
			t.Fatalf("line count changed:\n%q\n->\n%q", src, tr.Text)
		}
		for i, l := range strings.Split(string(tr.Text), "\n") {
			for c := 1; c <= utf8.RuneCountInString(l); c++ {
				line, col := tr.Map.Pos(int32(i+1), int32(c))
				if !inside(int(line), int(col)) {
					t.Fatalf("%d:%d of the translation maps to %d:%d, outside the source:\n%q\n->\n%q", i+1, c, line, col, src, tr.Text)
				}
			}
		}
		file, perr := FileOptions.Parse("f.tg", tr.Text, 0)
		if perr != nil {
			return
		}
		if err := tr.Rewrite(file); err != nil {
			var e *Error
			if !errors.As(err, &e) || !inside(e.Line, e.Col) {
				t.Fatalf("rewrite error %v outside the source:\n%q", err, src)
			}
		}
	})
}
