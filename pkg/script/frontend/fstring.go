package frontend

import "strings"

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
		expr, changed, err := translateExpr(f.expr)
		if err != nil {
			return "", nil, false
		}
		add(string(expr), f.at, !changed)
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
