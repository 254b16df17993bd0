package onnx

import (
	"math"
	"slices"

	"tgc/pkg/ir"
	"tgc/pkg/onnx/onnxpb"
	"tgc/pkg/tensor"
)

// Elementwise operators: arithmetic, comparisons, logic, math functions and
// activations. ONNX types are strict (both operands of Add have one type),
// so tgc's promotion leaves them alone; where ONNX mixes types (Pow) the
// result is cast to the first operand's type.

var elementwiseOps = map[string]opDef{
	"Add": {since: 1, run: rowsBinary((*tensor.Tensor).Add), host: hostArith(func(a, b int64) int64 { return a + b }, func(a, b float64) float64 { return a + b })},
	"Sub": {since: 1, run: binaryOp((*tensor.Tensor).Sub), host: hostArith(func(a, b int64) int64 { return a - b }, func(a, b float64) float64 { return a - b })},
	"Mul": {since: 1, run: binaryOp((*tensor.Tensor).Mul), host: hostArith(func(a, b int64) int64 { return a * b }, func(a, b float64) float64 { return a * b })},
	"Div": {since: 1, run: binaryOp(onnxDiv), host: hostArith(idiv, func(a, b float64) float64 { return a / b })},
	"Mod": {since: 10, run: one(modOp)},
	"Pow": {since: 1, run: binaryOp(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Pow(b).Cast(a.DType()) })},

	"Equal":          {since: 1, run: binaryOp((*tensor.Tensor).Eq), host: hostCompare(func(a, b int64) bool { return a == b }, func(a, b float64) bool { return a == b })},
	"Less":           {since: 1, run: binaryOp((*tensor.Tensor).Lt), host: hostCompare(func(a, b int64) bool { return a < b }, func(a, b float64) bool { return a < b })},
	"Greater":        {since: 1, run: binaryOp((*tensor.Tensor).Gt), host: hostCompare(func(a, b int64) bool { return a > b }, func(a, b float64) bool { return a > b })},
	"LessOrEqual":    {since: 12, run: binaryOp((*tensor.Tensor).Le), host: hostCompare(func(a, b int64) bool { return a <= b }, func(a, b float64) bool { return a <= b })},
	"GreaterOrEqual": {since: 12, run: binaryOp((*tensor.Tensor).Ge), host: hostCompare(func(a, b int64) bool { return a >= b }, func(a, b float64) bool { return a >= b })},
	"And":            {since: 1, run: binaryOp((*tensor.Tensor).And), host: hostArith(func(a, b int64) int64 { return a & b }, nil)},
	"Or":             {since: 1, run: binaryOp((*tensor.Tensor).Or), host: hostArith(func(a, b int64) int64 { return a | b }, nil)},
	"Xor":            {since: 1, run: binaryOp((*tensor.Tensor).Xor), host: hostArith(func(a, b int64) int64 { return a ^ b }, nil)},
	"Not":            {since: 1, run: unaryOp((*tensor.Tensor).LogicalNot), host: hostUnary(func(a int64) int64 { return 1 - a }, nil)},
	"BitShift":       {since: 11, run: one(bitShift)},

	"Sum":  {since: 1, run: one(variadic(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Add(b) }))},
	"Mean": {since: 1, run: one(meanOp)},
	"Max":  {since: 1, run: one(variadic(maxOf)), host: hostMap{fi: reduceI(func(a, b int64) int64 { return max(a, b) }), ff: reduceF(math.Max)}.fold},
	"Min":  {since: 1, run: one(variadic(minOf)), host: hostMap{fi: reduceI(func(a, b int64) int64 { return min(a, b) }), ff: reduceF(math.Min)}.fold},

	"Neg":        {since: 1, run: unaryOp((*tensor.Tensor).Neg), host: hostUnary(func(a int64) int64 { return -a }, func(a float64) float64 { return -a })},
	"Abs":        {since: 1, run: unaryOp((*tensor.Tensor).Abs), host: hostUnary(func(a int64) int64 { return max(a, -a) }, math.Abs)},
	"Sign":       {since: 9, run: unaryOp((*tensor.Tensor).Sign)},
	"Reciprocal": {since: 1, run: unaryOp((*tensor.Tensor).Reciprocal)},
	"Floor":      {since: 1, run: unaryOp((*tensor.Tensor).Floor), host: hostUnary(nil, math.Floor)},
	"Ceil":       {since: 1, run: unaryOp((*tensor.Tensor).Ceil), host: hostUnary(nil, math.Ceil)},
	"Round":      {since: 11, run: unaryOp((*tensor.Tensor).Round)},
	"Sqrt":       {since: 1, run: unaryOp((*tensor.Tensor).Sqrt), host: hostUnary(nil, math.Sqrt)},
	"Exp":        {since: 1, run: unaryOp((*tensor.Tensor).Exp)},
	"Log":        {since: 1, run: unaryOp((*tensor.Tensor).Log)},
	"Sin":        {since: 7, run: unaryOp((*tensor.Tensor).Sin)},
	"Cos":        {since: 7, run: unaryOp((*tensor.Tensor).Cos)},
	"Tan":        {since: 7, run: unaryOp((*tensor.Tensor).Tan)},
	"Asin":       {since: 7, run: unaryOp((*tensor.Tensor).Asin)},
	"Acos":       {since: 7, run: unaryOp((*tensor.Tensor).Acos)},
	"Atan":       {since: 7, run: unaryOp((*tensor.Tensor).Atan)},
	"Sinh":       {since: 9, run: unaryOp((*tensor.Tensor).Sinh)},
	"Cosh":       {since: 9, run: unaryOp((*tensor.Tensor).Cosh)},
	"Asinh":      {since: 9, run: unaryOp((*tensor.Tensor).Asinh)},
	"Acosh":      {since: 9, run: unaryOp((*tensor.Tensor).Acosh)},
	"Atanh":      {since: 9, run: unaryOp((*tensor.Tensor).Atanh)},
	"Erf":        {since: 9, run: unaryOp((*tensor.Tensor).Erf)},
	"IsNaN":      {since: 9, run: unaryOp((*tensor.Tensor).Isnan)},
	"IsInf":      {since: 10, run: one(isInf)},

	"Relu":            {since: 1, run: rowsUnary((*tensor.Tensor).Relu)},
	"Sigmoid":         {since: 1, run: unaryOp((*tensor.Tensor).Sigmoid)},
	"Tanh":            {since: 1, run: unaryOp((*tensor.Tensor).Tanh)},
	"Softplus":        {since: 1, run: unaryOp(func(x *tensor.Tensor) *tensor.Tensor { return x.Softplus(1) })},
	"Softsign":        {since: 1, run: unaryOp((*tensor.Tensor).Softsign)},
	"HardSwish":       {since: 14, run: unaryOp((*tensor.Tensor).Hardswish)},
	"LeakyRelu":       {since: 1, run: one(func(n *node) *tensor.Tensor { return n.x(0).LeakyRelu(n.float("alpha", 0.01)) })},
	"PRelu":           {since: 1, run: one(prelu)},
	"Elu":             {since: 1, run: one(elu)},
	"Celu":            {since: 12, run: one(func(n *node) *tensor.Tensor { return n.x(0).Celu(n.float("alpha", 1)) })},
	"Selu":            {since: 1, run: one(selu)},
	"HardSigmoid":     {since: 1, run: one(hardSigmoid)},
	"ThresholdedRelu": {since: 10, run: one(thresholdedRelu)},
	"Shrink":          {since: 9, run: one(shrink)},
	"Clip":            {since: 1, run: one(clip)},
	"Cast":            {since: 1, run: one(castOp), host: hostCast},
	"CastLike":        {since: 15, run: one(func(n *node) *tensor.Tensor { return n.x(0).Cast(n.x(1).DType()) })},
	"Where":           {since: 9, run: one(func(n *node) *tensor.Tensor { return n.x(0).Where(n.x(1), n.x(2)) }), host: hostWhere},
	"Identity":        {since: 1, run: one(func(n *node) *tensor.Tensor { return n.x(0) }), host: func(n *node, in []*Array) []*Array { return in[:1] }},
	"Dropout":         {since: 1, run: dropout},
}

func unaryOp(f func(*tensor.Tensor) *tensor.Tensor) func(n *node) []*tensor.Tensor {
	return one(func(n *node) *tensor.Tensor { return f(n.x(0)) })
}

// rowsUnary applies an elementwise function, on the rows of a value that
// has them (rows.go), so it fuses into the product that made them.
func rowsUnary(f func(*tensor.Tensor) *tensor.Tensor) func(n *node) []*tensor.Tensor {
	return one(func(n *node) *tensor.Tensor {
		if rf := n.rowsIn(0); rf != nil {
			return n.withRows(rf.with(f(rf.rowsT())))
		}
		return f(n.x(0))
	})
}

// rowsBinary is binaryOp, on rows when both operands have the same rows
// form or one has rows and the other is per channel (a bias).
func rowsBinary(f func(a, b *tensor.Tensor) *tensor.Tensor) func(n *node) []*tensor.Tensor {
	plain := binaryOp(f)
	return func(n *node) []*tensor.Tensor {
		ra, rb := n.rowsIn(0), n.rowsIn(1)
		if n.opset >= 7 && ra != nil && rb != nil && slices.Equal(ra.t.Shape(), rb.t.Shape()) && ra.p == rb.p {
			// The second operand (a residual connection's shortcut) is
			// stored first, so a value used twice is computed once.
			if ra.stored == nil && rb.stored == nil {
				rb.nchw()
			}
			return []*tensor.Tensor{n.withRows(ra.with(f(ra.rowsT(), rb.rowsT())))}
		}
		if n.opset >= 7 && (ra != nil) != (rb != nil) {
			r, other := ra, 1
			if r == nil {
				r, other = rb, 0
			}
			c := r.t.Shape()[2]
			if o := n.x(other); n.err == nil {
				if pc := broadcastChannel(o, c, len(r.out)); pc != nil {
					a, b := r.rowsT(), pc
					if other == 0 {
						a, b = pc, r.rowsT()
					}
					return []*tensor.Tensor{n.withRows(r.with(f(a, b)))}
				}
			}
		}
		return plain(n)
	}
}

// binaryOp applies f to inputs 0 and 1, with the broadcasting of opsets
// before 7 when the node asks for it (attribute broadcast=1: B's shape
// matches a run of A's dimensions starting at attribute axis, or A's last
// ones).
func binaryOp(f func(a, b *tensor.Tensor) *tensor.Tensor) func(n *node) []*tensor.Tensor {
	return one(func(n *node) *tensor.Tensor {
		a, b := n.x(0), n.x(1)
		if n.opset < 7 && n.err == nil {
			b = n.legacyBroadcast(a, b)
		}
		return f(a, b)
	})
}

// legacyBroadcast reshapes B for opsets 1-6: without broadcast=1 the shapes
// must be equal; with it B's dimensions line up with A's from axis on.
func (n *node) legacyBroadcast(a, b *tensor.Tensor) *tensor.Tensor {
	if n.int("broadcast", 0) == 0 {
		return b // numpy rules then agree whenever the shapes are equal
	}
	ra, rb := a.Ndim(), b.Ndim()
	axis := ra - rb
	if n.hasAttr("axis") {
		axis = n.axis(n.int("axis", 0), ra)
	}
	if axis+rb > ra {
		n.fail("B %s does not fit A %s at axis %d", tensor.FormatShape(b.Shape()), tensor.FormatShape(a.Shape()), axis)
		return b
	}
	return b.Reshape(append(b.Shape(), ones(ra-axis-rb)...)...)
}

// onnxDiv truncates integer quotients (C division) and divides floats.
func onnxDiv(a, b *tensor.Tensor) *tensor.Tensor {
	if a.DType().IsFloat() || b.DType().IsFloat() {
		return a.Div(b)
	}
	return a.IDiv(b)
}

func modOp(n *node) *tensor.Tensor {
	a, b := n.x(0), n.x(1)
	if n.int("fmod", 0) == 1 || a.DType().IsFloat() {
		return a.Fmod(b)
	}
	return a.Mod(b)
}

// bitShift shifts unsigned integers: the SHL and SHR primitives (logical
// for unsigned dtypes, 0 for a count of the width or more).
func bitShift(n *node) *tensor.Tensor {
	x, y := n.x(0), n.x(1)
	if n.err != nil {
		return x
	}
	if !FromIR(x.DType()).IsUnsigned() {
		n.fail("BitShift needs unsigned integers, got %s", x.DType())
		return x
	}
	switch n.str("direction", "") {
	case "LEFT":
		return x.Shl(y)
	case "RIGHT":
		return x.Shr(y)
	}
	n.fail("direction must be LEFT or RIGHT, got %q", n.str("direction", ""))
	return x
}

func variadic(f func(a, b *tensor.Tensor) *tensor.Tensor) func(n *node) *tensor.Tensor {
	return func(n *node) *tensor.Tensor {
		acc := n.x(0)
		for i := 1; i < len(n.in); i++ {
			acc = f(acc, n.x(i))
		}
		return acc
	}
}

func meanOp(n *node) *tensor.Tensor {
	s := variadic(func(a, b *tensor.Tensor) *tensor.Tensor { return a.Add(b) })(n)
	if n.err != nil {
		return s
	}
	return s.Div(n.ctx.Const(float64(len(n.in)), s.DType())).Cast(s.DType())
}

// maxOf and minOf select with where (tgc's Minimum negates, which wraps for
// unsigned types); NaN propagates as numpy's maximum does.
func maxOf(a, b *tensor.Tensor) *tensor.Tensor {
	r := a.Lt(b).Where(b, a)
	if a.DType().IsFloat() {
		r = b.Isnan().Where(b, r)
	}
	return r
}

func minOf(a, b *tensor.Tensor) *tensor.Tensor {
	r := b.Lt(a).Where(b, a)
	if a.DType().IsFloat() {
		r = b.Isnan().Where(b, r)
	}
	return r
}

func reduceI(f func(a, b int64) int64) func([]int64) int64 {
	return func(v []int64) int64 {
		acc := v[0]
		for _, x := range v[1:] {
			acc = f(acc, x)
		}
		return acc
	}
}

func reduceF(f func(a, b float64) float64) func([]float64) float64 {
	return func(v []float64) float64 {
		acc := v[0]
		for _, x := range v[1:] {
			acc = f(acc, x)
		}
		return acc
	}
}

func isInf(n *node) *tensor.Tensor {
	x := n.x(0)
	pos := x.Eq(n.ctx.Const(math.Inf(1), x.DType()))
	neg := x.Eq(n.ctx.Const(math.Inf(-1), x.DType()))
	switch {
	case n.int("detect_positive", 1) == 0 && n.int("detect_negative", 1) == 0:
		return pos.And(neg)
	case n.int("detect_positive", 1) == 0:
		return neg
	case n.int("detect_negative", 1) == 0:
		return pos
	}
	return pos.Or(neg)
}

// prelu multiplies negative inputs by slope, which broadcasts towards x
// (opsets before 7: a 1-D slope of x's channel count is per channel).
func prelu(n *node) *tensor.Tensor {
	x, s := n.x(0), n.x(1)
	if n.err != nil {
		return x
	}
	if s.Ndim() == 1 && x.Ndim() >= 2 && s.Shape()[0] == x.Shape()[1] && s.Shape()[0] != x.Shape()[x.Ndim()-1] {
		s = s.Reshape(append([]int{s.Shape()[0]}, ones(x.Ndim()-2)...)...)
	}
	zero := n.ctx.Const(0, x.DType())
	return x.Lt(zero).Where(x.Mul(s), x)
}

func elu(n *node) *tensor.Tensor {
	x := n.x(0)
	alpha := n.ctx.Const(n.float("alpha", 1), x.DType())
	one := n.ctx.Const(1, x.DType())
	return x.Lt(n.ctx.Const(0, x.DType())).Where(alpha.Mul(x.Exp().Sub(one)), x)
}

func selu(n *node) *tensor.Tensor {
	x := n.x(0)
	dt := x.DType()
	alpha := n.ctx.Const(n.float("alpha", 1.67326319217681884765625), dt)
	gamma := n.ctx.Const(n.float("gamma", 1.05070102214813232421875), dt)
	one := n.ctx.Const(1, dt)
	return x.Le(n.ctx.Const(0, dt)).Where(alpha.Mul(x.Exp().Sub(one)), x).Mul(gamma)
}

func hardSigmoid(n *node) *tensor.Tensor {
	x := n.x(0)
	dt := x.DType()
	y := x.Mul(n.ctx.Const(n.float("alpha", 0.2), dt)).Add(n.ctx.Const(n.float("beta", 0.5), dt))
	return minOf(maxOf(y, n.ctx.Const(0, dt)), n.ctx.Const(1, dt))
}

func thresholdedRelu(n *node) *tensor.Tensor {
	x := n.x(0)
	return x.Gt(n.ctx.Const(n.float("alpha", 1), x.DType())).Where(x, n.ctx.Const(0, x.DType()))
}

func shrink(n *node) *tensor.Tensor {
	x := n.x(0)
	dt := x.DType()
	lambd, bias := n.float("lambd", 0.5), n.float("bias", 0)
	lo := x.Lt(n.ctx.Const(-lambd, dt))
	hi := x.Gt(n.ctx.Const(lambd, dt))
	zero := n.ctx.Const(0, dt)
	return lo.Where(x.Add(n.ctx.Const(bias, dt)), hi.Where(x.Sub(n.ctx.Const(bias, dt)), zero))
}

// clip limits to [min, max]: attributes before opset 11, optional inputs
// from it.
func clip(n *node) *tensor.Tensor {
	x := n.x(0)
	if n.err != nil {
		return x
	}
	var lo, hi *tensor.Tensor
	if n.opset < 11 {
		if n.hasAttr("min") {
			lo = n.ctx.Const(n.float("min", 0), x.DType())
		}
		if n.hasAttr("max") {
			hi = n.ctx.Const(n.float("max", 0), x.DType())
		}
	} else {
		lo, hi = n.opt(1), n.opt(2)
	}
	if lo != nil {
		x = lo.Gt(x).Where(lo.Cast(x.DType()), x)
	}
	if hi != nil {
		x = hi.Lt(x).Where(hi.Cast(x.DType()), x)
	}
	return x
}

func castTarget(n *node) DataType {
	a := n.attr("to")
	if a == nil {
		n.fail("attribute to is missing")
		return Undefined
	}
	if a.GetType() == onnxpb.AttributeProto_STRING { // opset 1: the type's name as a string
		for i, t := range dataTypes {
			if t.onnx == string(a.GetS()) {
				return DataType(i)
			}
		}
		n.fail("unknown type %q", a.GetS())
		return Undefined
	}
	return DataType(n.int("to", 0))
}

func castOp(n *node) *tensor.Tensor {
	x := n.x(0)
	to := castTarget(n)
	if n.err != nil {
		return x
	}
	dt, err := to.IR()
	if err != nil {
		n.fail("%v", err)
		return x
	}
	return x.Cast(dt)
}

func hostCast(n *node, in []*Array) []*Array {
	to := castTarget(n)
	if n.err != nil || !to.Numeric() || in[0].Type == Uint64 || to == Uint64 {
		return nil
	}
	return []*Array{castArray(in[0], to)}
}

func hostWhere(n *node, in []*Array) []*Array {
	if len(in) < 3 || slices.Contains(in[:3], nil) {
		return nil
	}
	c, x, y := in[0], in[1], in[2]
	if x.Type != y.Type {
		return nil
	}
	shape, tabs, ok := broadcastTables(c.Shape, x.Shape, y.Shape)
	if !ok {
		return nil
	}
	r := NewArray(x.Type, shape)
	sz := x.Type.Size()
	for i := range r.Numel() {
		src, j := y, tabs[2][i]
		if c.Int(tabs[0][i]) != 0 {
			src, j = x, tabs[1][i]
		}
		copy(r.Data[i*sz:(i+1)*sz], src.Data[j*sz:(j+1)*sz])
	}
	return []*Array{r}
}

// dropout is the identity at inference (and with training_mode false or
// ratio 0); the optional mask output is all true.
func dropout(n *node) []*tensor.Tensor {
	x := n.x(0)
	if n.opset >= 12 && n.has(2) {
		training := n.array(2)
		if training != nil && training.Numel() == 1 && training.Int(0) != 0 {
			ratio := 0.5
			if n.has(1) {
				ratio = n.scalar(1)
			}
			if ratio != 0 {
				n.refuse(CatRandom, "in training mode it draws random numbers")
				return nil
			}
		}
	}
	// Before opset 7 is_test=0 asks for training, which inference runtimes
	// ignore as well.
	if len(n.proto.GetOutput()) < 2 {
		return []*tensor.Tensor{x}
	}
	if n.opset < 10 {
		return []*tensor.Tensor{x, n.ctx.Full(x.Shape(), 1, x.DType())}
	}
	return []*tensor.Tensor{x, n.ctx.Full(x.Shape(), 1, ir.Bool)}
}
