package onnx

import (
	"slices"

	"tgc/pkg/tensor"
)

// Host folding: the operators of shape computations evaluated on arrays at
// load time, with the device's semantics (integers wrap to their type,
// floats round to theirs after each operation, integer division truncates,
// x/0 is 0 for integers).

// broadcastTables returns the numpy broadcast of shapes and, per input, the
// input's flat index for each flat index of the output.
func broadcastTables(shapes ...[]int) ([]int, [][]int, bool) {
	out, ok := tensor.BroadcastShape(shapes...)
	if !ok {
		return nil, nil, false
	}
	total := 1
	for _, d := range out {
		total *= d
	}
	tables := make([][]int, len(shapes))
	for k, s := range shapes {
		strides := make([]int, len(out))
		st := 1
		for i := len(s) - 1; i >= 0; i-- {
			j := len(out) - len(s) + i
			if s[i] != 1 {
				strides[j] = st
			}
			st *= s[i]
		}
		tab := make([]int, total)
		idx := make([]int, len(out))
		for flat := range total {
			off := 0
			for j, x := range idx {
				off += x * strides[j]
			}
			tab[flat] = off
			for j := len(out) - 1; j >= 0; j-- { // next multi-index
				idx[j]++
				if idx[j] < out[j] {
					break
				}
				idx[j] = 0
			}
		}
		tables[k] = tab
	}
	return out, tables, true
}

// hostMap is an elementwise host fold over broadcast inputs. fi computes on
// integers (and bools), ff on floats; out gives the result type from the
// first input's.
type hostMap struct {
	fi    func(a []int64) int64
	ff    func(a []float64) float64
	out   func(DataType) DataType
	arity int // inputs required (0: variadic, at least one)
}

func (h hostMap) fold(n *node, in []*Array) []*Array {
	if len(in) < h.arity || slices.Contains(in[:h.arity], nil) {
		return nil // the device op reports the missing input
	}
	var shapes [][]int
	var args []*Array
	for _, a := range in {
		if a != nil {
			shapes = append(shapes, a.Shape)
			args = append(args, a)
		}
	}
	if len(args) == 0 {
		return nil
	}
	typ := args[0].Type
	for _, a := range args[1:] {
		if a.Type != typ {
			return nil // mixed types (Pow): leave it to the device
		}
	}
	if (typ.IsFloat() && h.ff == nil) || (!typ.IsFloat() && h.fi == nil) || typ == Uint64 {
		return nil
	}
	shape, tabs, ok := broadcastTables(shapes...)
	if !ok {
		return nil // the device op reports the shapes
	}
	outType := typ
	if h.out != nil {
		outType = h.out(typ)
	}
	r := NewArray(outType, shape)
	total := r.Numel()
	if typ.IsFloat() {
		v := make([]float64, len(args))
		for i := range total {
			for k, a := range args {
				v[k] = a.Float(tabs[k][i])
			}
			r.SetFloat(i, h.ff(v))
		}
	} else {
		v := make([]int64, len(args))
		for i := range total {
			for k, a := range args {
				v[k] = a.Int(tabs[k][i])
			}
			r.SetInt(i, h.fi(v))
		}
	}
	return []*Array{r}
}

func boolOut(DataType) DataType { return Bool }

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// hostArith folds a binary arithmetic operator (the result stored in the
// operands' type, so integers wrap).
func hostArith(fi func(a, b int64) int64, ff func(a, b float64) float64) func(n *node, in []*Array) []*Array {
	return hostMap{
		fi:    func(a []int64) int64 { return fi(a[0], a[1]) },
		ff:    func(a []float64) float64 { return ff(a[0], a[1]) },
		arity: 2,
	}.fold
}

func hostCompare(fi func(a, b int64) bool, ff func(a, b float64) bool) func(n *node, in []*Array) []*Array {
	return hostMap{
		fi:    func(a []int64) int64 { return b2i(fi(a[0], a[1])) },
		ff:    func(a []float64) float64 { return b2f(ff(a[0], a[1])) },
		out:   boolOut,
		arity: 2,
	}.fold
}

func hostUnary(fi func(a int64) int64, ff func(a float64) float64) func(n *node, in []*Array) []*Array {
	h := hostMap{arity: 1}
	if fi != nil {
		h.fi = func(a []int64) int64 { return fi(a[0]) }
	}
	if ff != nil {
		h.ff = func(a []float64) float64 { return ff(a[0]) }
	}
	return h.fold
}

// idiv truncates toward zero; x/0 is 0 and MIN/-1 wraps to MIN (the
// devices' rules; Go's division wraps too).
func idiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// transposeArray permutes a host array's axes.
func transposeArray(a *Array, perm []int) *Array {
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = a.Shape[p]
	}
	r := NewArray(a.Type, shape)
	strides := make([]int, len(a.Shape))
	st := 1
	for i := len(a.Shape) - 1; i >= 0; i-- {
		strides[i] = st
		st *= a.Shape[i]
	}
	idx := make([]int, len(shape))
	sz := a.Type.Size()
	for flat := range r.Numel() {
		off := 0
		for j, x := range idx {
			off += x * strides[perm[j]]
		}
		copy(r.Data[flat*sz:(flat+1)*sz], a.Data[off*sz:(off+1)*sz])
		for j := len(shape) - 1; j >= 0; j-- {
			idx[j]++
			if idx[j] < shape[j] {
				break
			}
			idx[j] = 0
		}
	}
	return r
}

// reshaped is a with another shape of the same size (the bytes shared).
func reshaped(a *Array, shape []int) *Array {
	return &Array{Type: a.Type, Shape: slices.Clone(shape), Data: a.Data}
}

// castArray converts every element to typ.
func castArray(a *Array, typ DataType) *Array {
	r := NewArray(typ, a.Shape)
	for i := range a.Numel() {
		if a.Type.IsFloat() || typ.IsFloat() {
			r.SetFloat(i, a.Float(i))
		} else {
			r.SetInt(i, a.Int(i))
		}
	}
	return r
}
