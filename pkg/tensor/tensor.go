package tensor

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"tgc/pkg/ir"
)

// Tensor is the user-facing handle on a lazy graph node. Errors are sticky:
// an op on a tensor that carries an error returns that error unchanged, so a
// chain like x.Reshape(...).Sum(...).Relu() reports the first failing op.
type Tensor struct {
	node *Node
	err  error
	// RequiresGrad marks a leaf whose gradient backward() computes.
	RequiresGrad bool
	Grad         *Tensor
	// base is the realized tensor this one is a view of (movement ops
	// only): assigning to the view writes into the base (x[a:b].assign(v)).
	base *Tensor
}

// view wraps the node of a movement op applied to t, remembering the
// realized tensor underneath so that assigning to the view can write
// into it.
func (t *Tensor) view(n *Node) *Tensor {
	v := &Tensor{node: n}
	switch {
	case t.base != nil:
		v.base = t.base
	case t.node.Realized() != nil || t.node.AssignTarget() != nil:
		v.base = t
	}
	return v
}

// OpError is a user error at one op (a shape or dtype mismatch). The
// frontend adds the script position (it knows the call being made).
type OpError struct {
	Op  string
	Msg string
}

func (e *OpError) Error() string { return e.Op + ": " + e.Msg }

func errorf(op, format string, args ...any) *Tensor {
	return &Tensor{err: &OpError{Op: op, Msg: fmt.Sprintf(format, args...)}}
}

// Err returns the error this tensor carries, if any.
func (t *Tensor) Err() error { return t.err }

// Node returns the graph node (nil if the tensor carries an error).
func (t *Tensor) Node() *Node { return t.node }

// FromNode wraps a node in a tensor.
func FromNode(n *Node) *Tensor { return &Tensor{node: n} }

// Errorf builds a tensor that carries a user error for op.
func Errorf(op, format string, args ...any) *Tensor { return errorf(op, format, args...) }

// Shape returns a copy of the shape.
func (t *Tensor) Shape() []int { return append([]int{}, t.node.Shape...) }

func (t *Tensor) DType() ir.DType { return t.node.DType }
func (t *Tensor) Ndim() int       { return len(t.node.Shape) }
func (t *Tensor) Numel() int      { return t.node.Numel() }

// firstErr returns a tensor carrying the first error among ts, or nil.
// Tensors of different contexts (two runs) never meet in one op.
func firstErr(ts ...*Tensor) *Tensor {
	for _, t := range ts {
		if t == nil {
			return &Tensor{err: errors.New("internal: nil tensor")}
		}
		if t.err != nil {
			return t
		}
	}
	for _, t := range ts[min(1, len(ts)):] {
		if t.node.ctx != ts[0].node.ctx {
			return &Tensor{err: errors.New("tensors of different contexts (runs) cannot be combined; make them in one context")}
		}
	}
	return nil
}

// ---- sources ----

// Engine realizes nodes on a device. The realize package provides one.
type Engine interface {
	Realize(nodes ...*Node) error
	// Read returns the host bytes of realized nodes.
	Read(n *Node) ([]byte, error)
}

// FromBytes makes a realized tensor from little-endian host bytes (the
// tensor keeps data).
func (c *Context) FromBytes(dt ir.DType, shape []int, data []byte) (*Tensor, error) {
	n := prod(shape)
	if len(data) != n*dt.Size() {
		return nil, fmt.Errorf("data has %d bytes, shape %s of %s needs %d", len(data), FormatShape(shape), dt, n*dt.Size())
	}
	b := &Buffer{ID: NewID(), DType: dt, Size: n, Host: data}
	return &Tensor{node: c.newNode(ir.OpBuffer, dt, shape, b)}, nil
}

// FromFloats makes a realized tensor from values (converted to dt with the
// cast rules: floats to integers truncate and saturate).
func (c *Context) FromFloats(dt ir.DType, shape []int, vals []float64) (*Tensor, error) {
	data := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		PutValue(data, dt, i, v)
	}
	return c.FromBytes(dt, shape, data)
}

// FromInts makes a realized tensor of an integer (or bool) dtype from exact
// integer values, wrapped to dt (uint64 values are int64 bit patterns).
func (c *Context) FromInts(dt ir.DType, shape []int, vals []int64) (*Tensor, error) {
	data := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		PutInt(data, dt, i, v)
	}
	return c.FromBytes(dt, shape, data)
}

// putBits stores the low dt.Size() bytes of b as element i, little-endian.
func putBits(data []byte, dt ir.DType, i int, b uint64) {
	n := dt.Size()
	for k := 0; k < n; k++ {
		data[n*i+k] = byte(b >> (8 * k))
	}
}

func getBits(data []byte, dt ir.DType, i int) uint64 {
	n := dt.Size()
	var b uint64
	for k := 0; k < n; k++ {
		b |= uint64(data[n*i+k]) << (8 * k)
	}
	return b
}

// PutValue stores v as element i of little-endian data of dtype dt (a
// float given to an integer dtype is cast: truncated and saturated).
func PutValue(data []byte, dt ir.DType, i int, v float64) {
	if dt.IsFloat() {
		putBits(data, dt, i, ir.Bits(dt, v, 0))
		return
	}
	putBits(data, dt, i, ir.Bits(dt, 0, ir.CastFloatToInt(dt, v)))
}

// PutInt stores the integer v as element i of data of an integer or bool
// dtype, wrapped to its width.
func PutInt(data []byte, dt ir.DType, i int, v int64) {
	putBits(data, dt, i, ir.Bits(dt, 0, dt.Wrap(v)))
}

// GetValue reads element i of little-endian data of dtype dt as a float64
// (exact for every dtype but 64-bit integers beyond 2^53: see GetInt).
func GetValue(data []byte, dt ir.DType, i int) float64 {
	f, v := ir.FromBits(dt, getBits(data, dt, i))
	if dt.IsFloat() {
		return f
	}
	return dt.IntToFloat(v)
}

// GetInt reads element i of data of an integer or bool dtype exactly
// (uint64: as an int64 bit pattern).
func GetInt(data []byte, dt ir.DType, i int) int64 {
	_, v := ir.FromBits(dt, getBits(data, dt, i))
	return v
}

// WrapFloat is the integer v (truncated) wrapped to dt's width, two's
// complement; values beyond int64 and uint64 saturate.
func WrapFloat(dt ir.DType, v float64) int64 {
	switch t := math.Trunc(v); {
	case math.IsNaN(v):
		return 0
	case t >= -(1<<63) && t < 1<<63:
		return dt.Wrap(int64(t))
	case t >= 1<<63 && t < 1<<64:
		return dt.Wrap(int64(uint64(t)))
	}
	return ir.CastFloatToInt(dt, v)
}

// Const is a scalar constant (shape ()) of dtype dt. An integer constant
// is truncated and wrapped to dt's width (two's complement: Const(-1,
// uint8) is 255); user values are checked by Full and Scalar instead.
// Integer constants hold an int64 (ConstInt makes them exactly), float
// constants a float64.
func (c *Context) Const(v float64, dt ir.DType) *Tensor {
	if !dt.IsFloat() {
		return c.ConstInt(WrapFloat(dt, v), dt)
	}
	return &Tensor{node: c.newNode(ir.OpConst, dt, nil, ir.RoundFloat(dt, v))}
}

// ConstInt is an integer (or bool) constant of dtype dt, wrapped to its
// width (uint64 values are int64 bit patterns).
func (c *Context) ConstInt(v int64, dt ir.DType) *Tensor {
	if dt.IsFloat() {
		return c.Const(float64(v), dt)
	}
	return &Tensor{node: c.newNode(ir.OpConst, dt, nil, dt.Wrap(v))}
}

// Const is a scalar constant of dtype dt in t's context.
func (t *Tensor) Const(v float64, dt ir.DType) *Tensor {
	if t.err != nil {
		return t
	}
	return t.node.ctx.Const(v, dt)
}

// ConstInt is an integer constant of dtype dt in t's context.
func (t *Tensor) ConstInt(v int64, dt ir.DType) *Tensor {
	if t.err != nil {
		return t
	}
	return t.node.ctx.ConstInt(v, dt)
}

// ConstValue is the value of a constant node: its float (floats) or its
// integer (ints and bool, uint64 as a bit pattern) and that integer as a
// float64.
func (n *Node) ConstValue() (f float64, i int64) {
	if v, ok := n.Arg.(int64); ok {
		return n.DType.IntToFloat(v), v
	}
	return n.Arg.(float64), 0
}

// checkValue refuses an integer value outside an integer dtype's range (a
// Python int that cannot be an element of the tensor), where wrapping it
// silently would give another number.
func checkValue(op string, v float64, dt ir.DType) *Tensor {
	if dt.IsFloat() || dt == ir.Bool || math.IsNaN(v) {
		return nil
	}
	lo, hi := dt.ValueRange()
	if t := math.Trunc(v); t < lo || t > hi {
		return errorf(op, "%s does not fit %s (%s to %s): use a wider dtype", formatValue(v), dt, formatValue(lo), formatValue(hi))
	}
	return nil
}

// formatValue prints a number the way Python would (ints without a point).
func formatValue(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1<<63:
		return fmt.Sprint(int64(v))
	case v == math.Trunc(v) && v > 0 && v < 1<<64:
		return fmt.Sprint(uint64(v))
	case v == 1<<64: // uint64's end, 2^64-1, as a float64
		return "18446744073709551615"
	}
	return fmt.Sprint(v)
}

// Full is a tensor of shape filled with v: a broadcast constant, no memory.
// v must be a value of dt (truncated toward zero for integer dtypes).
func (c *Context) Full(shape []int, v float64, dt ir.DType) *Tensor {
	if t := checkValue("full", v, dt); t != nil {
		return t
	}
	return FullOf(shape, c.Const(v, dt))
}

// FullInt is Full for an exact integer v of an integer dtype (v must be a
// value of dt; uint64 values past 2^63 need ConstInt's bit patterns).
func (c *Context) FullInt(shape []int, v int64, dt ir.DType) *Tensor {
	if !dt.IsFloat() && !dt.Fits(v) {
		lo, hi := dt.Range()
		return errorf("full", "%d does not fit %s (%d to %d): use a wider dtype", v, dt, lo, hi)
	}
	return FullOf(shape, c.ConstInt(v, dt))
}

// FullOf broadcasts the scalar k to shape.
func FullOf(shape []int, k *Tensor) *Tensor {
	if t := checkShape("full", shape); t != nil {
		return t
	}
	ones := make([]int, len(shape))
	for i := range ones {
		ones[i] = 1
	}
	return k.Reshape(ones...).Expand(shape...)
}

func checkShape(op string, shape []int) *Tensor {
	for _, d := range shape {
		if d < 0 {
			return errorf(op, "negative dimension in shape %s", FormatShape(shape))
		}
	}
	return checkNumel(op, shape)
}

// MaxNumel bounds the elements of a tensor: index arithmetic on it then
// stays far inside int64 (kernels compute offsets and strides in 64 bits
// when they pass 2^31).
const MaxNumel = 1 << 60

// checkNumel refuses shapes with more than MaxNumel elements (checking
// every partial product, so an int overflow cannot hide one).
func checkNumel(op string, shape []int) *Tensor {
	n := uint64(1)
	for _, d := range shape {
		if d == 0 {
			return nil
		}
	}
	for _, d := range shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > MaxNumel {
			return errorf(op, "shape %s has more than 2^60 elements", FormatShape(shape))
		}
		n = lo
	}
	return nil
}

// ---- realization ----

var errNoEngine = errors.New("no engine: the tensor's context cannot realize values")

// Realize computes the tensor on its context's device.
func (t *Tensor) Realize() *Tensor {
	if t.err != nil {
		return t
	}
	e := t.node.ctx.engine
	if e == nil {
		return &Tensor{err: errNoEngine}
	}
	if err := e.Realize(t.node); err != nil {
		return &Tensor{err: err}
	}
	return t
}

// RealizeAll computes several tensors (of one context) in one schedule.
func RealizeAll(ts ...*Tensor) error {
	if len(ts) == 0 {
		return nil
	}
	if e := firstErr(ts...); e != nil {
		return e.err
	}
	e := ts[0].node.ctx.engine
	if e == nil {
		return errNoEngine
	}
	nodes := make([]*Node, len(ts))
	for i, t := range ts {
		nodes[i] = t.node
	}
	return e.Realize(nodes...)
}

// Bytes realizes the tensor and returns its elements as little-endian
// host bytes.
func (t *Tensor) Bytes() ([]byte, error) {
	if t.err != nil {
		return nil, t.err
	}
	if r := t.Realize(); r.err != nil {
		return nil, r.err
	}
	return t.node.ctx.engine.Read(t.node)
}

// ReaderInto is an Engine that also reads a realized node into the
// caller's buffer (the realize package's does).
type ReaderInto interface {
	ReadInto(n *Node, dst []byte) error
}

// BytesInto realizes the tensor and copies its elements, as little-endian
// bytes, into dst, which must hold them exactly: a read that allocates
// nothing on engines that are ReaderInto (tgc generate reads a
// vocabulary's logits for every token).
func (t *Tensor) BytesInto(dst []byte) error {
	if t.err != nil {
		return t.err
	}
	if want := t.Numel() * t.DType().Size(); len(dst) != want {
		return &OpError{Op: "bytes", Msg: fmt.Sprintf("a tensor of shape %s (%s) has %d bytes, the buffer %d", FormatShape(t.node.Shape), t.DType(), want, len(dst))}
	}
	if r := t.Realize(); r.err != nil {
		return r.err
	}
	if r, ok := t.node.ctx.engine.(ReaderInto); ok {
		return r.ReadInto(t.node, dst)
	}
	data, err := t.node.ctx.engine.Read(t.node)
	if err != nil {
		return err
	}
	if len(data) != len(dst) {
		return &OpError{Op: "bytes", Msg: fmt.Sprintf("read %d bytes for a buffer of %d", len(data), len(dst))}
	}
	copy(dst, data)
	return nil
}

// Floats realizes the tensor and returns its elements as float64.
func (t *Tensor) Floats() ([]float64, error) {
	data, err := t.Bytes()
	if err != nil {
		return nil, err
	}
	n := t.Numel()
	out := make([]float64, n)
	for i := range out {
		out[i] = GetValue(data, t.DType(), i)
	}
	return out, nil
}

// Item returns the single value of a one-element tensor.
func (t *Tensor) Item() (float64, error) {
	if t.err != nil {
		return 0, t.err
	}
	if t.Numel() != 1 {
		return 0, &OpError{Op: "item", Msg: fmt.Sprintf("tensor of shape %s has %d elements, item() needs exactly one", FormatShape(t.node.Shape), t.Numel())}
	}
	v, err := t.Floats()
	if err != nil {
		return 0, err
	}
	return v[0], nil
}
