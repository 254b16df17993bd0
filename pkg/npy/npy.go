// Package npy reads and writes numpy's .npy format (versions 1 to 3): a
// magic string, a header that is a Python dict literal (descr,
// fortran_order, shape) and the raw elements.
package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Array is a decoded .npy file: a numpy dtype name ("float32", "int64",
// "bool", ...), a shape, and little-endian elements in C order.
type Array struct {
	DType string
	Shape []int
	Data  []byte
}

var magic = []byte("\x93NUMPY")

// dtypes maps numpy's type characters and sizes to names.
var dtypes = map[string]string{
	"b1": "bool", "?1": "bool",
	"i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
	"i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64",
	"f2": "float16", "f4": "float32", "f8": "float64",
}

// Size is the element size of a dtype name (0 if unknown).
func Size(dtype string) int {
	for code, name := range dtypes {
		if name == dtype {
			return int(code[1] - '0')
		}
	}
	return 0
}

// maxElements bounds what a header may ask for before any allocation.
const maxElements = math.MaxInt32

// ReadFile reads a .npy file.
func ReadFile(path string) (*Array, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Decode parses a .npy file's bytes. Big-endian data is swapped and
// Fortran-ordered data transposed, so the result is little-endian C order.
func Decode(b []byte) (*Array, error) {
	if len(b) < 10 || !bytes.Equal(b[:6], magic) {
		return nil, errors.New("not a .npy file (no \\x93NUMPY magic)")
	}
	major := b[6]
	var hlen, start int
	switch major {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, errors.New("truncated header length")
		}
		n := binary.LittleEndian.Uint32(b[8:12])
		if n > uint32(len(b)) {
			return nil, fmt.Errorf("header length %d is past the end of the file (%d bytes)", n, len(b))
		}
		hlen, start = int(n), 12
	default:
		return nil, fmt.Errorf("unsupported .npy version %d", major)
	}
	if start+hlen > len(b) {
		return nil, fmt.Errorf("header of %d bytes is past the end of the file (%d bytes)", hlen, len(b))
	}
	h, err := parseHeader(string(b[start : start+hlen]))
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	descr := h.descr
	if len(descr) < 3 {
		return nil, fmt.Errorf("unsupported dtype %q", descr)
	}
	order, code := descr[0], descr[1:]
	name, ok := dtypes[code]
	if !ok || (order != '<' && order != '>' && order != '|' && order != '=') {
		return nil, fmt.Errorf("unsupported dtype %q (tgc reads bool, ints and floats)", descr)
	}
	size := int(code[1] - '0')
	n := 1
	for _, d := range h.shape {
		if d < 0 || (d > 0 && n > maxElements/d) {
			return nil, fmt.Errorf("shape %v is too large", h.shape)
		}
		n *= d
	}
	data := b[start+hlen:]
	if len(data) != n*size {
		return nil, fmt.Errorf("%d data bytes, shape %v of %s needs %d", len(data), h.shape, name, n*size)
	}
	out := make([]byte, len(data))
	copy(out, data)
	if order == '>' && size > 1 {
		for i := 0; i < len(out); i += size {
			for j := range size / 2 {
				out[i+j], out[i+size-1-j] = out[i+size-1-j], out[i+j]
			}
		}
	}
	if h.fortran && len(h.shape) > 1 {
		out = fortranToC(out, h.shape, size)
	}
	return &Array{DType: name, Shape: h.shape, Data: out}, nil
}

// fortranToC reorders column-major elements into row-major order.
func fortranToC(in []byte, shape []int, size int) []byte {
	out := make([]byte, len(in))
	r := len(shape)
	idx := make([]int, r)
	n := len(in) / size
	for c := range n { // c: C-order flat index; f: its Fortran offset
		f, st := 0, 1
		for j := range r {
			f += idx[j] * st
			st *= shape[j]
		}
		copy(out[c*size:(c+1)*size], in[f*size:(f+1)*size])
		for j := r - 1; j >= 0; j-- {
			idx[j]++
			if idx[j] < shape[j] {
				break
			}
			idx[j] = 0
		}
	}
	return out
}

type header struct {
	descr   string
	fortran bool
	shape   []int
}

// parseHeader reads the dict literal {'descr': '<f4', 'fortran_order':
// False, 'shape': (2, 3), } (keys in any order, nothing else).
func parseHeader(s string) (header, error) {
	var h header
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return h, fmt.Errorf("not a dict: %.40q", s)
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	seen := map[string]bool{}
	for s != "" {
		key, rest, err := pyString(s)
		if err != nil {
			return h, err
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, ":") {
			return h, fmt.Errorf("expected ':' after %q", key)
		}
		rest = strings.TrimSpace(rest[1:])
		switch key {
		case "descr":
			h.descr, rest, err = pyString(rest)
		case "fortran_order":
			switch {
			case strings.HasPrefix(rest, "True"):
				h.fortran, rest = true, rest[4:]
			case strings.HasPrefix(rest, "False"):
				rest = rest[5:]
			default:
				err = errors.New("fortran_order must be True or False")
			}
		case "shape":
			h.shape, rest, err = pyTuple(rest)
		default:
			err = fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return h, err
		}
		seen[key] = true
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, ",") {
			rest = strings.TrimSpace(rest[1:])
		} else if rest != "" {
			return h, fmt.Errorf("expected ',' after %s", key)
		}
		s = rest
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("no %q", k)
		}
	}
	return h, nil
}

// pyString reads a quoted Python string (no escapes are needed here).
func pyString(s string) (string, string, error) {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return "", s, fmt.Errorf("expected a string at %.20q", s)
	}
	end := strings.IndexByte(s[1:], s[0])
	if end < 0 {
		return "", s, errors.New("unterminated string")
	}
	return s[1 : 1+end], s[2+end:], nil
}

// pyTuple reads a tuple of non-negative ints: (), (3,), (2, 3).
func pyTuple(s string) ([]int, string, error) {
	if !strings.HasPrefix(s, "(") {
		return nil, s, errors.New("shape must be a tuple")
	}
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return nil, s, errors.New("unterminated shape tuple")
	}
	shape := []int{}
	for _, part := range strings.Split(s[1:end], ",") {
		part = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(part), "L"))
		if part == "" {
			continue
		}
		d, err := strconv.Atoi(part)
		if err != nil || d < 0 {
			return nil, s, fmt.Errorf("bad dimension %q", part)
		}
		shape = append(shape, d)
	}
	return shape, s[end+1:], nil
}

// Encode writes an array as a version 1 .npy file (version 2 when the
// header does not fit in 64 KiB).
func Encode(a *Array) ([]byte, error) {
	var code string
	for c, name := range dtypes {
		if name == a.DType && c != "?1" {
			code = c
		}
	}
	if code == "" {
		return nil, fmt.Errorf("unsupported dtype %q", a.DType)
	}
	order := "<"
	if code[1] == '1' {
		order = "|"
	}
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(dims) == 1 {
		tuple += ","
	}
	tuple += ")"
	h := fmt.Sprintf("{'descr': '%s%s', 'fortran_order': False, 'shape': %s, }", order, code, tuple)
	pre := 10
	if len(h)+pre+1 > 65535 {
		pre = 12
	}
	pad := (64 - (pre+len(h)+1)%64) % 64
	h += strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.Write(magic)
	if pre == 10 {
		b.Write([]byte{1, 0})
		binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	} else {
		b.Write([]byte{2, 0})
		binary.Write(&b, binary.LittleEndian, uint32(len(h)))
	}
	b.WriteString(h)
	b.Write(a.Data)
	return b.Bytes(), nil
}
