package pyrt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

// Python's string formatting for f-strings and format(value, spec): the
// preprocessor turns f"a {x:.3f}" into __fstr__("a {:.3f}", (x)), and
// FString fills the fields. Starlark's own % and str.format have no format
// specs, so this implements the format-spec mini-language:
// [[fill]align][sign][#][0][width][,|_][.precision][type].

// FString is the f-string builtin: __fstr__(template, *values).
func FString(c *Call) (starlark.Value, error) {
	if len(c.Args) == 0 || len(c.Kwargs) > 0 {
		return nil, fmt.Errorf("%s: want a template and values", c.Name)
	}
	tmpl, ok := starlark.AsString(c.Args[0])
	if !ok {
		return nil, fmt.Errorf("%s: template must be a string", c.Name)
	}
	vals := c.Args[1:]
	var sb strings.Builder
	n := 0
	for i := 0; i < len(tmpl); i++ {
		ch := tmpl[i]
		if (ch == '{' || ch == '}') && i+1 < len(tmpl) && tmpl[i+1] == ch {
			sb.WriteByte(ch)
			i++
			continue
		}
		if ch != '{' {
			sb.WriteByte(ch)
			continue
		}
		end := strings.IndexByte(tmpl[i:], '}')
		if end < 0 || n >= len(vals) {
			return nil, fmt.Errorf("f-string: malformed template %q", tmpl)
		}
		field := tmpl[i+1 : i+end]
		conv, spec := "", field
		if strings.HasPrefix(field, "!") {
			conv, spec, _ = strings.Cut(field[1:], ":")
		} else {
			spec = strings.TrimPrefix(field, ":")
		}
		s, err := formatField(vals[n], conv, spec)
		if err != nil {
			return nil, fmt.Errorf("f-string: %v", err)
		}
		sb.WriteString(s)
		n++
		i += end
	}
	return starlark.String(sb.String()), nil
}

// Format is Python's format(value, format_spec="").
func Format(c *Call) (starlark.Value, error) {
	var v starlark.Value
	spec := ""
	if err := c.Unpack("value", &v, "format_spec?", &spec); err != nil {
		return nil, err
	}
	s, err := formatField(v, "", spec)
	if err != nil {
		return nil, fmt.Errorf("format: %v", err)
	}
	return starlark.String(s), nil
}

// formatField applies a conversion (r, s, a or none) and then a spec.
func formatField(v starlark.Value, conv, spec string) (string, error) {
	switch conv {
	case "":
	case "s":
		v = starlark.String(str(v))
	case "r", "a":
		v = starlark.String(v.String())
	default:
		return "", fmt.Errorf("unknown conversion !%s", conv)
	}
	return formatSpec(v, spec)
}

// FormatHinter is a value that refuses format specs with a hint (a Tensor:
// format t.item() instead).
type FormatHinter interface {
	FormatSpecHint(spec string) string
}

// str is Python's str(v).
func str(v starlark.Value) string {
	if s, ok := v.(starlark.String); ok {
		return string(s)
	}
	return v.String()
}

// fspec is a parsed format spec.
type fspec struct {
	fill      rune
	align     byte // '<', '>', '^', '=' or 0
	sign      byte // '+', '-', ' ' or 0
	alt       bool
	width     int
	grouping  byte // ',' or '_' or 0
	precision int  // -1: none
	typ       byte // 0 or one of "bcdeEfFgGnosxX%"
}

func parseSpec(spec string) (fspec, error) {
	f := fspec{fill: ' ', precision: -1}
	s := spec
	isAlign := func(b byte) bool { return b == '<' || b == '>' || b == '^' || b == '=' }
	if r, size := utf8.DecodeRuneInString(s); size > 0 && len(s) > size && isAlign(s[size]) {
		f.fill, f.align, s = r, s[size], s[size+1:]
	} else if len(s) > 0 && isAlign(s[0]) {
		f.align, s = s[0], s[1:]
	}
	if len(s) > 0 && (s[0] == '+' || s[0] == '-' || s[0] == ' ') {
		f.sign, s = s[0], s[1:]
	}
	if len(s) > 0 && s[0] == '#' {
		f.alt, s = true, s[1:]
	}
	if len(s) > 0 && s[0] == '0' {
		if f.align == 0 {
			f.fill, f.align = '0', '='
		}
		s = s[1:]
	}
	digits := func() int {
		n := 0
		for len(s) > 0 && s[0] >= '0' && s[0] <= '9' && n < 1e6 {
			n, s = n*10+int(s[0]-'0'), s[1:]
		}
		return n
	}
	f.width = digits()
	if len(s) > 0 && (s[0] == ',' || s[0] == '_') {
		f.grouping, s = s[0], s[1:]
	}
	if len(s) > 0 && s[0] == '.' {
		s = s[1:]
		if len(s) == 0 || s[0] < '0' || s[0] > '9' {
			return f, fmt.Errorf("format spec %q: missing precision", spec)
		}
		f.precision = min(digits(), 100)
	}
	if len(s) == 1 && strings.IndexByte("bcdeEfFgGnosxX%", s[0]) >= 0 {
		f.typ, s = s[0], ""
	}
	if s != "" {
		return f, fmt.Errorf("invalid format spec %q", spec)
	}
	return f, nil
}

// formatSpec formats v like Python's format(v, spec).
func formatSpec(v starlark.Value, spec string) (string, error) {
	if spec == "" {
		return str(v), nil
	}
	if h, ok := v.(FormatHinter); ok {
		return "", fmt.Errorf("%s", h.FormatSpecHint(spec))
	}
	f, err := parseSpec(spec)
	if err != nil {
		return "", err
	}
	var body string
	neg := false
	switch x := v.(type) {
	case starlark.Bool: // Python formats a bool with a spec as an int
		if x {
			return formatSpec(starlark.MakeInt(1), spec)
		}
		return formatSpec(starlark.MakeInt(0), spec)
	case starlark.Int:
		i, ok := x.Int64()
		if !ok {
			return "", fmt.Errorf("integer %s is too large to format", x)
		}
		neg = i < 0
		if neg {
			i = -i
		}
		switch f.typ {
		case 0, 'd', 'n':
			body = group(strconv.FormatInt(i, 10), f.grouping)
		case 'b', 'o', 'x', 'X':
			base := map[byte]int{'b': 2, 'o': 8, 'x': 16, 'X': 16}[f.typ]
			body = strconv.FormatInt(i, base)
			if f.typ == 'X' {
				body = strings.ToUpper(body)
			}
			if f.alt {
				body = "0" + string(f.typ) + body
			}
		case 'c':
			return pad(f, string(rune(i)), '<'), nil
		case 'e', 'E', 'f', 'F', 'g', 'G', '%':
			return formatSpec(starlark.Float(float64(x.Float())), spec)
		default:
			return "", fmt.Errorf("format code %q is not for int", f.typ)
		}
	case starlark.Float:
		fl := float64(x)
		neg = math.Signbit(fl) && !math.IsNaN(fl)
		fl = math.Abs(fl)
		prec := f.precision
		if prec < 0 && f.typ != 0 {
			prec = 6
		}
		switch f.typ {
		case 'f', 'F':
			body = strconv.FormatFloat(fl, 'f', prec, 64)
		case 'e', 'E':
			body = strconv.FormatFloat(fl, 'e', prec, 64)
		case '%':
			body = strconv.FormatFloat(fl*100, 'f', prec, 64) + "%"
		case 'g', 'G', 'n':
			body = strconv.FormatFloat(fl, 'g', max(prec, 1), 64)
		case 0:
			if prec < 0 {
				body = starlark.Float(fl).String()
			} else {
				body = strconv.FormatFloat(fl, 'g', max(prec, 1), 64)
			}
		default:
			return "", fmt.Errorf("format code %q is not for float", f.typ)
		}
		if math.IsInf(fl, 0) {
			body = "inf"
		} else if math.IsNaN(fl) {
			body = "nan"
		}
		if f.typ == 'E' || f.typ == 'G' || f.typ == 'F' {
			body = strings.ToUpper(body)
		}
		if f.grouping != 0 && !strings.ContainsAny(body, "eEn") {
			intPart, frac, _ := strings.Cut(body, ".")
			if frac != "" {
				frac = "." + frac
			}
			body = group(intPart, f.grouping) + frac
		}
	default:
		if f.typ != 0 && f.typ != 's' {
			return "", fmt.Errorf("format code %q is not for %s", f.typ, v.Type())
		}
		s := str(v)
		if f.precision >= 0 && f.precision < utf8.RuneCountInString(s) {
			s = string([]rune(s)[:f.precision])
		}
		return pad(f, s, '<'), nil
	}
	sign := ""
	switch {
	case neg:
		sign = "-"
	case f.sign == '+':
		sign = "+"
	case f.sign == ' ':
		sign = " "
	}
	if f.align == '=' {
		n := f.width - len(sign) - utf8.RuneCountInString(body)
		if n > 0 {
			body = strings.Repeat(string(f.fill), n) + body
		}
		return sign + body, nil
	}
	return pad(f, sign+body, '>'), nil
}

// pad applies width, fill and alignment (def is the default alignment).
func pad(f fspec, s string, def byte) string {
	n := f.width - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	fill := string(f.fill)
	align := f.align
	if align == 0 || align == '=' {
		align = def
	}
	switch align {
	case '<':
		return s + strings.Repeat(fill, n)
	case '^':
		return strings.Repeat(fill, n/2) + s + strings.Repeat(fill, n-n/2)
	}
	return strings.Repeat(fill, n) + s
}

// group inserts a separator every three digits.
func group(digits string, sep byte) string {
	if sep == 0 || len(digits) <= 3 {
		return digits
	}
	var sb strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			sb.WriteByte(sep)
		}
		sb.WriteRune(d)
	}
	return sb.String()
}

// Reprer is a value whose repr differs from its str (an ndarray).
type Reprer interface{ Repr() string }

// Repr is repr(x): Starlark's, or the value's own.
func Repr(c *Call) (starlark.Value, error) {
	var x starlark.Value
	if err := c.Unpack("x", &x); err != nil {
		return nil, err
	}
	if r, ok := x.(Reprer); ok {
		return starlark.String(r.Repr()), nil
	}
	if s, ok := x.(starlark.String); ok {
		return starlark.String(s.String()), nil
	}
	return starlark.String(x.String()), nil
}
