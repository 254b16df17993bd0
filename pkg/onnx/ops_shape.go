package onnx

import (
	"math"
	"slices"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// Shape and movement operators. Most have a host fold, so shape
// computations (Shape → Gather → Concat → Reshape) are constants by the time
// a device operator needs them.

var shapeOps = map[string]opDef{
	"Shape":           {since: 1, host: hostOnly(shapeOf), anyInput: true},
	"Size":            {since: 1, host: hostOnly(sizeOf), anyInput: true},
	"Constant":        {since: 1, host: hostOnly(constantOf), anyInput: true},
	"ConstantOfShape": {since: 9, run: one(constantOfShape), host: hostConstantOfShape},
	"Reshape":         {since: 1, run: one(reshapeOp), host: hostReshape},
	"Flatten":         {since: 1, run: one(flattenOp), host: func(n *node, in []*Array) []*Array { return []*Array{reshaped(in[0], flatShape(n, in[0].Shape))} }},
	"Squeeze":         {since: 1, run: one(squeezeOp), host: func(n *node, in []*Array) []*Array { return []*Array{reshaped(in[0], squeezeShape(n, in[0].Shape))} }},
	"Unsqueeze":       {since: 1, run: one(unsqueezeOp), host: func(n *node, in []*Array) []*Array { return []*Array{reshaped(in[0], unsqueezeShape(n, in[0].Shape))} }},
	"Transpose":       {since: 1, run: one(transposeOp), host: func(n *node, in []*Array) []*Array { return []*Array{transposeArray(in[0], perm(n, len(in[0].Shape)))} }},
	"Concat":          {since: 1, run: one(concatOp), host: hostConcat},
	"Split":           {since: 1, run: splitOp},
	"Slice":           {since: 1, run: one(sliceOp), host: hostSlice},
	"Expand":          {since: 8, run: one(expandOp), host: hostExpand},
	"Tile":            {since: 1, run: one(tileOp)},
	"Pad":             {since: 1, run: one(padOp)},
	"Range":           {since: 11, run: one(rangeOp), host: hostRange},
	"EyeLike":         {since: 9, run: one(eyeLike)},
	"Trilu":           {since: 14, run: one(trilu)},
	"DepthToSpace":    {since: 1, run: one(depthToSpace)},
	"SpaceToDepth":    {since: 1, run: one(spaceToDepth)},
}

// hostOnly wraps an operator whose result is always known at load time
// (it reads shapes and attributes, never data).
func hostOnly(f func(n *node) *Array) func(n *node, in []*Array) []*Array {
	return func(n *node, _ []*Array) []*Array {
		a := f(n)
		if a == nil {
			if n.err == nil {
				n.fail("internal: no value")
			}
			return nil
		}
		return []*Array{a}
	}
}

func shapeOf(n *node) *Array {
	if !n.has(0) {
		n.fail("input 0 is missing")
		return nil
	}
	shape := n.in[0].shape()
	r := len(shape)
	start, end := 0, r
	if n.opset >= 15 {
		start, end = n.int("start", 0), n.int("end", r)
		clampAxis := func(a int) int {
			if a < 0 {
				a += r
			}
			return min(max(a, 0), r)
		}
		start, end = clampAxis(start), clampAxis(end)
		end = max(end, start)
	}
	v := make([]int64, end-start)
	for i := range v {
		v[i] = int64(shape[start+i])
	}
	return ArrayOfInts(Int64, []int{len(v)}, v)
}

func sizeOf(n *node) *Array {
	if !n.has(0) {
		n.fail("input 0 is missing")
		return nil
	}
	s := 1
	for _, d := range n.in[0].shape() {
		s *= d
	}
	return ArrayOfInts(Int64, nil, []int64{int64(s)})
}

func constantOf(n *node) *Array {
	switch {
	case n.hasAttr("value"):
		return n.tensorAttr("value")
	case n.hasAttr("value_float"):
		return ArrayOfFloats(Float, nil, []float64{n.float("value_float", 0)})
	case n.hasAttr("value_floats"):
		v := n.floatList("value_floats", nil)
		return ArrayOfFloats(Float, []int{len(v)}, v)
	case n.hasAttr("value_int"):
		return ArrayOfInts(Int64, nil, []int64{int64(n.int("value_int", 0))})
	case n.hasAttr("value_ints"):
		v := n.intList("value_ints", nil)
		iv := make([]int64, len(v))
		for i, x := range v {
			iv[i] = int64(x)
		}
		return ArrayOfInts(Int64, []int{len(v)}, iv)
	case n.hasAttr("sparse_value"):
		n.unsupported("sparse constants")
		return nil
	}
	n.fail("Constant has no value attribute")
	return nil
}

// shapeInput reads a 1-D shape input and checks its dimensions.
func (n *node) shapeInput(i int) []int {
	s := n.ints(i)
	if n.err != nil {
		return nil
	}
	if _, err := numel(s); err != nil {
		n.fail("shape %v: %v", s, err)
		return nil
	}
	return s
}

// fillValue is ConstantOfShape's value: a one-element tensor (float32 0 by
// default).
func fillValue(n *node) *Array {
	if !n.hasAttr("value") {
		return ArrayOfFloats(Float, []int{1}, []float64{0})
	}
	v := n.tensorAttr("value")
	if v != nil && v.Numel() != 1 {
		n.fail("value must hold one element, got shape %v", v.Shape)
		return nil
	}
	return v
}

func constantOfShape(n *node) *tensor.Tensor {
	shape := n.shapeInput(0)
	v := fillValue(n)
	if n.err != nil {
		return nil
	}
	dt, err := v.Type.IR()
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	return n.ctx.Full(shape, v.Float(0), dt)
}

func hostConstantOfShape(n *node, in []*Array) []*Array {
	shape := n.shapeInput(0)
	v := fillValue(n)
	if n.err != nil {
		return nil
	}
	if c, _ := numel(shape); c > foldLimit {
		return nil
	}
	r := NewArray(v.Type, shape)
	for i := range r.Numel() {
		copy(r.Data[i*v.Type.Size():], v.Data)
	}
	return []*Array{r}
}

// reshapeTarget resolves Reshape's shape: 0 copies the input's dimension
// (unless allowzero), -1 is inferred.
func reshapeTarget(n *node, in []int) []int {
	var s []int
	if n.opset < 5 {
		s = n.intList("shape", nil)
	} else {
		s = n.ints(1)
	}
	if n.err != nil {
		return nil
	}
	s = slices.Clone(s)
	allowZero := n.int("allowzero", 0) == 1
	infer, known := -1, 1
	for i, d := range s {
		switch {
		case d == 0 && !allowZero:
			if i >= len(in) {
				n.fail("shape %v copies dimension %d, the input %s has %d", s, i, tensor.FormatShape(in), len(in))
				return nil
			}
			s[i] = in[i]
			known *= s[i]
		case d == -1:
			if infer >= 0 {
				n.fail("shape %v has more than one -1", s)
				return nil
			}
			infer = i
		case d < 0:
			n.fail("invalid dimension %d in shape %v", d, s)
			return nil
		default:
			known *= d
		}
	}
	total := 1
	for _, d := range in {
		total *= d
	}
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			n.fail("cannot reshape %s into %v", tensor.FormatShape(in), s)
			return nil
		}
		s[infer] = total / known
	}
	if c, err := numel(s); err != nil || c != total {
		n.fail("cannot reshape %s (%d elements) into %v", tensor.FormatShape(in), total, s)
		return nil
	}
	return s
}

func reshapeOp(n *node) *tensor.Tensor {
	x := n.x(0)
	s := reshapeTarget(n, x.Shape())
	if n.err != nil {
		return x
	}
	return x.Reshape(s...)
}

func hostReshape(n *node, in []*Array) []*Array {
	s := reshapeTarget(n, in[0].Shape)
	if n.err != nil {
		return nil
	}
	return []*Array{reshaped(in[0], s)}
}

func flatShape(n *node, shape []int) []int {
	r := len(shape)
	axis := n.int("axis", 1)
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis > r {
		n.fail("axis %d is out of range for rank %d", n.int("axis", 1), r)
		return shape
	}
	a, b := 1, 1
	for i, d := range shape {
		if i < axis {
			a *= d
		} else {
			b *= d
		}
	}
	return []int{a, b}
}

func flattenOp(n *node) *tensor.Tensor {
	x := n.x(0)
	s := flatShape(n, x.Shape())
	if n.err != nil {
		return x
	}
	return x.Reshape(s...)
}

// axesArg reads axes from the attribute (before opset 13) or the optional
// input 1.
func (n *node) axesArg(attrUntil int) ([]int, bool) {
	if n.opset < attrUntil {
		if !n.hasAttr("axes") {
			return nil, false
		}
		return n.intList("axes", nil), true
	}
	if !n.has(1) {
		return nil, false
	}
	return n.ints(1), true
}

func squeezeShape(n *node, shape []int) []int {
	as, given := n.axesArg(13)
	if n.err != nil {
		return shape
	}
	var drop []int
	if given {
		drop = n.axes(as, len(shape))
		for _, a := range drop {
			if n.err == nil && shape[a] != 1 {
				n.fail("cannot squeeze axis %d of shape %s: its size is %d", a, tensor.FormatShape(shape), shape[a])
			}
		}
	} else {
		for i, d := range shape {
			if d == 1 {
				drop = append(drop, i)
			}
		}
	}
	return dropAxes(shape, drop)
}

func squeezeOp(n *node) *tensor.Tensor {
	x := n.x(0)
	s := squeezeShape(n, x.Shape())
	if n.err != nil {
		return x
	}
	return x.Reshape(s...)
}

func unsqueezeShape(n *node, shape []int) []int {
	as, given := n.axesArg(13)
	if n.err != nil {
		return shape
	}
	if !given {
		n.fail("axes are missing")
		return shape
	}
	r := len(shape) + len(as)
	add := n.axes(as, r)
	out := make([]int, 0, r)
	j := 0
	for i := range r {
		if slices.Contains(add, i) {
			out = append(out, 1)
		} else if j < len(shape) {
			out = append(out, shape[j])
			j++
		}
	}
	return out
}

func unsqueezeOp(n *node) *tensor.Tensor {
	x := n.x(0)
	s := unsqueezeShape(n, x.Shape())
	if n.err != nil {
		return x
	}
	return x.Reshape(s...)
}

// perm is Transpose's permutation (default: reversed axes).
func perm(n *node, r int) []int {
	p := n.intList("perm", nil)
	if p == nil {
		p = make([]int, r)
		for i := range p {
			p[i] = r - 1 - i
		}
	}
	if len(p) != r {
		n.fail("perm %v has %d entries for rank %d", p, len(p), r)
		return allAxesOf(r)
	}
	seen := make([]bool, r)
	for _, a := range p {
		if a < 0 || a >= r || seen[a] {
			n.fail("perm %v is not a permutation of %d axes", p, r)
			return allAxesOf(r)
		}
		seen[a] = true
	}
	return p
}

func transposeOp(n *node) *tensor.Tensor {
	x := n.x(0)
	p := perm(n, x.Ndim())
	if n.err != nil {
		return x
	}
	return x.Permute(p...)
}

func concatAxis(n *node, r int) int {
	def := 0
	if n.opset < 4 {
		def = 1
	} else if !n.hasAttr("axis") {
		n.fail("attribute axis is missing")
	}
	return n.axis(n.int("axis", def), r)
}

func concatOp(n *node) *tensor.Tensor {
	var ts []*tensor.Tensor
	for i := range n.in {
		if n.has(i) {
			ts = append(ts, n.x(i))
		}
	}
	if len(ts) == 0 || n.err != nil {
		n.fail("no inputs")
		return nil
	}
	axis := concatAxis(n, ts[0].Ndim())
	if n.err != nil {
		return nil
	}
	var keep []*tensor.Tensor // empty tensors add nothing (ONNX allows them)
	for _, t := range ts {
		if t.Numel() > 0 || t.Ndim() != ts[0].Ndim() {
			keep = append(keep, t)
		}
	}
	if len(keep) == 0 {
		return ts[0]
	}
	return keep[0].Cat(axis, keep[1:]...)
}

func hostConcat(n *node, in []*Array) []*Array {
	var as []*Array
	for _, a := range in {
		if a != nil {
			as = append(as, a)
		}
	}
	if len(as) == 0 {
		return nil
	}
	r := len(as[0].Shape)
	axis := concatAxis(n, r)
	if n.err != nil {
		return nil
	}
	out := slices.Clone(as[0].Shape)
	out[axis] = 0
	for _, a := range as {
		if a.Type != as[0].Type || len(a.Shape) != r {
			return nil
		}
		for i, d := range a.Shape {
			if i != axis && d != as[0].Shape[i] {
				return nil // the device op reports it
			}
		}
		out[axis] += a.Shape[axis]
	}
	res := NewArray(as[0].Type, out)
	outer := 1
	for _, d := range out[:axis] {
		outer *= d
	}
	inner := as[0].Type.Size()
	for _, d := range out[axis+1:] {
		inner *= d
	}
	pos := 0
	for o := range outer {
		for _, a := range as {
			chunk := a.Shape[axis] * inner
			copy(res.Data[pos:pos+chunk], a.Data[o*chunk:(o+1)*chunk])
			pos += chunk
		}
	}
	return []*Array{res}
}

// splitOp cuts input 0 along axis into the sizes of attribute (before
// opset 13) or input split, or into equal parts, one per output.
func splitOp(n *node) []*tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return nil
	}
	axis := n.axis(n.int("axis", 0), x.Ndim())
	outs := len(n.proto.GetOutput())
	var sizes []int
	switch {
	case n.opset < 13 && n.hasAttr("split"):
		sizes = n.intList("split", nil)
	case n.opset < 2 && n.has(1):
		sizes = n.ints(1)
	case n.opset >= 13 && n.has(1):
		sizes = n.ints(1)
	}
	if n.err != nil {
		return nil
	}
	dim := x.Shape()[axis]
	if sizes == nil {
		if outs == 0 || dim%outs != 0 {
			n.fail("cannot split dimension %d of size %d into %d equal parts", axis, dim, outs)
			return nil
		}
		sizes = slices.Repeat([]int{dim / outs}, outs)
	}
	total := 0
	for _, s := range sizes {
		if s < 0 {
			n.fail("negative split size in %v", sizes)
			return nil
		}
		total += s
	}
	if total != dim || len(sizes) != outs {
		n.fail("split %v does not cut dimension %d of size %d into %d outputs", sizes, axis, dim, outs)
		return nil
	}
	return x.SplitSizes(sizes, axis)
}

// sliceSpec is one axis of a resolved slice: the first index, the step and
// the element count.
type sliceSpec struct{ start, step, count int }

// sliceSpecs resolves Slice's starts, ends, axes and steps (attributes
// before opset 10, inputs from it) against shape, with ONNX's clamping.
func sliceSpecs(n *node, shape []int) []sliceSpec {
	var starts, ends, axes, steps []int
	if n.opset < 10 {
		starts, ends = n.intList("starts", nil), n.intList("ends", nil)
		axes = n.intList("axes", nil)
	} else {
		starts, ends = n.ints(1), n.ints(2)
		if n.has(3) {
			axes = n.ints(3)
		}
		if n.has(4) {
			steps = n.ints(4)
		}
	}
	if n.err != nil {
		return nil
	}
	r := len(shape)
	if axes == nil {
		axes = allAxesOf(len(starts))
	}
	if steps == nil {
		steps = slices.Repeat([]int{1}, len(starts))
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		n.fail("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
		return nil
	}
	specs := make([]sliceSpec, r)
	for i, d := range shape {
		specs[i] = sliceSpec{0, 1, d}
	}
	seen := map[int]bool{}
	for i, a := range axes {
		a = n.axis(a, r)
		if n.err != nil {
			return nil
		}
		if seen[a] {
			n.fail("axis %d is repeated in %v", a, axes)
			return nil
		}
		seen[a] = true
		d, step := shape[a], steps[i]
		if step == 0 {
			n.fail("step must not be 0")
			return nil
		}
		clamp := func(v, lo, hi int) int {
			if v < 0 {
				v += d
			}
			return min(max(v, lo), hi)
		}
		var start, end, count int
		if step > 0 {
			start, end = clamp(starts[i], 0, d), clamp(ends[i], 0, d)
			if end > start {
				count = (end - start + step - 1) / step
			}
		} else {
			start, end = clamp(starts[i], 0, d-1), clamp(ends[i], -1, d-1)
			if ends[i] < -d { // before the first element
				end = -1
			}
			if start > end {
				count = (start - end - step - 1) / -step
			}
		}
		specs[a] = sliceSpec{start, step, count}
	}
	return specs
}

func sliceOp(n *node) *tensor.Tensor {
	x := n.x(0)
	specs := sliceSpecs(n, x.Shape())
	if n.err != nil {
		return x
	}
	return sliceTensor(x, specs)
}

// sliceTensor takes a resolved slice as a view.
func sliceTensor(x *tensor.Tensor, specs []sliceSpec) *tensor.Tensor {
	items := make([]tensor.IndexItem, len(specs))
	for i, s := range specs {
		start, step := s.start, s.step
		stop := start + step*s.count
		if s.count == 0 {
			stop = start
		}
		if stop < 0 { // a negative step to the very first element: Python's None
			items[i] = tensor.SliceIndex(&start, nil, &step)
		} else {
			items[i] = tensor.SliceIndex(&start, &stop, &step)
		}
	}
	return x.Index(items)
}

func hostSlice(n *node, in []*Array) []*Array {
	a := in[0]
	specs := sliceSpecs(n, a.Shape)
	if n.err != nil {
		return nil
	}
	shape := make([]int, len(specs))
	for i, s := range specs {
		shape[i] = s.count
	}
	return []*Array{gatherArray(a, shape, func(idx []int) int {
		off := 0
		for j, x := range idx {
			off = off*a.Shape[j] + specs[j].start + x*specs[j].step
		}
		return off
	})}
}

// gatherArray builds an array of shape whose element at each multi-index
// is a's element at flat index src(idx).
func gatherArray(a *Array, shape []int, src func(idx []int) int) *Array {
	r := NewArray(a.Type, shape)
	sz := a.Type.Size()
	idx := make([]int, len(shape))
	for flat := range r.Numel() {
		s := src(idx)
		copy(r.Data[flat*sz:(flat+1)*sz], a.Data[s*sz:(s+1)*sz])
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

func expandShape(n *node, in []int) []int {
	s := n.shapeInput(1)
	if n.err != nil {
		return nil
	}
	out, ok := tensor.BroadcastShape(in, s)
	if !ok {
		n.fail("cannot expand %s to %v", tensor.FormatShape(in), s)
		return nil
	}
	return out
}

func expandOp(n *node) *tensor.Tensor {
	x := n.x(0)
	s := expandShape(n, x.Shape())
	if n.err != nil {
		return x
	}
	return x.Reshape(append(ones(len(s)-x.Ndim()), x.Shape()...)...).Expand(s...)
}

func hostExpand(n *node, in []*Array) []*Array {
	s := expandShape(n, in[0].Shape)
	if n.err != nil {
		return nil
	}
	if c, _ := numel(s); c > foldLimit {
		return nil
	}
	_, tabs, _ := broadcastTables(in[0].Shape, s)
	a := in[0]
	return []*Array{gatherArray(a, s, func(idx []int) int {
		off := 0
		for j, x := range idx {
			off = off*s[j] + x
		}
		return tabs[0][off]
	})}
}

func tileOp(n *node) *tensor.Tensor {
	x := n.x(0)
	var reps []int
	if n.opset < 6 {
		// opset 1: inputs tiles (count) and axis
		t, ax := n.ints(1), n.ints(2)
		if n.err != nil || len(t) != 1 || len(ax) != 1 {
			n.fail("Tile-1 needs one tiles and one axis value")
			return x
		}
		reps = slices.Repeat([]int{1}, x.Ndim())
		reps[n.axis(ax[0], x.Ndim())] = t[0]
	} else {
		reps = n.ints(1)
	}
	if n.err != nil {
		return x
	}
	if len(reps) != x.Ndim() {
		n.fail("repeats %v do not match rank %d", reps, x.Ndim())
		return x
	}
	for _, r := range reps {
		if r < 0 {
			n.fail("negative repeat in %v", reps)
			return x
		}
	}
	return x.Repeat(reps...)
}

// padOp pads with a constant, the edge values or a reflection: pads are an
// attribute (paddings before opset 2) or input 1 (from opset 11); negative
// pads crop.
func padOp(n *node) *tensor.Tensor {
	x := n.x(0)
	var pads []int
	value := 0.0
	switch {
	case n.opset < 2:
		pads = n.intList("paddings", nil)
		value = n.float("value", 0)
	case n.opset < 11:
		pads = n.intList("pads", nil)
		value = n.float("value", 0)
	default:
		pads = n.ints(1)
		if n.has(2) {
			value = n.scalar(2)
		}
	}
	if n.err != nil {
		return x
	}
	r := x.Ndim()
	if len(pads) != 2*r {
		n.fail("pads %v must have %d values for rank %d", pads, 2*r, r)
		return x
	}
	mode := n.str("mode", "constant")
	// crop first (negative pads), then pad
	bounds := make([][2]int, r)
	grow := make([][2]int, r)
	for i, d := range x.Shape() {
		b, a := pads[i], pads[i+r]
		bounds[i] = [2]int{max(-b, 0), d - max(-a, 0)}
		if bounds[i][0] > bounds[i][1] {
			n.fail("pads %v crop more than dimension %d has", pads, i)
			return x
		}
		grow[i] = [2]int{max(b, 0), max(a, 0)}
	}
	x = x.Shrink(bounds)
	switch mode {
	case "constant":
		return x.Pad(grow, value)
	case "edge", "reflect":
		for i := range r {
			x = padAxis(n, x, i, grow[i], mode)
		}
		return x
	}
	n.unsupported("pad mode %q", mode)
	return x
}

// padAxis pads one axis with edge copies or a reflection (the edge itself
// not repeated), by concatenating views.
func padAxis(n *node, x *tensor.Tensor, axis int, p [2]int, mode string) *tensor.Tensor {
	if p == [2]int{} {
		return x
	}
	d := x.Shape()[axis]
	part := func(lo, hi int) *tensor.Tensor {
		b := make([][2]int, x.Ndim())
		for i, s := range x.Shape() {
			b[i] = [2]int{0, s}
		}
		b[axis] = [2]int{lo, hi}
		return x.Shrink(b)
	}
	var before, after *tensor.Tensor
	if mode == "edge" {
		if d == 0 {
			n.fail("cannot edge-pad an empty dimension")
			return x
		}
		expand := func(t *tensor.Tensor, k int) *tensor.Tensor {
			s := t.Shape()
			s[axis] = k
			return t.Expand(s...)
		}
		before, after = expand(part(0, 1), p[0]), expand(part(d-1, d), p[1])
	} else {
		if p[0] >= d || p[1] >= d {
			n.fail("reflect padding %v needs a dimension larger than the pads, got %d", p, d)
			return x
		}
		before, after = part(1, p[0]+1).Flip(axis), part(d-1-p[1], d-1).Flip(axis)
	}
	var parts []*tensor.Tensor
	if p[0] > 0 {
		parts = append(parts, before)
	}
	parts = append(parts, x)
	if p[1] > 0 {
		parts = append(parts, after)
	}
	return parts[0].Cat(axis, parts[1:]...)
}

// rangeCount is Range's element count, max(ceil((limit-start)/delta), 0).
func rangeCount(n *node, start, limit, delta float64) int {
	if delta == 0 {
		n.fail("delta must not be 0")
		return 0
	}
	c := math.Ceil((limit - start) / delta)
	if c > maxElements {
		n.fail("range of %g elements", c)
		return 0
	}
	return int(max(c, 0))
}

func rangeOp(n *node) *tensor.Tensor {
	start, limit, delta := n.scalar(0), n.scalar(1), n.scalar(2)
	if n.err != nil {
		return nil
	}
	typ := n.in[0].dtype()
	dt, err := typ.IR()
	if err != nil {
		n.fail("%v", err)
		return nil
	}
	c := rangeCount(n, start, limit, delta)
	if n.err != nil {
		return nil
	}
	if c == 0 {
		return n.ctx.Zeros([]int{0}, dt)
	}
	return n.ctx.Arange(start, start+float64(c)*delta, delta, dt).Shrink([][2]int{{0, c}})
}

func hostRange(n *node, in []*Array) []*Array {
	for _, a := range in[:3] {
		if a == nil || a.Numel() != 1 || a.Type != in[0].Type {
			return nil
		}
	}
	typ := in[0].Type
	if typ.IsFloat() {
		start, limit, delta := in[0].Float(0), in[1].Float(0), in[2].Float(0)
		c := rangeCount(n, start, limit, delta)
		if n.err != nil || c > foldLimit {
			return nil
		}
		r := NewArray(typ, []int{c})
		for i := range c {
			r.SetFloat(i, start+float64(i)*delta)
		}
		return []*Array{r}
	}
	start, limit, delta := in[0].Int(0), in[1].Int(0), in[2].Int(0)
	if delta == 0 {
		n.fail("delta must not be 0")
		return nil
	}
	c := rangeCount(n, float64(start), float64(limit), float64(delta))
	if n.err != nil || c > foldLimit {
		return nil
	}
	r := NewArray(typ, []int{c})
	for i := range c {
		r.SetInt(i, start+int64(i)*delta)
	}
	return []*Array{r}
}

func eyeLike(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	if x.Ndim() != 2 {
		n.fail("EyeLike needs a 2-D input, got %s", tensor.FormatShape(x.Shape()))
		return x
	}
	dt := x.DType()
	if n.hasAttr("dtype") {
		var err error
		if dt, err = DataType(n.int("dtype", 0)).IR(); err != nil {
			n.fail("%v", err)
			return x
		}
	}
	r, c := x.Shape()[0], x.Shape()[1]
	k := n.int("k", 0)
	rows := n.ctx.Arange(0, float64(r), 1, ir.Int32).Reshape(r, 1)
	cols := n.ctx.Arange(0, float64(c), 1, ir.Int32).Reshape(1, c)
	return cols.Sub(rows).Eq(n.ctx.Const(float64(k), ir.Int32)).Cast(dt)
}

func trilu(n *node) *tensor.Tensor {
	x := n.x(0)
	k := 0
	if n.has(1) {
		k = int(n.scalar(1))
	}
	if n.err != nil {
		return x
	}
	if n.int("upper", 1) == 1 {
		return x.Triu(k)
	}
	return x.Tril(k)
}

func depthToSpace(n *node) *tensor.Tensor {
	x := n.x(0)
	b := n.int("blocksize", 0)
	if n.err != nil {
		return x
	}
	if x.Ndim() != 4 || b <= 0 || x.Shape()[1]%(b*b) != 0 {
		n.fail("DepthToSpace needs (N, C, H, W) with C divisible by blocksize² (blocksize %d), got %s", b, tensor.FormatShape(x.Shape()))
		return x
	}
	s := x.Shape()
	N, C, H, W := s[0], s[1], s[2], s[3]
	c := C / (b * b)
	if n.str("mode", "DCR") == "CRD" {
		return x.Reshape(N, c, b, b, H, W).Permute(0, 1, 4, 2, 5, 3).Reshape(N, c, H*b, W*b)
	}
	return x.Reshape(N, b, b, c, H, W).Permute(0, 3, 4, 1, 5, 2).Reshape(N, c, H*b, W*b)
}

func spaceToDepth(n *node) *tensor.Tensor {
	x := n.x(0)
	b := n.int("blocksize", 0)
	if n.err != nil {
		return x
	}
	if x.Ndim() != 4 || b <= 0 || x.Shape()[2]%b != 0 || x.Shape()[3]%b != 0 {
		n.fail("SpaceToDepth needs (N, C, H, W) with H and W divisible by blocksize %d, got %s", b, tensor.FormatShape(x.Shape()))
		return x
	}
	s := x.Shape()
	N, C, H, W := s[0], s[1], s[2], s[3]
	return x.Reshape(N, C, H/b, b, W/b, b).Permute(0, 3, 5, 1, 2, 4).Reshape(N, C*b*b, H/b, W/b)
}
