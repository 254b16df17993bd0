package tensor

import (
	"fmt"
	"slices"

	"tgc/pkg/ir"
)

// The primitive ops. Every other function of the Tensor API is built from
// these; each validates its arguments and names itself in errors.

// ---- movement: views, never copies ----

// Reshape changes the shape; one dimension may be -1 (inferred).
func (t *Tensor) Reshape(shape ...int) *Tensor {
	if t.err != nil {
		return t
	}
	shape = slices.Clone(shape)
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer >= 0:
			return errorf("reshape", "only one dimension can be -1, got %s", FormatShape(shape))
		case d == -1:
			infer = i
		case d < 0:
			return errorf("reshape", "invalid dimension %d in %s", d, FormatShape(shape))
		default:
			known *= d
		}
	}
	if infer >= 0 {
		if known == 0 || t.Numel()%known != 0 {
			return errorf("reshape", "cannot reshape %s into %s", FormatShape(t.node.Shape), FormatShape(shape))
		}
		shape[infer] = t.Numel() / known
	}
	if prod(shape) != t.Numel() {
		return errorf("reshape", "cannot reshape %s (%d elements) into %s (%d elements)", FormatShape(t.node.Shape), t.Numel(), FormatShape(shape), prod(shape))
	}
	if slices.Equal(shape, t.node.Shape) {
		return t
	}
	if t.node.HasSym() {
		dims, ok := reshapeSym(t.node, shape)
		if !ok {
			return errorf("reshape", "cannot reshape %s into %s: a symbolic dimension must stay a dimension of its own", t.node.shapeString(), FormatShape(shape))
		}
		return t.view(t.node.ctx.newSymNode(ir.OpReshape, t.DType(), dims, nil, t.node))
	}
	src := t.node
	if src.Op == ir.OpReshape && src.Realized() == nil { // reshape of reshape is one reshape
		src = src.Src[0]
		if slices.Equal(shape, src.Shape) {
			return t.view(src)
		}
	}
	return t.view(t.newNode(ir.OpReshape, t.DType(), shape, nil, src))
}

// normAxis maps a possibly negative axis into [0, ndim).
// A 0-d tensor accepts axis 0 and -1, as tinygrad does.
func normAxis(op string, axis, ndim int) (int, *Tensor) {
	if ndim == 0 && (axis == 0 || axis == -1) {
		return 0, nil
	}
	if axis < -ndim || axis >= ndim {
		return 0, errorf(op, "axis %d is out of range for a tensor with %d dimensions", axis, ndim)
	}
	if axis < 0 {
		axis += ndim
	}
	return axis, nil
}

// Permute reorders the dimensions.
func (t *Tensor) Permute(order ...int) *Tensor {
	if t.err != nil {
		return t
	}
	n := t.Ndim()
	if len(order) != n {
		return errorf("permute", "order %v has %d entries, the tensor has %d dimensions", order, len(order), n)
	}
	seen := make([]bool, n)
	norm := make([]int, n)
	identity := true
	for i, a := range order {
		a, e := normAxis("permute", a, n)
		if e != nil {
			return e
		}
		if seen[a] {
			return errorf("permute", "order %v repeats axis %d", order, a)
		}
		seen[a] = true
		norm[i] = a
		identity = identity && a == i
	}
	if identity {
		return t
	}
	dims := make([]SInt, n)
	src := t.node.Dims()
	for i, a := range norm {
		dims[i] = src[a]
	}
	return t.view(t.node.ctx.newSymNode(ir.OpPermute, t.DType(), dims, norm, t.node))
}

// Expand broadcasts dimensions of size 1 to larger sizes (-1 keeps a size).
func (t *Tensor) Expand(shape ...int) *Tensor {
	if t.err != nil {
		return t
	}
	if len(shape) != t.Ndim() {
		// tinygrad allows adding leading dims: reshape with 1s first
		if len(shape) > t.Ndim() {
			ones := make([]int, len(shape)-t.Ndim())
			for i := range ones {
				ones[i] = 1
			}
			return t.Reshape(append(ones, t.node.Shape...)...).Expand(shape...)
		}
		return errorf("expand", "cannot expand %s to %s", FormatShape(t.node.Shape), FormatShape(shape))
	}
	dims := make([]SInt, len(shape))
	src := t.node.Dims()
	for i, d := range shape {
		switch {
		case d == -1 || src[i].IsSym() && d == src[i].Max():
			dims[i] = src[i]
		default:
			dims[i] = Int(d)
		}
	}
	return t.ExpandDims(dims)
}

// ExpandDims is Expand to dimensions that may be symbolic: a dimension of
// size 1 broadcasts to any size, a symbolic one stays itself.
func (t *Tensor) ExpandDims(dims []SInt) *Tensor {
	if t.err != nil {
		return t
	}
	src := t.node.Dims()
	if len(dims) != len(src) {
		return errorf("expand", "cannot expand %s to %s", t.node.shapeString(), FormatDims(dims))
	}
	same := true
	for i, d := range dims {
		s := src[i]
		if s == d || sameSym(s, d) && s.Val == d.Val {
			continue
		}
		same = false
		if s.IsSym() || s.C != 1 {
			return errorf("expand", "cannot expand %s to %s: dimension %d has size %s, not 1", t.node.shapeString(), FormatDims(dims), i, s)
		}
		if d.Min() < 0 {
			return errorf("expand", "cannot expand %s to %s: negative size", t.node.shapeString(), FormatDims(dims))
		}
	}
	if same {
		return t
	}
	if e := checkNumel("expand", maxShape(dims)); e != nil {
		return e
	}
	return t.view(t.node.ctx.newSymNode(ir.OpExpand, t.DType(), dims, nil, t.node))
}

// PadWith pads each dimension with (before, after) elements of value 0;
// see Pad for other values.
func (t *Tensor) padZero(pads [][2]int) *Tensor {
	if t.err != nil {
		return t
	}
	if len(pads) != t.Ndim() {
		return errorf("pad", "%d (before, after) pairs for a tensor with %d dimensions", len(pads), t.Ndim())
	}
	dims := t.node.Dims()
	zero := true
	for i, p := range pads {
		if p[0] < 0 || p[1] < 0 {
			return errorf("pad", "negative padding %v", p)
		}
		if p != [2]int{} && dims[i].IsSym() {
			return errorf("pad", "cannot pad the symbolic dimension %d (%s) of %s", i, dims[i], t.node.shapeString())
		}
		dims[i] = dims[i].Add(p[0] + p[1])
		zero = zero && p == [2]int{}
	}
	if zero {
		return t
	}
	if e := checkNumel("pad", maxShape(dims)); e != nil {
		return e
	}
	return t.view(t.node.ctx.newSymNode(ir.OpPad, t.DType(), dims, slices.Clone(pads), t.node))
}

// Shrink keeps [begin, end) of each dimension.
func (t *Tensor) Shrink(bounds [][2]int) *Tensor {
	if t.err != nil {
		return t
	}
	if len(bounds) != t.Ndim() {
		return errorf("shrink", "%d (begin, end) pairs for a tensor with %d dimensions", len(bounds), t.Ndim())
	}
	sb := make([][2]SInt, len(bounds))
	for i, b := range bounds {
		sb[i] = [2]SInt{Int(b[0]), Int(b[1])}
	}
	return t.ShrinkDims(sb)
}

// ShrinkDims is Shrink with bounds that may depend on a variable: a
// symbolic end makes a symbolic dimension (the attended positions
// [0, start_pos+1)), a symbolic begin a view at a launch-time offset (the
// slot [start_pos, start_pos+1) of a KV cache).
func (t *Tensor) ShrinkDims(bounds [][2]SInt) *Tensor {
	if t.err != nil {
		return t
	}
	if len(bounds) != t.Ndim() {
		return errorf("shrink", "%d (begin, end) pairs for a tensor with %d dimensions", len(bounds), t.Ndim())
	}
	src := t.node.Dims()
	dims := make([]SInt, len(bounds))
	full, symbolic := true, false
	for i, b := range bounds {
		symbolic = symbolic || b[0].IsSym() || b[1].IsSym()
		if b[0] == Int(0) && (b[1] == src[i] || sameSym(b[1], src[i]) && b[1].Val == src[i].Val) {
			dims[i] = src[i]
			continue
		}
		full = false
		if src[i].IsSym() {
			return errorf("shrink", "cannot shrink the symbolic dimension %d (%s) of %s", i, src[i], t.node.shapeString())
		}
		size, ok := sub(b[1], b[0])
		if !ok || b[0].Min() < 0 || b[1].Max() > src[i].C || size.Min() < 0 {
			return errorf("shrink", "bounds (%s, %s) out of range for dimension %d of size %d", b[0], b[1], i, src[i].C)
		}
		if size.IsSym() && size.Max() < 2 {
			return errorf("shrink", "bounds (%s, %s) of dimension %d: a symbolic size must be able to exceed 1", b[0], b[1], i)
		}
		dims[i] = size
	}
	if full {
		return t
	}
	var arg any
	if symbolic {
		arg = SymShrink(slices.Clone(bounds))
	} else {
		plain := make([][2]int, len(bounds))
		for i, b := range bounds {
			plain[i] = [2]int{b[0].C, b[1].C}
		}
		arg = plain
	}
	return t.view(t.node.ctx.newSymNode(ir.OpShrink, t.DType(), dims, arg, t.node))
}

// Flip reverses the given axes.
func (t *Tensor) Flip(axes ...int) *Tensor {
	if t.err != nil {
		return t
	}
	var norm []int
	for _, a := range axes {
		a, e := normAxis("flip", a, t.Ndim())
		if e != nil {
			return e
		}
		if !slices.Contains(norm, a) {
			norm = append(norm, a)
		}
	}
	slices.Sort(norm)
	if len(norm) == 0 {
		return t
	}
	for _, a := range norm {
		if t.node.HasSym() && t.node.Sym[a].IsSym() {
			return errorf("flip", "cannot flip the symbolic dimension %d (%s)", a, t.node.Sym[a])
		}
	}
	return t.view(t.like(ir.OpFlip, t.DType(), norm, t.node))
}

// ---- elementwise ----

// BroadcastShape returns the numpy broadcast of shapes.
func BroadcastShape(shapes ...[]int) ([]int, bool) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := n - len(s)
		for i, d := range s {
			switch {
			case out[off+i] == 1:
				out[off+i] = d
			case d != 1 && d != out[off+i]:
				return nil, false
			}
		}
	}
	return out, true
}

// broadcastTo reshapes (adding leading 1s) and expands t to shape.
func (t *Tensor) broadcastTo(shape []int) *Tensor {
	if slices.Equal(t.node.Shape, shape) {
		return t
	}
	ones := make([]int, len(shape)-t.Ndim())
	for i := range ones {
		ones[i] = 1
	}
	return t.Reshape(append(ones, t.node.Shape...)...).Expand(shape...)
}

// broadcastDims reshapes (adding leading 1s) and expands t to dims.
func (t *Tensor) broadcastDims(dims []SInt) *Tensor {
	if !t.node.HasSym() && !slices.ContainsFunc(dims, SInt.IsSym) {
		shape, _ := splitDims(dims)
		return t.broadcastTo(shape)
	}
	ones := make([]int, len(dims)-t.Ndim())
	for i := range ones {
		ones[i] = 1
	}
	return t.Reshape(append(ones, t.node.Shape...)...).ExpandDims(dims)
}

// alu applies an elementwise primitive, broadcasting its operands and
// casting them to the dtype the op computes in (dt); comparisons give bool.
func alu(name string, op ir.Op, dt ir.DType, ts ...*Tensor) *Tensor {
	if e := firstErr(ts...); e != nil {
		return e
	}
	if info := op.Info(); !info.Types.Has(dt) {
		return errorf(name, "needs %s tensors, got %s", info.Types, dt)
	}
	dims := make([][]SInt, len(ts))
	for i, t := range ts {
		dims[i] = t.node.Dims()
	}
	shape, ok := broadcastDims(dims...)
	if !ok {
		var parts []string
		for _, t := range ts {
			parts = append(parts, t.node.shapeString())
		}
		return errorf(name, "shapes %v cannot be broadcast together", parts)
	}
	src := make([]*Node, len(ts))
	for i, t := range ts {
		if !(op == ir.OpWhere && i == 0) {
			t = t.Cast(dt)
		}
		b := t.broadcastDims(shape)
		if b.err != nil {
			return b
		}
		src[i] = b.node
	}
	out := dt
	if op.Info().Result == ir.BoolResult {
		out = ir.Bool
	}
	return FromNode(ts[0].node.ctx.newSymNode(op, out, shape, nil, src...))
}

// Cast converts to dtype dt.
func (t *Tensor) Cast(dt ir.DType) *Tensor {
	if t.err != nil || t.DType() == dt {
		return t
	}
	if t.node.Op == ir.OpConst { // fold constant casts, by the cast rules
		f, i := t.node.ConstValue()
		switch {
		case !t.DType().IsFloat() && !dt.IsFloat():
			return t.ConstInt(i, dt)
		case !t.DType().IsFloat():
			return t.Const(f, dt)
		case !dt.IsFloat():
			return t.ConstInt(ir.CastFloatToInt(dt, f), dt)
		}
		return t.Const(f, dt)
	}
	return FromNode(t.like(ir.OpCast, dt, nil, t.node))
}

// Bitcast reads t's bits as dtype dt (a uint16 tensor of float16 bit
// patterns becomes float16 values): elementwise for a dtype of the same
// size; a realized tensor's memory may also be read as a dtype of another
// size (memoryView: raw model bytes as float16 scales).
func (t *Tensor) Bitcast(dt ir.DType) *Tensor {
	if t.err != nil || t.DType() == dt {
		return t
	}
	if t.DType().Size() != dt.Size() {
		if t.viewable() {
			return t.memoryView(dt)
		}
		return errorf("bitcast", "%s is %d bytes, %s is %d: bitcast reads the same bits as another dtype of the same size (only a realized tensor's memory can be read as another size)", t.DType(), t.DType().Size(), dt, dt.Size())
	}
	if t.node.Op == ir.OpConst {
		f, i := t.node.ConstValue()
		f, i = ir.FromBits(dt, ir.Bits(t.DType(), f, i))
		if dt.IsFloat() {
			return t.Const(f, dt)
		}
		return t.ConstInt(i, dt)
	}
	return FromNode(t.newNode(ir.OpBitcast, dt, t.node.Shape, nil, t.node))
}

// unary applies a float unary primitive (ints are cast to float32 first).
func (t *Tensor) unary(op ir.Op) *Tensor {
	if t.err != nil {
		return t
	}
	x := t
	if !x.DType().IsFloat() {
		x = x.Cast(ir.Float32)
	}
	return FromNode(x.like(op, x.DType(), nil, x.node))
}

// ---- reduce ----

// reduce applies SUM or MAX over axes, keeping reduced dims as size 1.
func (t *Tensor) reduce(name string, op ir.Op, axes []int) *Tensor {
	if t.err != nil {
		return t
	}
	var norm []int
	for _, a := range axes {
		a, e := normAxis(name, a, t.Ndim())
		if e != nil {
			return e
		}
		if !slices.Contains(norm, a) {
			norm = append(norm, a)
		}
	}
	slices.Sort(norm)
	if t.Ndim() == 0 {
		return t // reducing a scalar is the scalar
	}
	shape := t.Shape()
	dims := t.node.Dims()
	var real []int
	for _, a := range norm {
		if shape[a] == 0 && op == ir.OpMaxReduce {
			return errorf(name, "cannot reduce an empty dimension %d with max", a)
		}
		if shape[a] != 1 {
			real = append(real, a)
		}
		shape[a] = 1
		dims[a] = Int(1)
	}
	if len(real) == 0 {
		return t
	}
	if t.node.HasSym() { // a symbolic reduce loops to the value at launch: never split
		return FromNode(t.node.ctx.newSymNode(op, t.DType(), dims, real, t.node))
	}
	if r := t.splitReduce(op, real, shape); r != nil {
		return r
	}
	return FromNode(t.newNode(op, t.DType(), shape, real, t.node))
}

// Reduces of many elements into few outputs run in two stages, like
// tinygrad's split reduce: x.sum() of 16M floats would otherwise be one
// thread's loop. The reduced elements are viewed as (chunks, rows, lanes):
// stage one reduces the rows of each contiguous chunk into lanes partial
// results (chunks spread over cores, lanes are contiguous so they
// vectorize), stage two combines chunks x lanes values.
const (
	splitMinReduce  = 1 << 15 // elements reduced into each output
	splitMaxOutputs = 64      // only when there are few outputs
)

func (t *Tensor) splitReduce(op ir.Op, axes []int, outShape []int) *Tensor {
	p := 1
	for _, a := range axes {
		p *= t.node.Shape[a]
	}
	if p < splitMinReduce || prod(outShape) > splitMaxOutputs {
		return nil
	}
	lanes := splitLanes(t.node.Shape[axes[len(axes)-1]], p)
	chunks := firstDivisor(p/lanes, 64, 32, 16, 8)
	// Move the reduced axes last (a view), then split them.
	var keep, order []int
	for d := range t.node.Shape {
		if !slices.Contains(axes, d) {
			keep = append(keep, t.node.Shape[d])
			order = append(order, d)
		}
	}
	order = append(order, axes...)
	n := len(keep)
	if chunks == 0 || lanes < 4 {
		// No split divides the elements (1001 x 1003 of them: one core's
		// scalar loop, 7 GB/s).
		if len(axes) > 1 {
			// Each row of the last axis first (many outputs, across
			// cores), then the rest: flattening the axes would read the
			// elements through divisions and modulos by the row's length.
			last := t.reduce(reduceName(op), op, axes[len(axes)-1:])
			return last.reduce(reduceName(op), op, axes[:len(axes)-1]).Reshape(outShape...)
		}
		// One axis: the longest prefix that splits into 64 chunks of 16
		// lanes is reduced so, the rest (fewer than 1024) in one reduce
		// beside it, and the two combined.
		const block = 64 * 16
		m := p - p%block
		flat := t.Permute(order...).Reshape(append(slices.Clone(keep), p)...)
		part := func(lo, hi int) *Tensor {
			b := make([][2]int, 0, n+1)
			for _, d := range keep {
				b = append(b, [2]int{0, d})
			}
			r := flat.Shrink(append(b, [2]int{lo, hi}))
			return r.reduce(reduceName(op), op, []int{n})
		}
		head, tail := part(0, m), part(m, p)
		if op == ir.OpMaxReduce {
			return head.Maximum(tail).Reshape(outShape...)
		}
		return head.Add(tail).Reshape(outShape...)
	}
	x := t.Permute(order...).Reshape(append(slices.Clone(keep), chunks, p/(chunks*lanes), lanes)...)
	partial := FromNode(t.newNode(op, t.DType(), append(slices.Clone(keep), chunks, 1, lanes), []int{n + 1}, x.node))
	total := FromNode(t.newNode(op, t.DType(), append(slices.Clone(keep), 1, 1, 1), []int{n, n + 2}, partial.node))
	return total.Reshape(outShape...)
}

// reduceName names a reduce primitive in errors.
func reduceName(op ir.Op) string {
	if op == ir.OpMaxReduce {
		return "max"
	}
	return "sum"
}

// splitLanes picks the lanes of a split reduce: a divisor of the last
// reduced dimension (last, of p elements in all), or all of it when it is
// short, so that the lanes never straddle two rows of it. A lane that
// straddles rows makes every index computed from the row and column (a
// max pool's gradient reads its window's max at (y/2, x/2)) a division of
// the lane's position, and the partial sums' kernel scalar: the MNIST
// cnn's BatchNorm gradient over 20-column rows in 16 lanes ran at 5
// GFLOP/s.
func splitLanes(last, p int) int {
	if last <= 32 && last%4 == 0 {
		return last
	}
	if l := firstDivisor(last, 16, 8, 4); l > 0 {
		return l
	}
	return firstDivisor(p, 16, 8, 4, 2, 1)
}

// firstDivisor returns the first candidate that divides n (0 if none).
func firstDivisor(n int, cands ...int) int {
	for _, c := range cands {
		if n%c == 0 {
			return c
		}
	}
	return 0
}

// allAxes lists 0..n-1.
func allAxes(n int) []int {
	a := make([]int, n)
	for i := range a {
		a[i] = i
	}
	return a
}

// Contiguous forces the tensor to be its own buffer when realized.
func (t *Tensor) Contiguous() *Tensor {
	if t.err != nil || t.node.Op == ir.OpBuffer {
		return t
	}
	return FromNode(t.like(ir.OpContiguous, t.DType(), nil, t.node))
}

// ---- randomness ----

// Rand is uniform in [0, 1), float32, generated inside kernels from a
// counter-based hash of (seed, counter, element index) of the context's
// random stream.
func (c *Context) Rand(shape ...int) *Tensor {
	if t := checkShape("rand", shape); t != nil {
		return t
	}
	return FromNode(c.newNode(ir.OpRand, ir.Float32, shape, c.nextRand()))
}

func (a RandArg) String() string { return fmt.Sprintf("seed=%d,counter=%d", a.Seed, a.Counter) }
