package frontend

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// The source preprocessor rewrites, in the program text, the pieces of
// Python syntax that Starlark's grammar rejects before any AST exists:
//
//	x[1:4, ::2]     ->  x[__slice__(1, 4, None), __slice__(None, None, 2)]
//	...             ->  Ellipsis
//	f"a {x:.3f} b"  ->  __fstr__("a {:.3f} b", (x))
//
// A subscript is rewritten only when its top-level contents hold both a comma
// and a colon (a single slice x[1:4] is valid Starlark and is handled on the
// AST). Strings and comments are skipped. Newlines are never added or
// removed, so line numbers stay exact; columns shift on rewritten lines, and
// the PosMap the preprocessor returns maps them back to the original text.

// tokKind classifies the few token kinds the preprocessor cares about.
type tokKind uint8

const (
	tOther    tokKind = iota
	tName             // identifier or keyword
	tNumber           // numeric literal
	tString           // string or bytes literal, any quoting
	tOpen             // ( [ {
	tClose            // ) ] }
	tComma            // ,
	tColon            // :
	tEllipsis         // ...
	tFString          // f-string literal, prefix included
)

type ptoken struct {
	kind       tokKind
	start, end int  // byte offsets in the source
	nl         bool // a statement-ending newline precedes this token
}

// LoadAttr is how an attribute named load (a Starlark keyword, a plain
// name in Python) reaches the object: modules answer it as "load".
const LoadAttr = "load_"

// keywords after which "[" starts a list, not a subscript.
var keywords = map[string]bool{
	"and": true, "or": true, "not": true, "in": true, "is": true, "if": true,
	"elif": true, "else": true, "for": true, "while": true, "return": true,
	"lambda": true, "def": true, "pass": true, "break": true, "continue": true,
	"load": true, "yield": true, "import": true, "from": true, "as": true,
	"assert": true, "del": true, "global": true, "nonlocal": true, "raise": true,
	"try": true, "except": true, "finally": true, "with": true, "class": true,
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// isStringPrefix reports whether name is a string prefix such as r, rb or
// f, and whether it makes an f-string.
func isStringPrefix(name string) (prefix, fstring bool) {
	switch strings.ToLower(name) {
	case "r", "b", "rb", "br":
		return true, false
	case "f", "rf", "fr":
		return true, true
	}
	return false, false
}

// scanTokens splits src into tokens, skipping whitespace and comments.
// Malformed input (an unterminated string) never fails: the token simply
// runs to the end of the line or file and Starlark reports the error.
func scanTokens(src []byte) []ptoken {
	var toks []ptoken
	depth := 0
	newline := false
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			if depth == 0 {
				newline = true
			}
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
			continue
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || src[i+1] == '\r'):
			i += 2 // line continuation
			continue
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		}
		start := i
		kind := tOther
		switch {
		case c == '"' || c == '\'':
			i = scanString(src, i)
			kind = tString
		case isIdentStart(c):
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
			kind = tName
			if i < len(src) && (src[i] == '"' || src[i] == '\'') {
				if prefix, fstr := isStringPrefix(string(src[start:i])); prefix {
					i = scanString(src, i)
					kind = tString
					if fstr {
						kind = tFString
					}
				}
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			i = scanNumber(src, i)
			kind = tNumber
		case c == '.' && i+2 < len(src) && src[i+1] == '.' && src[i+2] == '.':
			i += 3
			kind = tEllipsis
		case c == '(' || c == '[' || c == '{':
			i++
			kind = tOpen
			depth++
		case c == ')' || c == ']' || c == '}':
			i++
			kind = tClose
			depth = max(depth-1, 0)
		case c == ',':
			i++
			kind = tComma
		case c == ':':
			i++
			kind = tColon
		default:
			_, size := utf8.DecodeRune(src[i:])
			i += size
		}
		toks = append(toks, ptoken{kind: kind, start: start, end: i, nl: newline})
		newline = false
	}
	return toks
}

// scanString returns the end offset of the string literal whose opening
// quote is at src[i].
func scanString(src []byte, i int) int {
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	if triple {
		i += 3
	} else {
		i++
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\\':
			i += 2
			continue
		case c == '\n' && !triple:
			return i // unterminated; let the parser report it
		case c == q:
			if !triple {
				return i + 1
			}
			if i+2 < len(src) && src[i+1] == q && src[i+2] == q {
				return i + 3
			}
		}
		i++
	}
	return len(src)
}

// scanNumber returns the end offset of the number starting at src[i].
func scanNumber(src []byte, i int) int {
	hex := i+1 < len(src) && src[i] == '0' && (src[i+1] == 'x' || src[i+1] == 'X')
	for i < len(src) {
		c := src[i]
		switch {
		case isIdentChar(c) || c == '.':
			i++
		case (c == '+' || c == '-') && !hex && (src[i-1] == 'e' || src[i-1] == 'E'):
			i++
		default:
			return i
		}
	}
	return i
}

// edit replaces src[start:end] with text (an insertion when start == end).
// origins, if set, gives the source offset of each byte of text (for text
// moved from elsewhere); otherwise every byte maps to start.
type edit struct {
	start, end int
	text       string
	origins    []int32
}

// element is one comma-separated entry of a subscript: its token range and
// the indices of its top-level colons.
type element struct {
	first, last int // token indices, inclusive; first > last when empty
	colons      []int
}

// bracket is an open bracket being scanned.
type bracket struct {
	subscript bool
	commas    int
	lambda    bool
	elems     []element
}

// preprocess returns src with multi-dimensional subscripts, ellipses and
// f-strings rewritten, and a map from positions in the result back to src (nil when
// nothing changed).
func Translate(src []byte) ([]byte, *PosMap) {
	toks := scanTokens(src)
	var edits []edit
	var stack []*bracket
	for k, t := range toks {
		var top *bracket
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && t.kind != tClose {
			cur := &top.elems[len(top.elems)-1]
			if cur.first > cur.last && t.kind != tComma {
				cur.first = k
			}
			if t.kind != tComma {
				cur.last = k
			}
		}
		switch t.kind {
		case tEllipsis:
			edits = append(edits, edit{start: t.start, end: t.end, text: "Ellipsis"})
		case tFString:
			if text, origins, ok := rewriteFString(src, t.start, t.end); ok {
				edits = append(edits, edit{start: t.start, end: t.end, text: text, origins: origins})
			}
		case tName:
			name := string(src[t.start:t.end])
			if top != nil && name == "lambda" {
				top.lambda = true
			}
			if name == "load" && k > 0 && toks[k-1].end == t.start && src[toks[k-1].start] == '.' {
				// Python's attribute .load (nn.onnx.load) is a keyword to Starlark
				edits = append(edits, edit{start: t.start, end: t.end, text: LoadAttr})
			}
		case tComma:
			if top != nil {
				top.commas++
				top.elems = append(top.elems, element{first: k + 1, last: k})
			}
		case tColon:
			if top != nil {
				cur := &top.elems[len(top.elems)-1]
				cur.colons = append(cur.colons, k)
			}
		case tOpen:
			b := &bracket{elems: []element{{first: k + 1, last: k}}}
			b.subscript = src[t.start] == '[' && k > 0 && !t.nl && endsOperand(src, toks[k-1])
			stack = append(stack, b)
		case tClose:
			if top == nil {
				continue
			}
			stack = stack[:len(stack)-1]
			if len(stack) > 0 { // the closed bracket ends the enclosing element
				outer := stack[len(stack)-1]
				outer.elems[len(outer.elems)-1].last = k
			}
			if top.subscript && top.commas > 0 && !top.lambda {
				edits = append(edits, sliceEdits(toks, top.elems)...)
			}
		}
	}
	if len(edits) == 0 {
		return src, nil
	}
	// Insertions at an offset come before a replacement starting there;
	// otherwise the scan order is kept.
	sort.SliceStable(edits, func(i, j int) bool {
		if edits[i].start != edits[j].start {
			return edits[i].start < edits[j].start
		}
		return edits[i].end == edits[i].start && edits[j].end != edits[j].start
	})
	return applyEdits(src, edits)
}

// endsOperand reports whether t can end an expression, so that a following
// "[" is a subscript.
func endsOperand(src []byte, t ptoken) bool {
	switch t.kind {
	case tName:
		return !keywords[string(src[t.start:t.end])]
	case tNumber, tString, tFString, tEllipsis:
		return true
	case tClose:
		return true
	}
	return false
}

// sliceEdits turns each element with one or two top-level colons into a
// __slice__(start, stop, step) call. Elements with more colons are left for
// the parser to reject.
func sliceEdits(toks []ptoken, elems []element) []edit {
	for _, e := range elems {
		if len(e.colons) > 2 {
			return nil
		}
	}
	var edits []edit
	for _, e := range elems {
		if len(e.colons) == 0 || e.first > e.last {
			continue
		}
		open := "__slice__("
		if e.colons[0] == e.first {
			open += "None"
		}
		edits = append(edits, edit{start: toks[e.first].start, end: toks[e.first].start, text: open})
		for ci, c := range e.colons {
			text := ", "
			next := e.last + 1
			if ci+1 < len(e.colons) {
				next = e.colons[ci+1]
			}
			if c+1 == next {
				text += "None"
			}
			edits = append(edits, edit{start: toks[c].start, end: toks[c].end, text: text})
		}
		closing := ")"
		if len(e.colons) == 1 {
			closing = ", None)"
		}
		end := toks[e.last].end
		edits = append(edits, edit{start: end, end: end, text: closing})
	}
	return edits
}

// applyEdits builds the rewritten text and the position map.
func applyEdits(src []byte, edits []edit) ([]byte, *PosMap) {
	out := make([]byte, 0, len(src)+32*len(edits))
	origin := make([]int32, 0, cap(out)) // source offset of each output byte
	changed := map[int32]bool{}          // output lines that differ
	line := int32(1)
	copyTo := func(end, from int) {
		for i := from; i < end; i++ {
			if src[i] == '\n' {
				line++
			}
			out = append(out, src[i])
			origin = append(origin, int32(i))
		}
	}
	pos := 0
	for _, e := range edits {
		copyTo(e.start, pos)
		for i := range len(e.text) {
			if e.origins != nil {
				origin = append(origin, e.origins[i])
			} else {
				origin = append(origin, int32(e.start))
			}
			if e.text[i] == '\n' {
				changed[line] = true
				line++
			}
		}
		out = append(out, e.text...)
		changed[line] = true
		pos = e.end
	}
	copyTo(len(src), pos)

	m := &PosMap{cols: map[int32][]int32{}}
	srcStarts, outStarts := lineStarts(src), lineStarts(out)
	for l := range changed {
		if int(l) > len(outStarts) || int(l) > len(srcStarts) {
			continue
		}
		begin, end := outStarts[l-1], len(out)
		if int(l) < len(outStarts) {
			end = outStarts[l] - 1
		}
		var cols []int32
		for j := begin; j < end; {
			_, size := utf8.DecodeRune(out[j:])
			o := int(origin[j])
			ls := srcStarts[l-1]
			if o < ls { // moved from an earlier line: count from its own line
				ls = o
				for ls > 0 && src[ls-1] != '\n' {
					ls--
				}
			}
			cols = append(cols, int32(utf8.RuneCount(src[ls:o]))+1)
			j += size
		}
		m.cols[l] = cols
	}
	return out, m
}

// PosMap maps a (line, column) in the preprocessed text back to the
// original source. Lines are identical; only columns of rewritten lines
// differ, so only those lines are stored.
type PosMap struct {
	cols map[int32][]int32 // line -> original column of each output column
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// col maps a 1-based column on a line of the preprocessed text to the
// column in the original source.
func (m *PosMap) Col(line, col int32) int32 {
	if m == nil || col < 1 {
		return col
	}
	cols, ok := m.cols[line]
	if !ok {
		return col
	}
	if int(col-1) < len(cols) {
		return cols[col-1]
	}
	if len(cols) > 0 { // past the end of the line: keep the distance
		return cols[len(cols)-1] + col - int32(len(cols))
	}
	return col
}

// rewriteFString turns the f-string literal src[start:end] into a call of
// the __fstr__ builtin with a format template and the expressions:
//
//	f"loss {loss.item():.4f} at {i}"  ->  __fstr__("loss {:.4f} at {}", (loss.item()), (i))
//
// The template keeps the literal's quoting (minus the f), so escapes mean
// what they meant. x= (self-documenting) fields become "x={!r}". It
// returns ok=false for malformed literals, which are left for the parser
// to reject, and for nested fields in a format spec, which are not
// supported.
func rewriteFString(src []byte, start, end int) (text string, origins []int32, ok bool) {
	i := start
	var prefix []byte
	for src[i] != '"' && src[i] != '\'' {
		if src[i] != 'f' && src[i] != 'F' {
			prefix = append(prefix, src[i])
		}
		i++
	}
	q := src[i]
	quote := 1
	if i+2 < end && src[i+1] == q && src[i+2] == q {
		quote = 3
	}
	bodyStart, bodyEnd := i+quote, end-quote
	if bodyEnd < bodyStart || string(src[bodyEnd:end]) != strings.Repeat(string(q), quote) {
		return "", nil, false // unterminated
	}
	var tmpl []byte
	var tmplOrigins []int32
	emit := func(b []byte, at int) {
		for k := range b {
			tmpl = append(tmpl, b[k])
			tmplOrigins = append(tmplOrigins, int32(at+k))
		}
	}
	type field struct {
		expr  []byte
		at    int
		debug bool
	}
	var fields []field
	for j := bodyStart; j < bodyEnd; {
		c := src[j]
		switch {
		case c == '\\' && j+1 < bodyEnd:
			emit(src[j:j+2], j)
			j += 2
		case (c == '{' || c == '}') && j+1 < bodyEnd && src[j+1] == c:
			emit(src[j:j+2], j)
			j += 2
		case c == '}':
			return "", nil, false // single '}' is an error in Python
		case c == '{':
			exprEnd, stop, good := scanFieldExpr(src, j+1, bodyEnd, q)
			if !good || strings.TrimSpace(string(src[j+1:exprEnd])) == "" {
				return "", nil, false
			}
			f := field{expr: src[j+1 : exprEnd], at: j + 1}
			k := exprEnd
			if src[stop] == '=' { // {x=} prints the text "x=" (and spaces after it)
				f.debug = true
				k = stop + 1
				for k < bodyEnd && (src[k] == ' ' || src[k] == '\t') {
					k++
				}
				emit(src[j+1:k], j+1)
			}
			// the rest of the field: [!conv][:spec]}
			rest := k
			for rest < bodyEnd && src[rest] != '}' {
				if src[rest] == '{' {
					return "", nil, false // nested fields in a spec
				}
				rest++
			}
			if rest >= bodyEnd {
				return "", nil, false
			}
			spec := src[k:rest]
			emit([]byte{'{'}, j)
			if f.debug && len(spec) == 0 {
				emit([]byte("!r"), k)
			}
			emit(spec, k)
			emit([]byte{'}'}, rest)
			fields = append(fields, f)
			j = rest + 1
		default:
			emit(src[j:j+1], j)
			j++
		}
	}
	var sb strings.Builder
	add := func(s string, at int, sequential bool) {
		for k := range len(s) {
			if sequential {
				origins = append(origins, int32(at+k))
			} else {
				origins = append(origins, int32(at))
			}
		}
		sb.WriteString(s)
	}
	add(FStr+"(", start, false)
	add(string(prefix), start, false)
	add(strings.Repeat(string(q), quote), i, false)
	sb.Write(tmpl)
	origins = append(origins, tmplOrigins...)
	add(strings.Repeat(string(q), quote), bodyEnd, false)
	for _, f := range fields {
		add(", (", f.at, false)
		expr, pm := Translate(f.expr)
		add(string(expr), f.at, pm == nil)
		add(")", f.at+len(f.expr), false)
	}
	add(")", end-1, false)
	return sb.String(), origins, true
}

// scanFieldExpr finds the end of the expression of an f-string field that
// starts at i: the top-level '!' (conversion), ':' (spec), '=' (x=) or '}'.
// It returns the end of the expression, the offset of the stop character
// and whether one was found before end. Strings inside the expression must
// not use the enclosing quote q.
func scanFieldExpr(src []byte, i, end int, q byte) (exprEnd, stop int, ok bool) {
	depth := 0
	for j := i; j < end; j++ {
		c := src[j]
		switch {
		case c == '"' || c == '\'':
			if c == q {
				return 0, 0, false
			}
			k := j + 1
			for k < end && src[k] != c {
				if src[k] == '\\' {
					k++
				}
				k++
			}
			if k >= end {
				return 0, 0, false
			}
			j = k
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
		case depth > 0:
		case c == '}' || c == ':':
			return j, j, true
		case c == '!' && j+1 < end && src[j+1] != '=':
			return j, j, true
		case c == '=' && j+1 < end && src[j+1] != '=' && j > i && !strings.ContainsRune("=!<>", rune(src[j-1])):
			// x= : the expression ends before trailing spaces are kept in the text
			return j, j, true
		}
	}
	return 0, 0, false
}
