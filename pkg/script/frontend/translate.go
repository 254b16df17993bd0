package frontend

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Translate rewrites, in the program text, the Python that Starlark's
// grammar rejects into Starlark plus calls of hidden builtins (the table in
// docs/language.md lists each construct):
//
//	class M(B):               ->  def M(__tgclass__=(B,)):   (finished on the AST)
//	@deco                     ->  __tgdeco__(deco)           (finished on the AST)
//	with A() as a, B():       ->  for a, __tgw in __tgwith__(A(), B()):
//	from tinygrad import T    ->  T = __tgimport__("tinygrad", "T")
//	assert c, msg             ->  __tgassert__(c, lambda: msg)
//	raise E(msg)              ->  __tgraise__(E(msg))
//	del d[k]                  ->  __tgdel__(d, (k))
//	def f(x: T = 1) -> T:     ->  def f(x = 1):
//	x: T = v                  ->  x = v
//	a ** b                    ->  __tgpow__(a, b)
//	a @ b                     ->  a * __tgmatmul__(b)
//	a is b, a is not b        ->  a == b, a != b              (identity, on the AST)
//	f(x for x in y)           ->  f([x for x in y])
//	"a" "b"                   ->  ("a" + "b")
//	x[1:4, ::2]               ->  x[__slice__(1, 4, None), __slice__(None, None, 2)]
//	...                       ->  Ellipsis
//	f"a {x:.3f} b"            ->  __fstr__("a {:.3f} b", (x))
//	1_000                     ->  1000
//
// and refuses, with a message at the construct, the Python that tgc does
// not run (try, global, yield, async, the walrus operator, ...). Strings and
// comments are never touched. Newlines are never added or removed, so line
// numbers stay exact; the PosMap maps columns (and text moved across lines)
// back to the original.

// Hidden builtins of the text translation.
const (
	ClassMarker = "__tgclass__"  // the parameter that marks a translated class
	Deco        = "__tgdeco__"   // Deco(d): a decorator line
	With        = "__tgwith__"   // With(*managers): the iterable of a with block
	withVar     = "__tgw"        // the loop variable of a with item without "as"
	Import      = "__tgimport__" // Import(module, *names)
	Assert      = "__tgassert__" // Assert(cond[, lambda: msg])
	Raise       = "__tgraise__"  // Raise(exception)
	Del         = "__tgdel__"    // Del(container, key)
	Pow         = "__tgpow__"    // Pow(a, b): a ** b
	MatMul      = "__tgmatmul__" // MatMul(b): the right side of a @ b
)

// LoadAttr is how an attribute named load (a Starlark keyword, a plain
// name in Python) reaches the object: modules answer it as "load".
const LoadAttr = "load_"

// Translation is a translated source.
type Translation struct {
	Text []byte
	Map  *PosMap
	is   map[[2]int32]bool // translated positions of == / != that were is / is not
}

// Options are what the translation needs from the session that runs it.
type Options struct {
	// Import checks an import statement: the module (name ""), or a name
	// from it. Its error is reported at the module or the name.
	Import func(module, name string) error
}

// Translate translates a file with no import check.
func Translate(src []byte) (*Translation, error) { return Options{}.Translate(src) }

// Translate translates a file.
func (o Options) Translate(src []byte) (*Translation, error) {
	src = unixNewlines(src)
	toks, err := scan(src)
	if err != nil {
		return nil, err
	}
	t := &translator{src: src, toks: toks, opts: o}
	t.statements()
	if t.err == nil {
		t.expressions(0, len(toks))
	}
	if t.err != nil {
		return nil, t.err
	}
	return t.finish(), nil
}

// unixNewlines turns \r\n and \r into \n, as Starlark's scanner reads
// them; lines and columns stay the same.
func unixNewlines(src []byte) []byte {
	if bytes.IndexByte(src, '\r') < 0 {
		return src
	}
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(src, []byte("\r"), []byte("\n"))
}

// translateExpr translates one expression (an f-string field); changed
// reports whether the text changed.
func translateExpr(src []byte) ([]byte, bool, error) {
	toks, err := scan(src)
	if err != nil {
		return nil, false, err
	}
	t := &translator{src: src, toks: toks}
	t.expressions(0, len(toks))
	if t.err != nil {
		return nil, false, t.err
	}
	if len(t.edits) == 0 {
		return src, false, nil
	}
	tr := t.finish()
	return tr.Text, true, nil
}

type translator struct {
	ends  map[int]int // unaryEnd's answers: a ** chain asks for each link
	opts  Options
	src   []byte
	toks  []token
	edits []edit
	marks []int // indices into edits of the is / is not replacements
	err   *Error
}

// fail records the first error, at token k.
func (t *translator) fail(k int, format string, args ...any) {
	if t.err != nil {
		return
	}
	off := len(t.src)
	if k < len(t.toks) {
		off = t.toks[k].start
	}
	line, col := lineCol(t.src, off)
	t.err = &Error{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (t *translator) add(e ...edit) { t.edits = append(t.edits, e...) }

// finish applies the edits.
func (t *translator) finish() *Translation {
	marked := map[int]bool{}
	for _, i := range t.marks {
		marked[t.edits[i].start] = true
	}
	text, pm := apply(t.src, t.edits)
	tr := &Translation{Text: text, Map: pm}
	if len(marked) > 0 {
		// The marked replacements are the only edits at their offsets, so
		// their output positions are found by re-walking the edits.
		tr.is = map[[2]int32]bool{}
		sort.SliceStable(t.edits, func(i, j int) bool { return t.edits[i].before(t.edits[j]) })
		outPos, srcPos := 0, 0
		for _, e := range t.edits {
			if e.start < srcPos {
				continue
			}
			outPos += e.start - srcPos
			if marked[e.start] && !e.insertion() {
				line, col := lineCol(text, outPos)
				tr.is[[2]int32{int32(line), int32(col)}] = true
			}
			outPos += len(e.text)
			srcPos = e.end
		}
	}
	return tr
}

// ---- token helpers ----

func (t *translator) text(k int) string { return string(t.src[t.toks[k].start:t.toks[k].end]) }

func (t *translator) is(k int, s string) bool {
	return k >= 0 && k < len(t.toks) && t.toks[k].end-t.toks[k].start == len(s) && t.text(k) == s
}

func (t *translator) isOp(k int, s string) bool {
	return k >= 0 && k < len(t.toks) && (t.toks[k].kind == tOp || t.toks[k].kind == tOther) && t.is(k, s)
}

func (t *translator) isKeyword(k int) bool {
	return t.toks[k].kind == tName && keywords[t.text(k)]
}

// endsOperand reports whether token k can end an expression, so that a
// following "[" is a subscript and a following ** or @ is binary.
func (t *translator) endsOperand(k int) bool {
	if k < 0 {
		return false
	}
	switch t.toks[k].kind {
	case tName:
		return !keywords[t.text(k)]
	case tNumber, tString, tFString, tClose:
		return true
	case tOp:
		return t.is(k, "...")
	}
	return false
}

// skip returns the index after the bracket group opening at k (or k+1).
func (t *translator) skip(k, limit int) int {
	if t.toks[k].kind == tOpen {
		if m := t.toks[k].match; m >= 0 {
			return min(m+1, limit)
		}
		return limit
	}
	return k + 1
}

// find returns the first token in [a, b) at bracket depth 0 (relative to
// a) for which ok is true, or b.
func (t *translator) find(a, b int, ok func(k int) bool) int {
	for k := a; k < b; k = t.skip(k, b) {
		if ok(k) {
			return k
		}
	}
	return b
}

// split splits [a, b) at the depth-0 tokens for which sep is true.
func (t *translator) split(a, b int, sep func(k int) bool) [][2]int {
	var parts [][2]int
	start := a
	for k := a; k < b; k = t.skip(k, b) {
		if sep(k) {
			parts = append(parts, [2]int{start, k})
			start = k + 1
		}
	}
	return append(parts, [2]int{start, b})
}

// headerColon is the colon that ends a compound statement's header
// starting at a (lambdas inside the header have colons of their own).
func (t *translator) headerColon(a, b int) int {
	lambdas := 0
	return t.find(a, b, func(k int) bool {
		switch {
		case t.is(k, "lambda"):
			lambdas++
		case t.isOp(k, ":"):
			if lambdas == 0 {
				return true
			}
			lambdas--
		}
		return false
	})
}

// ---- statements ----

// header is an open compound statement, for the else check.
type header struct {
	indent int
	kw     string
}

// statements walks the logical lines.
func (t *translator) statements() {
	var open []header
	for a := 0; a < len(t.toks) && t.err == nil; {
		b := a + 1
		for b < len(t.toks) && !t.toks[b].bol {
			b++
		}
		indent := t.toks[a].indent
		for len(open) > 0 && open[len(open)-1].indent > indent {
			open = open[:len(open)-1]
		}
		kw := t.text(a)
		if kw == "else" || kw == "elif" {
			if n := len(open); n > 0 && open[n-1].indent == indent && (open[n-1].kw == "for" || open[n-1].kw == "while") {
				t.fail(a, "%s ... else is not supported: use a flag set before break", open[n-1].kw)
				return
			}
		}
		t.line(a, b)
		if isCompound(kw) {
			for len(open) > 0 && open[len(open)-1].indent >= indent {
				open = open[:len(open)-1]
			}
			if kw == "elif" || kw == "else" {
				kw = "if"
			}
			open = append(open, header{indent, kw})
		}
		a = b
	}
}

func isCompound(kw string) bool {
	switch kw {
	case "if", "elif", "else", "for", "while", "def", "class", "with", "try", "except", "finally":
		return true
	}
	return false
}

// line translates the logical line [a, b).
func (t *translator) line(a, b int) {
	s := a // where the simple statements begin
	switch t.text(a) {
	case "@":
		if t.toks[a].kind == tOp {
			t.decorator(a, b)
			return
		}
	case "class":
		t.class(a, b)
		s = t.headerColon(a, b) + 1
	case "def":
		t.def(a, b)
		s = t.headerColon(a, b) + 1
	case "with":
		t.with(a, b)
		s = t.headerColon(a, b) + 1
	case "async":
		t.fail(a, "async is not supported: tgc scripts run sequentially")
		return
	case "try", "except", "finally":
		t.fail(a, "try/except is not supported: a tgc script stops at the first error (check the values before the call instead)")
		return
	case "if", "elif", "while", "for":
		s = t.headerColon(a, b) + 1
	case "else":
		s = a + 2
	}
	if t.err != nil {
		return
	}
	for _, p := range t.split(s, b, func(k int) bool { return t.isOp(k, ";") }) {
		if p[0] < p[1] {
			t.simple(p[0], p[1])
		}
	}
}

// simple translates the simple statement [a, b).
func (t *translator) simple(a, b int) {
	switch t.text(a) {
	case "assert":
		t.assert(a, b)
	case "raise":
		t.raise(a, b)
	case "import", "from":
		t.importStmt(a, b)
	case "del":
		t.del(a, b)
	case "global", "nonlocal":
		t.fail(a, "%s is not supported: a function cannot rebind names outside it (return the new value, or keep state in an object's attribute)", t.text(a))
	default:
		if t.toks[a].kind == tName && !t.isKeyword(a) {
			t.annotation(a, b)
		}
	}
}

// decorator: @expr on a line of its own becomes Deco(expr).
func (t *translator) decorator(a, b int) {
	if a+1 >= b {
		t.fail(a, "a decorator needs an expression: @name")
		return
	}
	t.add(replace(t.toks[a].start, t.toks[a].end, Deco+"("), closeAt(t.toks[b-1].end, t.toks[a].start, t.toks[a].start, ")"))
}

// class: class N(B): becomes def N(__tgclass__=(B,)):.
func (t *translator) class(a, b int) {
	n := a + 1
	if n >= b || t.toks[n].kind != tName || t.isKeyword(n) {
		t.fail(min(n, b-1), "class needs a name: class Model:")
		return
	}
	t.add(replace(t.toks[a].start, t.toks[a].end, "def"))
	p := n + 1
	if p < b && t.is(p, "(") && t.toks[p].match > p {
		m := t.toks[p].match
		if k := t.find(p+1, m, func(k int) bool { return t.isOp(k, "=") || t.isOp(k, "*") || t.isOp(k, "**") }); k < m {
			t.fail(k, "class keyword arguments and unpacked bases (metaclass=...) are not supported")
			return
		}
		if m == p+1 {
			t.add(insert(t.toks[p].end, t.toks[p].start, ClassMarker+"=()"))
			return
		}
		closing := ",)"
		if t.isOp(m-1, ",") {
			closing = ")"
		}
		t.add(insert(t.toks[p].end, t.toks[p].start, ClassMarker+"=("), insert(t.toks[m].start, t.toks[m].start, closing))
		return
	}
	t.add(insert(t.toks[n].end, t.toks[n].end, "("+ClassMarker+"=())"))
}

// def: drop parameter and return annotations.
func (t *translator) def(a, b int) {
	p := a + 2
	if p >= b || !t.is(p, "(") || t.toks[p].match < 0 {
		return // the parser reports it
	}
	m := t.toks[p].match
	for _, prm := range t.split(p+1, m, func(k int) bool { return t.isOp(k, ",") }) {
		t.dropAnnotation(prm[0], prm[1], false)
	}
	colon := t.headerColon(m+1, b)
	if t.isOp(m+1, "->") && colon > m+2 && colon < b {
		t.add(replace(t.toks[m].end, t.toks[colon].start, ""))
	}
}

// dropAnnotation removes ": T" from a parameter or an assignment target
// [a, b); stmt: the whole statement is a bare annotation to become pass.
func (t *translator) dropAnnotation(a, b int, stmt bool) {
	k := a
	for k < b && (t.isOp(k, "*") || t.isOp(k, "**")) {
		k++
	}
	colon := t.find(k, b, func(j int) bool { return t.isOp(j, ":") || t.isOp(j, "=") })
	if colon >= b || !t.isOp(colon, ":") {
		return
	}
	eq := t.find(colon+1, b, func(j int) bool { return t.isOp(j, "=") })
	if eq < b {
		t.add(replace(t.toks[colon].start, t.toks[eq-1].end, ""))
		return
	}
	if stmt {
		t.add(replace(t.toks[a].start, t.toks[b-1].end, "pass"))
		return
	}
	t.add(replace(t.toks[colon].start, t.toks[b-1].end, ""))
}

// annotation: "x: T = v" and "self.x: T" at the start of a statement.
func (t *translator) annotation(a, b int) {
	k := a + 1
	for k < b {
		switch {
		case t.isOp(k, ".") && k+1 < b && t.toks[k+1].kind == tName:
			k += 2
		case t.is(k, "["):
			k = t.skip(k, b)
		default:
			if t.isOp(k, ":") {
				t.dropAnnotation(a, b, true)
			}
			return
		}
	}
}

// with: with A as a, B: becomes for a, __tgw in __tgwith__(A, B):.
func (t *translator) with(a, b int) {
	colon := t.headerColon(a, b)
	lo, hi := a+1, colon
	if lo >= hi {
		t.fail(a, "with needs a context manager: with Tensor.train():")
		return
	}
	// Python 3.10's parenthesized form: with (A() as a, B() as b):
	if t.is(lo, "(") && t.toks[lo].match == hi-1 {
		inner := t.find(lo+1, hi-1, func(k int) bool { return t.is(k, "as") || t.isOp(k, ",") })
		if inner < hi-1 {
			t.add(replace(t.toks[lo].start, t.toks[lo].end, ""), replace(t.toks[hi-1].start, t.toks[hi-1].end, ""))
			lo, hi = lo+1, hi-1
		}
	}
	// The head "for a, __tgw in __tgwith__(" names the targets first; each
	// target's text keeps pointing at where it was written.
	at := t.toks[a].start
	var head textWithOrigins
	head.add("for ", at)
	for n, it := range t.split(lo, hi, func(k int) bool { return t.isOp(k, ",") }) {
		if it[0] >= it[1] {
			t.fail(it[0], "a with item needs a context manager")
			return
		}
		as := t.find(it[0], it[1], func(k int) bool { return t.is(k, "as") })
		if as == it[0] || as == it[1]-1 {
			t.fail(as, "with ... as needs a context manager and a target")
			return
		}
		if n > 0 {
			head.add(", ", at)
		}
		if as == it[1] {
			head.add(withVar, t.toks[it[0]].start)
			continue
		}
		start, end := t.toks[as+1].start, t.toks[it[1]-1].end
		head.copy(t.src, start, end)
		t.add(replace(t.toks[as].start, end, ""))
	}
	head.add(" in "+With+"(", at)
	t.add(edit{start: at, end: t.toks[a].end, text: string(head.text), origins: head.origins})
	t.add(closeAt(t.toks[hi-1].end, t.toks[a].start, t.toks[a].start, ")"))
}

// textWithOrigins is the text of an edit whose bytes remember the source
// offsets they stand for.
type textWithOrigins struct {
	text    []byte
	origins []int32
}

// add appends s standing for offset at.
func (o *textWithOrigins) add(s string, at int) {
	o.text = append(o.text, s...)
	for range len(s) {
		o.origins = append(o.origins, int32(at))
	}
}

// copy appends src[start:end] (newlines as spaces: the text moves to
// another line), each byte standing for itself.
func (o *textWithOrigins) copy(src []byte, start, end int) {
	for i := start; i < end; i++ {
		c := src[i]
		if c == '\n' {
			c = ' '
		}
		o.text = append(o.text, c)
		o.origins = append(o.origins, int32(i))
	}
}

// assert c, msg becomes Assert(c, lambda: msg).
func (t *translator) assert(a, b int) {
	if a+1 >= b {
		t.fail(a, "assert needs a condition: assert x > 0, \"message\"")
		return
	}
	t.add(replace(t.toks[a].start, t.toks[a].end, Assert+"("))
	if comma := t.find(a+1, b, func(k int) bool { return t.isOp(k, ",") }); comma < b {
		if comma == b-1 {
			t.fail(comma, "assert ..., needs a message after the comma")
			return
		}
		t.add(replace(t.toks[comma].start, t.toks[comma].end, ", lambda:"))
	}
	t.add(closeAt(t.toks[b-1].end, t.toks[a].start, t.toks[a].start, ")"))
}

// raise E(msg) [from c] becomes Raise(E(msg)).
func (t *translator) raise(a, b int) {
	if a+1 >= b {
		t.fail(a, "raise needs an exception: raise ValueError(\"message\") (a bare raise re-raises in an except block, and tgc has no try/except)")
		return
	}
	t.add(replace(t.toks[a].start, t.toks[a].end, Raise+"("))
	if from := t.find(a+1, b, func(k int) bool { return t.is(k, "from") }); from < b {
		t.add(replace(t.toks[from-1].end, t.toks[b-1].end, ")"))
		return
	}
	t.add(closeAt(t.toks[b-1].end, t.toks[a].start, t.toks[a].start, ")"))
}

// del d[k], l[i] becomes Del(d, (k)), Del(l, (i)).
func (t *translator) del(a, b int) {
	if a+1 >= b {
		t.fail(a, "del needs a target: del d[key]")
		return
	}
	t.add(replace(t.toks[a].start, t.toks[a+1].start, "")) // "del " and the space after it
	for _, tg := range t.split(a+1, b, func(k int) bool { return t.isOp(k, ",") }) {
		last := tg[1] - 1
		if tg[0] > last || !t.is(last, "]") || t.toks[last].match <= tg[0] {
			t.fail(tg[0], "del removes an item (del d[key], del l[i]); a name cannot be deleted (assign None instead)")
			return
		}
		o := t.toks[last].match
		if t.find(o+1, last, func(k int) bool { return t.isOp(k, ":") }) < last {
			t.fail(o, "del of a slice is not supported: assign the kept part instead (l = l[:i] + l[j:])")
			return
		}
		t.add(open(t.toks[tg[0]].start, t.toks[last].end, Del+"("),
			replace(t.toks[o].start, t.toks[o].end, ", ("),
			replace(t.toks[last].start, t.toks[last].end, "))"))
	}
}

// importStmt: import a.b as c, d / from a.b import x as y, z.
func (t *translator) importStmt(a, b int) {
	name := func(k int) bool { return k < b && t.toks[k].kind == tName && !t.isKeyword(k) }
	// dotted reads a.b.c starting at k; it returns the name and the next index.
	dotted := func(k int) (string, int) {
		if !name(k) {
			return "", k
		}
		s := t.text(k)
		k++
		for k+1 < b && t.isOp(k, ".") && name(k+1) {
			s += "." + t.text(k+1)
			k += 2
		}
		return s, k
	}
	type binding struct {
		target, module, member string
		modTok, memTok         int // tokens to report an import error at
	}
	var binds []binding
	star := false
	var module string
	if t.is(a, "import") {
		for _, it := range t.split(a+1, b, func(k int) bool { return t.isOp(k, ",") }) {
			mod, k := dotted(it[0])
			modTok := it[0]
			if mod == "" {
				t.fail(it[0], "import needs a module name: import tinygrad")
				return
			}
			switch {
			case k == it[1]:
				top, _, _ := strings.Cut(mod, ".")
				binds = append(binds, binding{top, mod, "\x00top", modTok, modTok})
			case t.is(k, "as") && k+2 == it[1] && name(k+1):
				binds = append(binds, binding{t.text(k + 1), mod, "", modTok, modTok})
			default:
				t.fail(k, "expected \"as NAME\" or \",\" after import %s", mod)
				return
			}
		}
	} else {
		if t.isOp(a+1, ".") || t.isOp(a+1, "...") {
			t.fail(a+1, "relative imports are not supported: tgc scripts can import tinygrad, math and typing")
			return
		}
		var k int
		module, k = dotted(a + 1)
		if module == "" || !t.is(k, "import") {
			t.fail(min(k, b-1), "expected: from MODULE import NAME")
			return
		}
		lo, hi := k+1, b
		if lo < hi && t.is(lo, "(") && t.toks[lo].match == hi-1 {
			lo, hi = lo+1, hi-1
		}
		if lo+1 == hi && t.isOp(lo, "*") {
			star = true
		} else {
			for _, it := range t.split(lo, hi, func(k int) bool { return t.isOp(k, ",") }) {
				if it[0] == it[1] && it[1] == hi && len(binds) > 0 {
					continue // trailing comma
				}
				switch {
				case it[0]+1 == it[1] && name(it[0]):
					binds = append(binds, binding{t.text(it[0]), module, t.text(it[0]), a + 1, it[0]})
				case it[0]+3 == it[1] && name(it[0]) && t.is(it[0]+1, "as") && name(it[0]+2):
					binds = append(binds, binding{t.text(it[0] + 2), module, t.text(it[0]), a + 1, it[0]})
				default:
					t.fail(min(it[0], b-1), "expected NAME or NAME as ALIAS in from %s import ...", module)
					return
				}
			}
		}
	}
	if check := t.opts.Import; check != nil {
		if star {
			if err := check(module, ""); err != nil {
				t.fail(a+1, "%v", err)
				return
			}
		}
		for _, bd := range binds {
			if err := check(bd.module, ""); err != nil {
				t.fail(bd.modTok, "%v", err)
				return
			}
			if bd.member != "" && bd.member != "\x00top" {
				if err := check(bd.module, bd.member); err != nil {
					t.fail(bd.memTok, "%v", err)
					return
				}
			}
		}
	}
	// The statement becomes one assignment; the source's newlines stay
	// inside the call's parentheses.
	nl := strings.Count(string(t.src[t.toks[a].start:t.toks[b-1].end]), "\n")
	var lhs, rhs []string
	quote := func(s string) string { return `"` + s + `"` }
	if star {
		rhs = append(rhs, Import+"("+quote(module)+", \"*\""+strings.Repeat("\n", nl)+")")
	}
	for _, bd := range binds {
		lhs = append(lhs, bd.target)
		switch bd.member {
		case "":
			rhs = append(rhs, Import+"("+quote(bd.module)+")")
		case "\x00top":
			rhs = append(rhs, Import+"("+quote(bd.module)+", None)")
		default:
			rhs = append(rhs, Import+"("+quote(bd.module)+", "+quote(bd.member)+")")
		}
	}
	text := strings.Join(rhs, ", ")
	if len(lhs) > 0 {
		text = strings.Join(lhs, ", ") + " = " + text
		if nl > 0 { // keep the line count: newlines inside the last call
			text = text[:len(text)-1] + strings.Repeat("\n", nl) + ")"
		}
	}
	t.add(replace(t.toks[a].start, t.toks[b-1].end, text))
}

// ---- expressions ----

// expressions translates the expression-level constructs in [a, b).
func (t *translator) expressions(a, b int) {
	for k := a; k < b && t.err == nil; k++ {
		tk := t.toks[k]
		switch tk.kind {
		case tOp:
			t.operator(k, b)
		case tFString:
			if text, origins, ok := rewriteFString(t.src, tk.start, tk.end); ok {
				t.add(edit{start: tk.start, end: tk.end, text: text, origins: origins})
			}
			t.stringRun(k)
		case tString:
			if c := t.src[tk.start]; c == 'u' || c == 'U' {
				t.add(replace(tk.start, tk.start+1, ""))
			}
			t.stringRun(k)
		case tNumber:
			t.number(k)
		case tName:
			switch t.text(k) {
			case "is":
				if t.is(k+1, "not") {
					t.add(replace(tk.start, t.toks[k+1].end, "!="))
				} else {
					t.add(replace(tk.start, tk.end, "=="))
				}
				t.marks = append(t.marks, len(t.edits)-1)
			case "yield":
				t.fail(k, "yield is not supported: build and return a list instead")
			case "await":
				t.fail(k, "await is not supported: tgc scripts run sequentially")
			case "load":
				if t.isOp(k-1, ".") {
					// Python's attribute .load (nn.onnx.load) is a keyword to Starlark
					t.add(replace(tk.start, tk.end, LoadAttr))
				}
			}
		case tOpen:
			t.bracket(k)
		}
	}
}

// operator translates **, @, @=, :=, **=.
func (t *translator) operator(k, b int) {
	tk := t.toks[k]
	binary := !tk.bol && t.endsOperand(k-1)
	switch t.text(k) {
	case "...":
		t.add(replace(tk.start, tk.end, "Ellipsis"))
	case ":=":
		t.fail(k, "the walrus operator := is not supported: assign on a line of its own")
	case "**=":
		t.fail(k, "**= is not supported: write x = x ** y")
	case "**":
		if !binary {
			return // f(**kwargs)
		}
		left := t.operandStart(k - 1)
		right := t.unaryEnd(k+1, b)
		if left < 0 || right < 0 {
			return // the parser reports it
		}
		start, end := t.toks[left].start, t.toks[right].end
		t.add(open(start, end, Pow+"("), replace(t.toks[k-1].end, t.toks[k+1].start, ", "), closeAt(end, start, tk.start, ")"))
	case "@":
		if !binary {
			return // a decorator is handled per statement
		}
		right := t.unaryEnd(k+1, b)
		if right < 0 {
			return
		}
		start, end := t.toks[k+1].start, t.toks[right].end
		t.add(replace(tk.start, tk.end, "*"), open(start, end, MatMul+"("), closeAt(end, start, tk.start, ")"))
	case "@=":
		last := k + 1
		for last < b && !t.toks[last].bol && !t.isOp(last, ";") {
			last = t.skip(last, b)
		}
		last--
		if last <= k {
			return
		}
		start, end := t.toks[k+1].start, t.toks[last].end
		t.add(replace(tk.start, tk.end, "*="), open(start, end, MatMul+"("), closeAt(end, start, tk.start, ")"))
	}
}

// operandStart is the first token of the primary (with its trailers) that
// ends at token j: the left side of **.
func (t *translator) operandStart(j int) int {
	for j >= 0 {
		tk := t.toks[j]
		switch tk.kind {
		case tClose:
			o := tk.match
			if o < 0 {
				return -1
			}
			if c := t.src[t.toks[o].start]; (c == '(' || c == '[') && !t.toks[o].bol && t.endsOperand(o-1) {
				j = o - 1 // a call or subscript: its callee comes first
				continue
			}
			return o
		case tName, tNumber, tString, tFString, tOp:
			if !t.endsOperand(j) {
				return -1
			}
			if !tk.bol && t.isOp(j-1, ".") && j >= 2 && !t.toks[j-1].bol && t.endsOperand(j-2) {
				j -= 2
				continue
			}
			if (tk.kind == tString || tk.kind == tFString) && !tk.bol && j > 0 &&
				(t.toks[j-1].kind == tString || t.toks[j-1].kind == tFString) {
				j--
				continue
			}
			return j
		default:
			return -1
		}
	}
	return -1
}

// unaryEnd is the last token of the unary expression starting at k: unary
// operators, a primary with trailers, and a ** chain (right-associative).
func (t *translator) unaryEnd(k, b int) int {
	if e, ok := t.ends[k]; ok {
		return e
	}
	e := t.unaryEndOnce(k, b)
	if t.ends == nil {
		t.ends = map[int]int{}
	}
	t.ends[k] = e
	return e
}

func (t *translator) unaryEndOnce(k, b int) int {
	for k < b && (t.isOp(k, "-") || t.isOp(k, "+") || t.isOp(k, "~")) && !t.toks[k].bol {
		k++
	}
	if k >= b || t.toks[k].bol {
		return -1
	}
	j := -1
	switch t.toks[k].kind {
	case tOpen:
		if t.toks[k].match < 0 {
			return -1
		}
		j = t.toks[k].match
	case tName:
		if t.isKeyword(k) {
			return -1
		}
		j = k
	case tNumber:
		j = k
	case tString, tFString:
		j = k
		for j+1 < b && !t.toks[j+1].bol && (t.toks[j+1].kind == tString || t.toks[j+1].kind == tFString) {
			j++
		}
	case tOp:
		if !t.is(k, "...") {
			return -1
		}
		j = k
	default:
		return -1
	}
	for j+1 < b && !t.toks[j+1].bol {
		n := j + 1
		switch {
		case t.isOp(n, ".") && n+1 < b && t.toks[n+1].kind == tName:
			j = n + 1
		case (t.is(n, "(") || t.is(n, "[")) && t.toks[n].match > n:
			j = t.toks[n].match
		case t.isOp(n, "**"):
			if e := t.unaryEnd(n+1, b); e >= 0 {
				return e
			}
			return j
		default:
			return j
		}
	}
	return j
}

// number drops the underscores of 1_000 and refuses complex literals.
func (t *translator) number(k int) {
	s := t.text(k)
	low := strings.ToLower(s)
	if strings.HasSuffix(low, "j") && !strings.HasPrefix(low, "0x") {
		t.fail(k, "complex numbers are not supported")
		return
	}
	if strings.Contains(s, "_") {
		t.add(replace(t.toks[k].start, t.toks[k].end, strings.ReplaceAll(s, "_", "")))
	}
}

// stringRun joins adjacent string literals ("a" "b") with +, in
// parentheses so that "a" "b".upper() keeps Python's meaning.
func (t *translator) stringRun(k int) {
	isStr := func(j int) bool {
		return j >= 0 && j < len(t.toks) && (t.toks[j].kind == tString || t.toks[j].kind == tFString)
	}
	if isStr(k-1) && !t.toks[k].bol || !isStr(k+1) || t.toks[k+1].bol {
		return // not the first of a run
	}
	r := k + 1
	for isStr(r+1) && !t.toks[r+1].bol {
		r++
	}
	start, end := t.toks[k].start, t.toks[r].end
	t.add(open(start, end, "("))
	for j := k + 1; j <= r; j++ {
		t.add(insert(t.toks[j].start, t.toks[j].start, "+ "))
	}
	t.add(closeAt(end, start, t.toks[r].start, ")"))
}

// bracket handles a generator expression as a call's argument and
// multi-dimensional subscripts.
func (t *translator) bracket(k int) {
	m := t.toks[k].match
	if m < 0 {
		return
	}
	switch t.src[t.toks[k].start] {
	case '(':
		// f(x for x in y) -> f([x for x in y])
		commas := false
		fr := t.find(k+1, m, func(j int) bool {
			commas = commas || t.isOp(j, ",")
			return t.is(j, "for")
		})
		if fr < m && fr > k+1 && !commas && t.find(fr, m, func(j int) bool { return t.isOp(j, ",") }) == m {
			t.add(open(t.toks[k+1].start, t.toks[m-1].end, "["), closeAt(t.toks[m-1].end, t.toks[k+1].start, t.toks[m].start, "]"))
		}
	case '[':
		if t.toks[k].bol || !t.endsOperand(k-1) {
			return
		}
		t.subscript(k, m)
	}
}

// subscript rewrites x[a:b, c] (a comma and a colon at the top level) into
// slice values; a single slice x[1:4] is valid Starlark.
func (t *translator) subscript(k, m int) {
	if t.find(k+1, m, func(j int) bool { return t.is(j, "lambda") }) < m {
		return
	}
	elems := t.split(k+1, m, func(j int) bool { return t.isOp(j, ",") })
	if len(elems) < 2 {
		return
	}
	type elem struct {
		first, last int
		colons      []int
	}
	var es []elem
	for _, e := range elems {
		el := elem{first: e[0], last: e[1] - 1}
		for j := e[0]; j < e[1]; j = t.skip(j, e[1]) {
			if t.isOp(j, ":") {
				el.colons = append(el.colons, j)
			}
		}
		if len(el.colons) > 2 {
			return // the parser rejects it
		}
		es = append(es, el)
	}
	for _, e := range es {
		if len(e.colons) == 0 || e.first > e.last {
			continue
		}
		start, end := t.toks[e.first].start, t.toks[e.last].end
		openText := MakeSlice + "("
		if e.colons[0] == e.first {
			openText += "None"
		}
		t.add(open(start, end, openText))
		for ci, c := range e.colons {
			text := ", "
			next := e.last + 1
			if ci+1 < len(e.colons) {
				next = e.colons[ci+1]
			}
			if c+1 == next {
				text += "None"
			}
			t.add(replace(t.toks[c].start, t.toks[c].end, text))
		}
		closing := ")"
		if len(e.colons) == 1 {
			closing = ", None)"
		}
		t.add(closeAt(end, start, t.toks[e.last].start, closing))
	}
}
