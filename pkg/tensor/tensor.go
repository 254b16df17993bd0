package tensor

import (
	"errors"
	"fmt"
	"math"

	"tgc/pkg/half"
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

// FromFloats makes a realized tensor from values (converted to dt).
func (c *Context) FromFloats(dt ir.DType, shape []int, vals []float64) (*Tensor, error) {
	data := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		PutValue(data, dt, i, v)
	}
	return c.FromBytes(dt, shape, data)
}

// PutValue stores v as element i of little-endian data of dtype dt.
func PutValue(data []byte, dt ir.DType, i int, v float64) {
	switch dt {
	case ir.Float32:
		u := math.Float32bits(float32(v))
		data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	case ir.Float16:
		u := half.FromFloat32(float32(v))
		data[2*i], data[2*i+1] = byte(u), byte(u>>8)
	case ir.Int32:
		u := uint32(ir.CastFloatToInt(ir.Int32, v))
		data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	default:
		data[i] = byte(ir.CastFloatToInt(dt, v))
	}
}

// GetValue reads element i of little-endian data of dtype dt.
func GetValue(data []byte, dt ir.DType, i int) float64 {
	switch dt {
	case ir.Float32:
		return float64(math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24))
	case ir.Float16:
		return float64(half.ToFloat32(uint16(data[2*i]) | uint16(data[2*i+1])<<8))
	case ir.Int32:
		return float64(int32(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24))
	case ir.Int8:
		return float64(int8(data[i]))
	}
	return float64(data[i])
}

// Const is a scalar constant (shape ()) of dtype dt.
func (c *Context) Const(v float64, dt ir.DType) *Tensor {
	switch {
	case dt == ir.Bool:
		if v != 0 {
			v = 1
		}
	case !dt.IsFloat():
		v = float64(ir.CastFloatToInt(dt, v))
	case dt == ir.Float32:
		v = float64(float32(v))
	}
	return &Tensor{node: c.newNode(ir.OpConst, dt, nil, v)}
}

// Const is a scalar constant of dtype dt in t's context.
func (t *Tensor) Const(v float64, dt ir.DType) *Tensor {
	if t.err != nil {
		return t
	}
	return t.node.ctx.Const(v, dt)
}

// Full is a tensor of shape filled with v: a broadcast constant, no memory.
func (c *Context) Full(shape []int, v float64, dt ir.DType) *Tensor {
	if t := checkShape("full", shape); t != nil {
		return t
	}
	k := c.Const(v, dt)
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
	if len(shape) > 0 && prod(shape) > math.MaxInt32 {
		return errorf(op, "shape %s has more than 2^31 elements", FormatShape(shape))
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
