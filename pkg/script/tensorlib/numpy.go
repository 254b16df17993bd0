package tensorlib

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.starlark.net/starlark"

	"tgc/pkg/half"
	"tgc/pkg/ir"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// t.numpy() is an ndarray: the tensor's values on the host, printed the way
// numpy 1.24 prints an array (print(a) is numpy's str, repr(a) its repr:
// array([...], dtype=float32)), with .tolist(), .item(), .shape, .dtype,
// .ndim, .size, len() and indexing. It is a snapshot, not a view.

type ndarray struct {
	dt    ir.DType
	shape []int
	vals  []float64
}

var (
	_ starlark.HasAttrs  = (*ndarray)(nil)
	_ starlark.Indexable = (*ndarray)(nil)
	_ pyrt.Reprer        = (*ndarray)(nil)
)

// numpyMethod is t.numpy().
func numpyMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	if err := c.NoArgs(); err != nil {
		return nil, err
	}
	vals, err := ReadValues(c, t)
	if err != nil {
		return nil, err
	}
	return &ndarray{dt: t.DType(), shape: t.Shape(), vals: vals}, nil
}

func (a *ndarray) Type() string          { return "ndarray" }
func (a *ndarray) Freeze()               {}
func (a *ndarray) Truth() starlark.Bool  { return starlark.Bool(len(a.vals) > 0) }
func (a *ndarray) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: ndarray") }
func (a *ndarray) String() string        { return a.str() }
func (a *ndarray) Repr() string          { return a.repr() }

func (a *ndarray) Len() int {
	if len(a.shape) == 0 {
		return 0
	}
	return a.shape[0]
}

// Index is a[i]: a row (an ndarray) or, for a 1-d array, a number.
func (a *ndarray) Index(i int) starlark.Value {
	stride := len(a.vals) / max(a.shape[0], 1)
	if len(a.shape) == 1 {
		return floatValue(a.dt, a.vals[i])
	}
	return &ndarray{dt: a.dt, shape: a.shape[1:], vals: a.vals[i*stride : (i+1)*stride]}
}

func (a *ndarray) AttrNames() []string {
	return []string{"dtype", "item", "ndim", "shape", "size", "tolist"}
}

func (a *ndarray) Attr(name string) (starlark.Value, error) {
	switch name {
	case "shape":
		return shapeTuple(a.shape), nil
	case "ndim":
		return starlark.MakeInt(len(a.shape)), nil
	case "size":
		return starlark.MakeInt(len(a.vals)), nil
	case "dtype":
		return starlark.String(numpyDType(a.dt)), nil
	case "tolist":
		return pyrt.Builtin("tolist", func(c *pyrt.Call) (starlark.Value, error) {
			if err := c.NoArgs(); err != nil {
				return nil, err
			}
			return nestedList(a.dt, a.shape, a.vals), nil
		}), nil
	case "item":
		return pyrt.Builtin("item", func(c *pyrt.Call) (starlark.Value, error) {
			if err := c.NoArgs(); err != nil {
				return nil, err
			}
			if len(a.vals) != 1 {
				return nil, fmt.Errorf("item: can only convert an array of size 1, this one has %d elements", len(a.vals))
			}
			return floatValue(a.dt, a.vals[0]), nil
		}), nil
	}
	return nil, fmt.Errorf("%s", pyrt.UnknownAttr("ndarray", "attribute", name, a.AttrNames()))
}

// numpyDType is numpy's name of a dtype.
func numpyDType(dt ir.DType) string {
	if dt == ir.Bool {
		return "bool"
	}
	return dt.String()
}

// ---- numpy's array2string (numpy/core/arrayprint.py, numpy 1.24) ----

const (
	npThreshold = 1000 // summarize arrays with more elements
	npEdgeItems = 3    // elements kept at each end of a summarized axis
	npLineWidth = 75
	npPrecision = 8
)

// str is numpy's str(a).
func (a *ndarray) str() string {
	if len(a.shape) == 0 {
		return scalarStr(a.dt, a.vals[0])
	}
	if len(a.vals) == 0 {
		return "[]"
	}
	return a.format(" ", "", npLineWidth)
}

// repr is numpy's repr(a).
func (a *ndarray) repr() string {
	dtypeStr := ""
	if a.dt != ir.Bool {
		dtypeStr = "dtype=" + numpyDType(a.dt) + ")"
	}
	var body string
	switch {
	case len(a.shape) == 0:
		body = a.format(", ", "array(", npLineWidth)
	case len(a.vals) == 0 && !(len(a.shape) == 1 && a.shape[0] == 0):
		body = "[], shape=" + shapeTuple(a.shape).String()
	case len(a.vals) == 0:
		body = "[]"
	default:
		suffix := ")"
		if dtypeStr != "" {
			suffix = ","
		}
		body = a.format(", ", "array(", npLineWidth-len(suffix))
	}
	s := "array(" + body
	if dtypeStr == "" {
		return s + ")"
	}
	s += ","
	lastLine := len(s) - (strings.LastIndexByte(s, '\n') + 1)
	if lastLine+len(dtypeStr)+1 > npLineWidth {
		return s + "\n" + strings.Repeat(" ", len("array(")) + dtypeStr
	}
	return s + " " + dtypeStr
}

// format is _array2string: the elements formatted alike, then laid out
// with _formatArray.
func (a *ndarray) format(sep, prefix string, width int) string {
	summarize := len(a.vals) > npThreshold
	shown := a.vals
	if summarize {
		shown = a.edgeValues()
	}
	if len(a.shape) == 0 {
		f := newElemFormat(a.dt, a.vals, false)
		return f.format(a.vals[0])
	}
	f := newElemFormat(a.dt, shown, true)
	return a.layout(f, sep, " "+strings.Repeat(" ", len(prefix)), width, summarize)
}

// edgeValues are the values a summarized array shows (_leading_trailing).
func (a *ndarray) edgeValues() []float64 {
	var out []float64
	var walk func(axis, off, stride int)
	walk = func(axis, off, stride int) {
		if axis == len(a.shape) {
			out = append(out, a.vals[off])
			return
		}
		n := a.shape[axis]
		inner := stride / max(n, 1)
		idx := make([]int, 0, n)
		if n > 2*npEdgeItems {
			for i := range npEdgeItems {
				idx = append(idx, i)
			}
			for i := n - npEdgeItems; i < n; i++ {
				idx = append(idx, i)
			}
		} else {
			for i := range n {
				idx = append(idx, i)
			}
		}
		for _, i := range idx {
			walk(axis+1, off+i*inner, inner)
		}
	}
	walk(0, 0, len(a.vals))
	return out
}

// layout is numpy's _formatArray (legacy=False).
func (a *ndarray) layout(f *elemFormat, sep, nextLinePrefix string, lineWidth int, summarize bool) string {
	strides := make([]int, len(a.shape))
	s := 1
	for i := len(a.shape) - 1; i >= 0; i-- {
		strides[i] = s
		s *= a.shape[i]
	}
	var rec func(axis, off int, hanging string, width int) string
	rec = func(axis, off int, hanging string, width int) string {
		if axis == len(a.shape) {
			return f.format(a.vals[off])
		}
		nextHanging := hanging + " "
		nextWidth := width - 1
		n := a.shape[axis]
		show := summarize && 2*npEdgeItems < n
		leading, trailing := 0, n
		if show {
			leading, trailing = npEdgeItems, npEdgeItems
		}
		var out string
		if axis == len(a.shape)-1 {
			elemWidth := width - max(len(strings.TrimRight(sep, " ")), 1)
			line := hanging
			for i := range leading {
				out, line = extendLine(out, line, rec(axis+1, off+i*strides[axis], nextHanging, nextWidth), elemWidth, hanging)
				line += sep
			}
			if show {
				out, line = extendLine(out, line, "...", elemWidth, hanging)
				line += sep
			}
			for i := trailing; i > 1; i-- {
				out, line = extendLine(out, line, rec(axis+1, off+(n-i)*strides[axis], nextHanging, nextWidth), elemWidth, hanging)
				line += sep
			}
			out, line = extendLine(out, line, rec(axis+1, off+(n-1)*strides[axis], nextHanging, nextWidth), elemWidth, hanging)
			out += line
		} else {
			lineSep := strings.TrimRight(sep, " ") + strings.Repeat("\n", len(a.shape)-axis-1)
			for i := range leading {
				out += hanging + rec(axis+1, off+i*strides[axis], nextHanging, nextWidth) + lineSep
			}
			if show {
				out += hanging + "..." + lineSep
			}
			for i := trailing; i > 1; i-- {
				out += hanging + rec(axis+1, off+(n-i)*strides[axis], nextHanging, nextWidth) + lineSep
			}
			out += hanging + rec(axis+1, off+(n-1)*strides[axis], nextHanging, nextWidth)
		}
		return "[" + out[len(hanging):] + "]"
	}
	return rec(0, 0, nextLinePrefix, lineWidth)
}

// extendLine is numpy's _extendLine.
func extendLine(s, line, word string, width int, nextLinePrefix string) (string, string) {
	needsWrap := len(line)+len(word) > width
	if len(line) <= len(nextLinePrefix) {
		needsWrap = false
	}
	if needsWrap {
		s += strings.TrimRight(line, " ") + "\n"
		line = nextLinePrefix
	}
	return s, line + word
}

// elemFormat formats the elements of one array alike (numpy's
// IntegerFormat, BoolFormat and FloatingFormat with floatmode "maxprec").
type elemFormat struct {
	dt       ir.DType
	intWidth int
	trueStr  string
	// floats
	exp      bool
	padLeft  int
	padRight int
	prec     int // exponential: digits after the point
	expSize  int
}

func newElemFormat(dt ir.DType, data []float64, array bool) *elemFormat {
	f := &elemFormat{dt: dt}
	switch {
	case dt == ir.Bool:
		f.trueStr = "True"
		if array {
			f.trueStr = " True"
		}
	case !dt.IsFloat():
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range data {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		f.intWidth = max(len(strconv.FormatInt(int64(lo), 10)), len(strconv.FormatInt(int64(hi), 10)))
	default:
		f.fillFloat(data)
	}
	return f
}

// fillFloat is FloatingFormat.fillFormat.
func (f *elemFormat) fillFloat(data []float64) {
	var finite []float64
	maxVal, minVal := 0.0, math.Inf(1)
	for _, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		finite = append(finite, v)
		if v != 0 {
			maxVal, minVal = math.Max(maxVal, math.Abs(v)), math.Min(minVal, math.Abs(v))
		}
	}
	if maxVal > 0 && (maxVal >= 1e8 || minVal < 0.0001 || maxVal/minVal > 1000) {
		f.exp = true
	}
	switch {
	case len(finite) == 0:
		f.padLeft, f.padRight, f.expSize = 0, 0, -1
	case f.exp:
		f.prec = 0
		for _, v := range finite {
			mant, exp := f.scientific(v, npPrecision, 0)
			_, frac, _ := strings.Cut(mant, ".")
			intPart, _, _ := strings.Cut(mant, ".")
			f.prec = max(f.prec, len(frac))
			f.padLeft = max(f.padLeft, len(intPart))
			f.expSize = max(f.expSize, len(exp)-1)
		}
		f.padRight = f.expSize + 2 + f.prec
	default:
		for _, v := range finite {
			s := f.positional(v)
			intPart, frac, _ := strings.Cut(s, ".")
			f.padLeft = max(f.padLeft, len(intPart))
			f.padRight = max(f.padRight, len(frac))
		}
	}
	if len(finite) != len(data) {
		neginf := false
		for _, v := range data {
			neginf = neginf || math.IsInf(v, -1)
		}
		inflen := 3
		if neginf {
			inflen = 4
		}
		f.padLeft = max(f.padLeft, 3-(f.padRight+1), inflen-(f.padRight+1))
	}
}

// digits is the shortest decimal that reads back as the same value of the
// element's dtype, in Go's 'e' form (d.ddde±XX), at most maxFrac digits
// after the point when maxFrac >= 0.
func (f *elemFormat) digitsE(v float64, maxFrac int) string {
	s := shortestE(f.dt, v)
	mant, exp, _ := strings.Cut(s, "e")
	if _, frac, _ := strings.Cut(mant, "."); maxFrac >= 0 && len(frac) > maxFrac {
		s = strconv.FormatFloat(v, 'e', maxFrac, bits(f.dt))
		mant, exp, _ = strings.Cut(s, "e")
		if strings.Contains(mant, ".") {
			mant = strings.TrimRight(mant, "0")
		}
		s = mant + "e" + exp
	}
	return s
}

// bits is the float width that decides the shortest digits (float16 is
// handled by shortestE; ints and bools never reach it).
func bits(ir.DType) int { return 32 }

// shortestE is the shortest 'e' form that round-trips in dt.
func shortestE(dt ir.DType, v float64) string {
	if dt != ir.Float16 {
		return strconv.FormatFloat(v, 'e', -1, bits(dt))
	}
	for p := 0; p < 6; p++ {
		s := strconv.FormatFloat(v, 'e', p, 64)
		r, _ := strconv.ParseFloat(s, 64)
		if half.ToFloat32(half.FromFloat32(float32(r))) == float32(v) {
			return s
		}
	}
	return strconv.FormatFloat(v, 'e', 5, 64)
}

// scientific is dragon4_scientific(v, precision=prec, min_digits=minDigits,
// unique=True) as (mantissa, exponent): "1.5", "-05". Digits past the
// shortest unique ones, up to minDigits, are the value's own digits.
func (f *elemFormat) scientific(v float64, prec, minDigits int) (string, string) {
	s := f.digitsE(math.Abs(v), prec)
	mant, exp, _ := strings.Cut(s, "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if len(frac) < minDigits {
		s = strconv.FormatFloat(math.Abs(v), 'e', minDigits, bits(f.dt))
		mant, exp, _ = strings.Cut(s, "e")
		intPart, frac, _ = strings.Cut(mant, ".")
	}
	if math.Signbit(v) {
		intPart = "-" + intPart
	}
	sign := exp[:1]
	digits := strings.TrimLeft(exp[1:], "0")
	for len(digits) < 2 {
		digits = "0" + digits
	}
	return intPart + "." + frac, sign + digits
}

// positional is dragon4_positional(v, precision=8, unique=True,
// fractional=True, trim='.'): "1.", "0.25", "-3.1415927".
func (f *elemFormat) positional(v float64) string {
	s := f.digitsE(math.Abs(v), -1)
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac // the significant digits, the point after the first
	point := 1 + e           // digits before the point
	var ip, fp string
	switch {
	case point <= 0:
		ip, fp = "0", strings.Repeat("0", -point)+digits
	case point >= len(digits):
		ip, fp = digits+strings.Repeat("0", point-len(digits)), ""
	default:
		ip, fp = digits[:point], digits[point:]
	}
	fp = strings.TrimRight(fp, "0")
	if len(fp) > npPrecision { // more than 8 digits after the point: round
		r := strconv.FormatFloat(math.Abs(v), 'f', npPrecision, bits(f.dt))
		ip, fp, _ = strings.Cut(r, ".")
		fp = strings.TrimRight(fp, "0")
	}
	if math.Signbit(v) && !(ip == "0" && fp == "" && v == 0 && !math.Signbit(v)) {
		ip = "-" + ip
	}
	return ip + "." + fp
}

func (f *elemFormat) format(v float64) string {
	switch {
	case f.dt == ir.Bool:
		if v != 0 {
			return f.trueStr
		}
		return "False"
	case !f.dt.IsFloat():
		s := strconv.FormatInt(int64(v), 10)
		return strings.Repeat(" ", max(f.intWidth-len(s), 0)) + s
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		s := "nan"
		if math.IsInf(v, 1) {
			s = "inf"
		} else if math.IsInf(v, -1) {
			s = "-inf"
		}
		return strings.Repeat(" ", max(f.padLeft+f.padRight+1-len(s), 0)) + s
	}
	if f.exp {
		mant, exp := f.scientific(v, f.prec, f.prec)
		intPart, frac, _ := strings.Cut(mant, ".")
		for len(exp)-1 < f.expSize {
			exp = exp[:1] + "0" + exp[1:]
		}
		return strings.Repeat(" ", max(f.padLeft-len(intPart), 0)) + intPart + "." + frac + "e" + exp
	}
	s := f.positional(v)
	intPart, frac, _ := strings.Cut(s, ".")
	return strings.Repeat(" ", max(f.padLeft-len(intPart), 0)) + intPart + "." + frac + strings.Repeat(" ", max(f.padRight-len(frac), 0))
}

// scalarStr is str() of a numpy scalar (a 0-d array prints as one).
func scalarStr(dt ir.DType, v float64) string {
	switch {
	case dt == ir.Bool:
		if v != 0 {
			return "True"
		}
		return "False"
	case !dt.IsFloat():
		return strconv.FormatInt(int64(v), 10)
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	f := &elemFormat{dt: dt}
	if a := math.Abs(v); a != 0 && (a < 1e-4 || a >= 1e16) {
		mant, exp := f.scientific(v, -1, 0)
		return strings.TrimSuffix(mant, ".") + "e" + exp
	}
	s := f.positional(v)
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	return s
}

// nestedList is tolist() of values in a shape.
func nestedList(dt ir.DType, shape []int, vals []float64) starlark.Value {
	if len(shape) == 0 {
		return floatValue(dt, vals[0])
	}
	stride := 1
	for _, d := range shape[1:] {
		stride *= d
	}
	elems := make([]starlark.Value, shape[0])
	for i := range elems {
		elems[i] = nestedList(dt, shape[1:], vals[i*stride:(i+1)*stride])
	}
	return starlark.NewList(elems)
}

// floatValue converts one array element held as a float64 to the Python
// type of its dtype (64-bit integers past 2^53 are not exact here; tolist
// on the tensor is).
func floatValue(dt ir.DType, v float64) starlark.Value {
	switch {
	case dt == ir.Bool:
		return starlark.Bool(v != 0)
	case dt.IsFloat():
		return starlark.Float(v)
	case dt == ir.Uint64:
		return starlark.MakeUint64(uint64(v))
	}
	return starlark.MakeInt64(int64(v))
}
