package frontend

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The scanner splits the source into the tokens the translator needs:
// names, numbers, strings, brackets and operators, each knowing whether it
// starts a logical line and at which indentation. It never fails on what
// Starlark's parser will report better (an unterminated string runs to the
// end of its line); it fails only on bytes no parser should see: a NUL
// anywhere, invalid UTF-8 outside string literals, and a source or literal
// over the size limits.

// Limits bound what a script may ask the parser to hold in memory.
const (
	// MaxSource is the largest script, in bytes.
	MaxSource = 4 << 20
	// MaxLiteral is the largest single literal (a string, or a list,
	// tuple, dict or set display), in bytes of source text.
	MaxLiteral = 1 << 20
)

// Error is a translation error at a position of the original source.
type Error struct {
	Line, Col int // 1-based; Col counts runes
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

type tokKind uint8

const (
	tOther   tokKind = iota
	tName            // identifier or keyword
	tNumber          // numeric literal
	tString          // string or bytes literal, any quoting
	tFString         // f-string literal, prefix included
	tOpen            // ( [ {
	tClose           // ) ] }
	tOp              // operators and punctuation: , : ; . = ** -> ...
)

// token is one token of the source.
type token struct {
	kind       tokKind
	start, end int  // byte offsets
	bol        bool // first token of a logical line
	indent     int  // for bol tokens: bytes of leading whitespace
	match      int  // for brackets: index of the matching bracket, or -1
}

// operators, longest first: the scanner takes the longest match.
var operators = []string{
	"**=", "//=", ">>=", "<<=", "...",
	"**", "//", "->", ":=", "==", "!=", "<=", ">=", "<<", ">>",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=",
	"+", "-", "*", "/", "%", "@", "&", "|", "^", "~", "<", ">",
	"=", ".", ",", ":", ";", "!",
}

// keywords are Python's; after one, "[" opens a list, not a subscript.
var keywords = map[string]bool{
	"and": true, "or": true, "not": true, "in": true, "is": true, "if": true,
	"elif": true, "else": true, "for": true, "while": true, "return": true,
	"lambda": true, "def": true, "pass": true, "break": true, "continue": true,
	"load": true, "yield": true, "import": true, "from": true, "as": true,
	"assert": true, "del": true, "global": true, "nonlocal": true, "raise": true,
	"try": true, "except": true, "finally": true, "with": true, "class": true,
	"async": true, "await": true,
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// isStringPrefix reports whether name is a string prefix such as r, rb or
// f, and whether it makes an f-string.
func isStringPrefix(name string) (prefix, fstring bool) {
	switch strings.ToLower(name) {
	case "r", "b", "u", "rb", "br":
		return true, false
	case "f", "rf", "fr":
		return true, true
	}
	return false, false
}

// scanner holds the source and computes positions for errors.
type scanner struct {
	src []byte
}

// errorAt is an *Error at byte offset off.
func (s *scanner) errorAt(off int, format string, args ...any) *Error {
	line, col := lineCol(s.src, off)
	return &Error{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// lineCol is the 1-based line and rune column of byte offset off.
func lineCol(src []byte, off int) (int, int) {
	off = min(off, len(src))
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	return bytes.Count(src[:ls], []byte{'\n'}) + 1, utf8.RuneCount(src[ls:off]) + 1
}

// scan tokenizes src.
func scan(src []byte) ([]token, *Error) {
	s := &scanner{src: src}
	if len(src) > MaxSource {
		return nil, &Error{Line: 1, Col: 1, Msg: fmt.Sprintf("the script is %d bytes; a script may have at most %d (%d MiB)", len(src), MaxSource, MaxSource>>20)}
	}
	if i := bytes.IndexByte(src, 0); i >= 0 {
		return nil, s.errorAt(i, "the script contains a NUL byte (a binary file, or a corrupt one?)")
	}
	var toks []token
	var stack []int // indices of open brackets
	bol := true
	indent := 0
	lineStart := 0
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			if len(stack) == 0 {
				bol = true
			}
			i++
			lineStart = i
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
			continue
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || src[i+1] == '\r'):
			i += 2 // line continuation
			if src[i-1] == '\r' && i < len(src) && src[i] == '\n' {
				i++
			}
			continue
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				if src[i] >= 0x80 {
					r, size := utf8.DecodeRune(src[i:])
					if r == utf8.RuneError && size == 1 {
						return nil, s.errorAt(i, "invalid UTF-8 byte 0x%02x in a comment (a script is UTF-8 text)", src[i])
					}
					i += size
					continue
				}
				i++
			}
			continue
		}
		if bol {
			indent = i - lineStart
		}
		start := i
		kind := tOther
		switch {
		case c == '"' || c == '\'':
			i = scanString(src, i)
			kind = tString
		case isIdentStart(c):
			for i < len(src) && isIdentChar(src[i]) {
				if src[i] >= 0x80 {
					r, size := utf8.DecodeRune(src[i:])
					if r == utf8.RuneError && size == 1 {
						return nil, s.errorAt(i, "invalid UTF-8 byte 0x%02x outside a string (a script is UTF-8 text)", src[i])
					}
					i += size
					continue
				}
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
		case c == '(' || c == '[' || c == '{':
			i++
			kind = tOpen
		case c == ')' || c == ']' || c == '}':
			i++
			kind = tClose
		default:
			for _, op := range operators {
				if bytes.HasPrefix(src[i:], []byte(op)) {
					i += len(op)
					kind = tOp
					break
				}
			}
			if kind != tOp {
				r, size := utf8.DecodeRune(src[i:])
				if r == utf8.RuneError && size == 1 {
					return nil, s.errorAt(i, "invalid UTF-8 byte 0x%02x outside a string (a script is UTF-8 text)", c)
				}
				i += size
			}
		}
		if (kind == tString || kind == tFString) && i-start > MaxLiteral {
			return nil, s.errorAt(start, "a string literal of %d bytes; a literal may have at most %d (%d MiB): read large data from a file (nn.state.safe_load)", i-start, MaxLiteral, MaxLiteral>>20)
		}
		t := token{kind: kind, start: start, end: i, bol: bol, indent: indent, match: -1}
		bol = false
		switch kind {
		case tOpen:
			stack = append(stack, len(toks))
		case tClose:
			if n := len(stack); n > 0 {
				o := stack[n-1]
				stack = stack[:n-1]
				toks[o].match = len(toks)
				t.match = o
				if toks[o].start+MaxLiteral < i && src[toks[o].start] != '(' {
					return nil, s.errorAt(toks[o].start, "a literal of %d bytes; a literal may have at most %d (%d MiB): read large data from a file (nn.state.safe_load)", i-toks[o].start, MaxLiteral, MaxLiteral>>20)
				}
			}
		}
		toks = append(toks, t)
	}
	return toks, nil
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
		case isIdentChar(c) && c < 0x80 || c == '.':
			i++
		case (c == '+' || c == '-') && !hex && (src[i-1] == 'e' || src[i-1] == 'E'):
			i++
		default:
			return i
		}
	}
	return i
}
