package frontend

import (
	"strings"
	"testing"

	"go.starlark.net/syntax"
)

// translated is the translated text of src, or the error's text.
func translated(src string) string {
	tr, err := Translate([]byte(src))
	if err != nil {
		return "error: " + err.Error()
	}
	return string(tr.Text)
}

func TestSubscripts(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"two slices", "y = x[1:4, ::2]", "y = x[__slice__(1, 4, None), __slice__(None, None, 2)]"},
		{"slice and int", "y = x[:, -1]", "y = x[__slice__(None, None, None), -1]"},
		{"open ends", "y = x[1:, :2, ::-1]", "y = x[__slice__(1, None, None), __slice__(None, 2, None), __slice__(None, None, -1)]"},
		{"expressions in bounds", "y = x[a+1:f(b, c), i]", "y = x[__slice__(a+1, f(b, c), None), i]"},
		{"trailing comma", "y = x[1:2,]", "y = x[__slice__(1, 2, None),]"},
		{"single slice untouched", "y = x[1:4]", "y = x[1:4]"},
		{"tuple index untouched", "y = x[1, 2]", "y = x[1, 2]"},
		{"list literal untouched", "y = [1, 2]", "y = [1, 2]"},
		{"dict literal untouched", "y = {1: 2, 3: 4}", "y = {1: 2, 3: 4}"},
		{"dict inside subscript", "y = d[{1: 2}[1], 0]", "y = d[{1: 2}[1], 0]"},
		{"string key with colon and comma", `y = d["a:b", 1]`, `y = d["a:b", 1]`},
		{"string containing a subscript", `s = "x[1:2, 3]"`, `s = "x[1:2, 3]"`},
		{"single-quoted string", `s = 'x[1:2, 3]' + x[1:2, 3]`, `s = 'x[1:2, 3]' + x[__slice__(1, 2, None), 3]`},
		{"triple-quoted string", "s = \"\"\"x[1:2, 3]\n\"\"\"\ny = x[0:1, 2]", "s = \"\"\"x[1:2, 3]\n\"\"\"\ny = x[__slice__(0, 1, None), 2]"},
		{"escaped quote", `s = "a\"[1:2, 3]"`, `s = "a\"[1:2, 3]"`},
		{"raw string", `s = r"\"[1:2, 3]"`, `s = r"\"[1:2, 3]"`},
		{"comment", "y = 1 # x[1:2, 3]\n", "y = 1 # x[1:2, 3]\n"},
		{"nested subscripts", "y = x[a[1:2, 0]:3, 1]", "y = x[__slice__(a[__slice__(1, 2, None), 0], 3, None), 1]"},
		{"call result", "y = f(x)[::2, 1]", "y = f(x)[__slice__(None, None, 2), 1]"},
		{"subscript of subscript", "y = x[0][1:2, 0]", "y = x[0][__slice__(1, 2, None), 0]"},
		{"lambda untouched", "f = g[lambda a: a, 1]", "f = g[lambda a: a, 1]"},
		{"list after keyword", "for i in [1, 2]:\n  pass", "for i in [1, 2]:\n  pass"},
		{"list at statement start", "x\n[1:2, 3]", "x\n[1:2, 3]"},
		{"multi-line subscript", "y = x[1:2,\n      0:1]", "y = x[__slice__(1, 2, None),\n      __slice__(0, 1, None)]"},
		{"ellipsis", "y = x[..., 0]", "y = x[Ellipsis, 0]"},
		{"ellipsis with slice", "y = x[..., 1:]", "y = x[Ellipsis, __slice__(1, None, None)]"},
		{"ellipsis statement", "def f():\n  ...", "def f():\n  Ellipsis"},
		{"ellipsis in string", `s = "..."`, `s = "..."`},
		{"float literals", "y = x[1.5:2e-3, 0]", "y = x[__slice__(1.5, 2e-3, None), 0]"},
		{"three colons left alone", "y = x[1:2:3:4, 0]", "y = x[1:2:3:4, 0]"},
		{"unterminated string", "s = \"abc\ny = x[1:2, 0]", "s = \"abc\ny = x[__slice__(1, 2, None), 0]"},
		{"unbalanced brackets", "y = x[1:2, 0", "y = x[1:2, 0"},
		{"unicode", "é = x[1:2, 0] # ü", "é = x[__slice__(1, 2, None), 0] # ü"},
		{"attribute named load", `m = nn.onnx.load("m.onnx")`, `m = nn.onnx.load_("m.onnx")`},
		{"load elsewhere untouched", `s = "a.load"; x.loads(1)`, `s = "a.load"; x.loads(1)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := translated(tc.in)
			if got != tc.want {
				t.Errorf("Translate(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if strings.Count(string(got), "\n") != strings.Count(tc.in, "\n") {
				t.Errorf("line count changed")
			}
		})
	}
}

// TestSubscriptsParse checks that rewritten subscripts are valid Starlark.
func TestSubscriptsParse(t *testing.T) {
	src := "y = x[1:4, ::2]\nz = x[..., 0, None, :]\nw = x[a[1:2, 0]:3, 1]\n"
	out := translated(src)
	if _, err := FileOptions.Parse("t.tg", out, 0); err != nil {
		t.Fatalf("rewritten source does not parse: %v\n%s", err, out)
	}
}

func TestPosMap(t *testing.T) {
	src := "a = 1\ny = x[1:4, ::2].sum()\nz = 2"
	tr, _ := Translate([]byte(src))
	out, pm := tr.Text, tr.Map
	lines := strings.Split(string(out), "\n")
	col := int32(strings.Index(lines[1], ".sum") + 2) // 1-based column of "sum"
	if got, want := pm.Col(2, col), int32(strings.Index(src, ".sum")-6+2); got != want {
		t.Errorf("sum: column %d maps to %d, want %d", col, got, want)
	}
	for _, c := range []int32{1, 5, 6} { // "y = x[" is unchanged
		if got := pm.Col(2, c); got != c {
			t.Errorf("column %d maps to %d", c, got)
		}
	}
	if got := pm.Col(1, 3); got != 3 {
		t.Errorf("unchanged line: %d", got)
	}
	if got := pm.Col(3, 5); got != 5 {
		t.Errorf("unchanged line 3: %d", got)
	}
	var none *PosMap
	if none.Col(4, 7) != 7 {
		t.Errorf("nil map")
	}
}

func TestRewriteKeepsPositions(t *testing.T) {
	f, err := FileOptions.Parse("t.tg", "y = a < b\nif c:\n  z = x[1:2]\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Translation{}).Rewrite(f); err != nil {
		t.Fatal(err)
	}
	as := f.Stmts[0].(*syntax.AssignStmt)
	cmp, ok := as.RHS.(*syntax.CallExpr)
	if !ok || cmp.Fn.(*syntax.Ident).Name != Cmp || cmp.Lparen.Col != 7 || cmp.Lparen.Line != 1 {
		t.Errorf("comparison: %#v", as.RHS)
	}
	ifs := f.Stmts[1].(*syntax.IfStmt)
	if c, ok := ifs.Cond.(*syntax.CallExpr); !ok || c.Fn.(*syntax.Ident).Name != Truth || c.Lparen.Line != 2 || c.Lparen.Col != 4 {
		t.Errorf("condition: %#v", ifs.Cond)
	}
	sl := ifs.True[0].(*syntax.AssignStmt).RHS.(*syntax.CallExpr)
	if sl.Fn.(*syntax.Ident).Name != GetSlice || sl.Lparen.Line != 3 || sl.Lparen.Col != 8 || len(sl.Args) != 4 {
		t.Errorf("slice: %#v", sl)
	}
}

func TestFStringRewrite(t *testing.T) {
	tests := []struct{ in, want string }{
		{`f"a{x}b"`, `__fstr__("a{}b", (x))`},
		{`f'{x:.2f}'`, `__fstr__('{:.2f}', (x))`},
		{`f"{x!r:>5}"`, `__fstr__("{!r:>5}", (x))`},
		{`f"{x=}"`, `__fstr__("x={!r}", (x))`},
		{`f"{x == 1}"`, `__fstr__("{}", (x == 1))`},
		{`f"{d['k']}"`, `__fstr__("{}", (d['k']))`},
		{`f"{a[1:2, 0]}"`, `__fstr__("{}", (a[__slice__(1, 2, None), 0]))`},
		{`f"{{}}"`, `__fstr__("{{}}")`},
		{`rf"\d{x}"`, `__fstr__(r"\d{}", (x))`},
		{`f"{}"`, `f"{}"`},
		{`f"{x"`, `f"{x"`},
		{`f"}"`, `f"}"`},
		{`f"{x:{w}}"`, `f"{x:{w}}"`},
		{`f"{"x"}"`, `f"{"x"}"`},
	}
	for _, tc := range tests {
		if got := translated(tc.in); got != tc.want {
			t.Errorf("Translate(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
