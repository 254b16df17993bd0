// Package tensor builds the lazy tensor graph: immutable, interned nodes of
// primitive ops, and the Tensor API (tinygrad's names) that decomposes every
// high-level function into them. Nothing here computes: an Engine realizes
// nodes on a device when a value is needed.
package tensor

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"weak"

	"tgc/pkg/ir"
)

// Pos is a source position in a .tg script.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	if p.File == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Node is one immutable node of the tensor graph. Nodes are interned on
// (Op, DType, Shape, Arg, Src): structurally equal subgraphs are the same
// pointer, which gives CSE for free and a cheap key for schedule caches.
type Node struct {
	Op    ir.Op
	DType ir.DType
	Shape []int
	// Sym is nil, or per dimension the symbolic size of dimensions that
	// depend on a variable (Shape holds their largest value; symbolic.go).
	Sym []SInt
	Src []*Node
	// Arg: reduce/permute/flip []int axes; reshape/expand nil (Shape says);
	// pad/shrink [][2]int (SymShrink for symbolic bounds); const float64;
	// buffer *Buffer; rand RandArg; a variable (OpParam) SInt.
	Arg any
	Pos Pos // where the first equal node was created (not part of identity)
	ID  uint64

	ctx *Context // the run the node belongs to (Context)

	realized atomic.Pointer[Buffer]
	epoch    atomic.Uint64 // the context's in-place writes when it was realized
	custom   atomic.Pointer[CustomGrad]
}

// CustomGrad is a gradient rule for a node computed from Inputs by a
// subgraph of primitives, used instead of differentiating through that
// subgraph: a convolution's input gradient is a convolution of the output
// gradient, where the primitive rules would store every window's gradient
// (25x the input for a 5x5 kernel) and gather it back.
type CustomGrad struct {
	Inputs []*Node
	// Grad maps the node's gradient to one gradient per input (nil: none).
	Grad func(g *Tensor) []*Tensor
}

// Custom returns the node's gradient rule, if it has one.
func (n *Node) Custom() *CustomGrad { return n.custom.Load() }

// setCustom attaches a gradient rule. Interning may hand the same node to
// another identical computation: its rule computes the same gradient.
func (n *Node) setCustom(c *CustomGrad) { n.custom.Store(c) }

// RandArg identifies one random tensor: the seed and a per-seed counter.
type RandArg struct{ Seed, Counter uint64 }

// Buffer is realized memory: host data waiting to be uploaded, a device
// allocation, or both. The engine owns its Device fields.
type Buffer struct {
	ID     uint64
	DType  ir.DType
	Size   int // elements
	Host   []byte
	Device any // backend-specific handle, set by the engine
	Name   string
	Weight bool // loaded from a file (a "weight" in launch plans)

	store   atomic.Pointer[storage] // shared by the Buffers on the same memory (jit.go)
	owned   atomic.Bool             // its device memory is this Buffer's alone (FromDeviceOwned)
	version uint64                  // the storage version this Buffer's value is
}

// nextID numbers nodes and buffers. Only the uniqueness of the numbers
// matters (they are intern keys within one context, never part of a
// result), so one counter serves every context.
var nextID atomic.Uint64

// NewID returns a fresh process-unique id.
func NewID() uint64 { return nextID.Add(1) }

func internKey(op ir.Op, dt ir.DType, shape []int, sym []SInt, arg any, src []*Node) string {
	// Appended by hand, not with fmt: a model's graph makes thousands of
	// nodes per call (ResNet-50's: fmt here was a quarter of building it).
	b := make([]byte, 0, 64+8*len(shape)+12*len(src))
	b = strconv.AppendInt(b, int64(op), 10)
	b = append(b, '|')
	b = strconv.AppendInt(b, int64(dt), 10)
	b = append(b, '|')
	b = AppendInts(b, shape)
	b = append(b, '|')
	for _, s := range sym {
		b = append(b, s.bound()...)
		b = append(b, ',')
	}
	switch a := arg.(type) {
	case nil:
		b = append(b, "<nil>"...)
	case []int:
		b = AppendInts(b, a)
	case [][2]int: // shrink and pad bounds
		b = AppendPairs(b, a)
	case *Buffer:
		b = append(b, "buf"...)
		b = strconv.AppendUint(b, a.ID, 10)
	case float64:
		b = strconv.AppendUint(b, math.Float64bits(a), 16)
	case SInt:
		b = append(b, a.bound()...)
	case SymShrink:
		b = append(b, a.bound()...)
	default:
		b = fmt.Appendf(b, "%v", a)
	}
	for _, s := range src {
		b = append(b, '|')
		b = strconv.AppendUint(b, s.ID, 10)
	}
	return string(b)
}

// AppendInts appends v as fmt's %v writes it ("[1 2 3]"), for keys built
// by hand (the intern key here, the engine's schedule key).
func AppendInts(b []byte, v []int) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, ']')
}

// AppendPairs appends v as fmt's %v writes it ("[[0 1] [2 3]]").
func AppendPairs(b []byte, v [][2]int) []byte {
	b = append(b, '[')
	for i, p := range v {
		if i > 0 {
			b = append(b, ' ')
		}
		b = AppendInts(b, p[:])
	}
	return append(b, ']')
}

// newNode returns the context's interned node for these fields, creating
// it if needed. Interning holds nodes weakly: a graph nobody references is
// collected. The sources must belong to c (the ops check their operands'
// contexts first, see firstErr).
func (c *Context) newNode(op ir.Op, dt ir.DType, shape []int, arg any, src ...*Node) *Node {
	return c.makeNode(op, dt, shape, nil, arg, src...)
}

// makeNode is newNode with the symbolic dimensions (nil: none).
func (c *Context) makeNode(op ir.Op, dt ir.DType, shape []int, sym []SInt, arg any, src ...*Node) *Node {
	for _, s := range src {
		if s.ctx != c {
			panic("tensor: a node's sources belong to another context")
		}
	}
	key := internKey(op, dt, shape, sym, arg, src)
	c.internMu.Lock()
	defer c.internMu.Unlock()
	if wp, ok := c.intern[key]; ok {
		if n := wp.Value(); n != nil && !n.outdated() {
			return n
		}
	}
	n := &Node{Op: op, DType: dt, Shape: append([]int{}, shape...), Sym: append([]SInt(nil), sym...), Src: src, Arg: arg, Pos: c.currentPos(), ID: NewID(), ctx: c}
	wp := weak.Make(n)
	c.intern[key] = wp
	runtime.AddCleanup(n, func(key string) {
		c.internMu.Lock()
		if cur, ok := c.intern[key]; ok && cur.Value() == nil {
			delete(c.intern, key)
		}
		c.internMu.Unlock()
	}, key)
	return n
}

// newNode makes a node from t's node and others, in t's context.
func (t *Tensor) newNode(op ir.Op, dt ir.DType, shape []int, arg any, src ...*Node) *Node {
	return t.node.ctx.newNode(op, dt, shape, arg, src...)
}

// Realized returns the node's buffer once it has been computed.
func (n *Node) Realized() *Buffer {
	if n.Op == ir.OpBuffer {
		return n.Arg.(*Buffer)
	}
	return n.realized.Load()
}

// SetRealized records the computed buffer of a node (engine use).
func (n *Node) SetRealized(b *Buffer) {
	n.epoch.Store(n.ctx.writes.Load())
	n.realized.Store(b)
}

// outdated reports whether n holds a value computed before an in-place
// write of the context's memory (see Context.MemoryWritten).
func (n *Node) outdated() bool {
	return n.Op != ir.OpBuffer && n.realized.Load() != nil && n.epoch.Load() != n.ctx.writes.Load()
}

// Context is the context (run) the node belongs to.
func (n *Node) Context() *Context { return n.ctx }

// Numel is the number of elements of the node's shape.
func (n *Node) Numel() int { return prod(n.Shape) }

func prod(s []int) int {
	p := 1
	for _, d := range s {
		p *= d
	}
	return p
}

// String names a node for dumps: op, dtype, shape.
func (n *Node) String() string {
	return fmt.Sprintf("%s %s %s", n.Op, n.DType, n.shapeString())
}

// FormatShape prints a shape the way Python prints a tuple.
func FormatShape(s []int) string {
	if len(s) == 1 {
		return fmt.Sprintf("(%d,)", s[0])
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Toposort returns every node reachable from roots, sources first.
func Toposort(roots []*Node) []*Node {
	var out []*Node
	seen := map[*Node]bool{}
	var rec func(*Node)
	rec = func(n *Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.Realized() == nil {
			for _, s := range n.Src {
				rec(s)
			}
		}
		out = append(out, n)
	}
	for _, r := range roots {
		rec(r)
	}
	return out
}
