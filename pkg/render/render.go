// Package render turns kernel IR into device source text. One core walks
// the linearized kernel; a Lang supplies what differs between C-like
// dialects (types, signature, math functions). Output is stable: the same
// kernel always renders to the same bytes.
package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"tgc/pkg/ir"
)

// Lang is a C-like dialect.
type Lang struct {
	Name  string // device name, e.g. "CPU"
	Ext   string // source file extension
	Types map[ir.DType]string
	// Prelude renders what precedes a kernel, given the ops it uses.
	Prelude func(ops map[ir.Op]bool) string
	// Signature renders the function header and the buffer declarations.
	Signature func(k *ir.Kernel) string
	// OuterLoop renders the loop over the outermost global axis.
	OuterLoop func(a *ir.Axis) string
	FloatFns  map[ir.Op]string // unary math functions by op
	FloatSfx  string           // float literal suffix
	// SIMD renders the lanes of upcast reduces as GCC vector extensions
	// where they are isomorphic (c_vec.go), in vectors of VecWidth float32
	// lanes (0: ir.DefaultVecWidth).
	SIMD     bool
	VecWidth int

	// GPU dialects only (see gpu.go): the dialect's hooks, and the device
	// limits the launch geometry is chosen within.
	gpu    *gpuDialect
	Limits Limits
}

// Render renders one kernel in lang.
func Render(lang *Lang, k *ir.Kernel) string {
	r := &renderer{lang: lang, k: k, prog: ir.Linearize(k), names: map[*ir.Expr]string{}}
	return r.kernel()
}

type renderer struct {
	lang   *Lang
	k      *ir.Kernel
	prog   *ir.Program
	names  map[*ir.Expr]string
	sb     strings.Builder
	indent int
	nalu   int
	nval   int
	nacc   int
	// group, when set, renders the top-level reduces of a GPU kernel split
	// across the lanes of a work-group (gpu.go).
	group func(e *ir.Expr)
	// vecLoad, when set, renders e if it is a lane of a vector load (all
	// lanes at once, gpu_vec.go) and says whether it was.
	vecLoad func(e *ir.Expr) bool
	// vec, when set, is the kernel's SIMD plan (c_vec.go).
	vec *cVec
}

func (r *renderer) line(format string, args ...any) {
	r.sb.WriteString(strings.Repeat("  ", r.indent))
	fmt.Fprintf(&r.sb, format, args...)
	r.sb.WriteByte('\n')
}

func (r *renderer) kernel() string {
	if r.lang.gpu != nil {
		return r.gpuKernel()
	}
	ops := map[ir.Op]bool{}
	ir.Walk(r.k.Stores, func(e *ir.Expr) { ops[e.Op] = true })
	r.sb.WriteString(r.lang.Prelude(ops))
	if r.lang.SIMD {
		w := r.lang.VecWidth
		if w <= 0 {
			w = ir.DefaultVecWidth
		}
		if r.vec = planCVec(r.k, r.prog, w); r.vec != nil {
			r.sb.WriteString(cVecPrelude(w))
			if r.vec.narrow {
				r.sb.WriteString(cNarrowPrelude(w))
			}
		}
	}
	r.sb.WriteString(r.lang.Signature(r.k))
	r.indent = 1
	for i, a := range r.k.Global {
		if i == 0 {
			r.line("%s", r.lang.OuterLoop(a))
		} else {
			r.line("for (int %s = 0; %s < %s; %s++) {", a.Name(), a.Name(), r.trip(a), a.Name())
		}
		r.indent++
	}
	r.block(r.prog.Top)
	for _, s := range r.prog.Stores {
		if r.vec != nil && r.vec.stores[s] != nil {
			if vs := r.vec.stores[s]; vs.stores[0] == s {
				r.line("tg_store(&%s[%s], %s);", BufName(r.k, s.Arg.(int)), r.expr(s.Src[0]), r.vexpr(vs.val))
			}
			continue
		}
		r.line("%s[%s] = %s;", BufName(r.k, s.Arg.(int)), r.expr(s.Src[0]), r.expr(s.Src[1]))
	}
	for range r.k.Global {
		r.indent--
		r.line("}")
	}
	r.sb.WriteString("}\n")
	return r.sb.String()
}

// param is how the kernel reads vars[i].
func (r *renderer) param(i int) string {
	if r.lang.gpu != nil {
		return fmt.Sprintf("var%d", i)
	}
	return fmt.Sprintf("vars[%d]", i)
}

// trip is a loop's trip count: its size, or its symbolic bound read from
// the vars (a dimension that depends on a variable).
func (r *renderer) trip(a *ir.Axis) string {
	if a.Sym == nil {
		return fmt.Sprint(a.Size)
	}
	if a.Sym.Add == 0 {
		return r.param(a.Sym.Param)
	}
	return fmt.Sprintf("(%s%+d)", r.param(a.Sym.Param), a.Sym.Add)
}

// BufName is a buffer's parameter name: outputs are out0.., inputs in1...
func BufName(k *ir.Kernel, i int) string {
	if k.Bufs[i].Output {
		return fmt.Sprintf("out%d", i)
	}
	return fmt.Sprintf("in%d", i)
}

// named says whether an expression gets its own statement and variable.
func (r *renderer) named(e *ir.Expr) bool {
	switch e.Op {
	case ir.OpConst, ir.OpVar, ir.OpParam, ir.OpStore:
		return false
	case ir.OpLoad, ir.OpReduce, ir.OpRand:
		return true
	}
	return r.prog.Uses[e] > 1
}

func (r *renderer) block(b *ir.Block) {
	for _, e := range b.Nodes {
		if e.Op == ir.OpStore || !r.named(e) || (r.vec != nil && r.vec.skip[e]) {
			continue
		}
		if r.vecLoad != nil && e.Op == ir.OpLoad && r.vecLoad(e) {
			continue
		}
		if e.Op == ir.OpReduce {
			if r.group != nil && b == r.prog.Top {
				r.group(e)
			} else {
				r.reduce(e)
			}
			continue
		}
		var name string
		if e.Op == ir.OpLoad {
			name = fmt.Sprintf("val%d", r.nval)
			r.nval++
		} else {
			name = fmt.Sprintf("alu%d", r.nalu)
			r.nalu++
		}
		r.line("%s %s = %s;", r.typ(e.DType), name, r.expr(e))
		r.names[e] = name
	}
}

// reduce renders a reduce's group: one accumulator per member, one loop
// nest, the shared body, then each member's update.
func (r *renderer) reduce(e *ir.Expr) {
	if _, done := r.names[e]; done {
		return // rendered with its group
	}
	leader := r.prog.Leader[e]
	members := r.prog.Members[leader]
	accs := make([]string, len(members))
	for i, m := range members {
		if l, ok := r.vecLane(m); ok {
			if l.lane == 0 {
				l.run.acc = r.vec.fresh("vacc")
				init := "{0}"
				if m.Arg.(*ir.ReduceArg).Op == ir.OpMaxReduce {
					init = "{" + strings.Repeat("-INFINITY,", l.run.src.w-1) + "-INFINITY}"
				}
				r.line("%s %s = %s;", vtype(l.run.src), l.run.acc, init)
			}
			continue
		}
		accs[i] = fmt.Sprintf("acc%d", r.nacc)
		r.nacc++
		r.line("%s %s = %s;", r.typ(m.DType), accs[i], r.constant(m.DType, ir.ReduceIdentity(m.Arg.(*ir.ReduceArg).Op, m.DType)))
	}
	axes := leader.Arg.(*ir.ReduceArg).Axes
	for _, a := range axes {
		r.line("for (int %s = 0; %s < %s; %s++) {", a.Name(), a.Name(), r.trip(a), a.Name())
		r.indent++
	}
	r.block(r.prog.Inner[leader])
	var mark int
	if r.vec != nil {
		mark = r.vec.scope()
	}
	for i, m := range members {
		if l, ok := r.vecLane(m); ok {
			if l.lane == 0 && m.Arg.(*ir.ReduceArg).Op == ir.OpMaxReduce {
				// The scalar form's (v>acc)?v:acc, lane by lane (a NaN never wins).
				v := r.vec.fresh("vmax")
				r.line("%s %s = %s;", vtype(l.run.src), v, r.vexpr(l.run.src))
				w := l.run.src.w
				r.line("%s = tg_sel(tg_i%d, tg_f%d, (%s>%s), %s, %s);", l.run.acc, w, w, v, l.run.acc, v, l.run.acc)
			} else if l.lane == 0 {
				r.line("%s += %s;", l.run.acc, r.vexpr(l.run.src))
			}
			continue
		}
		v := r.expr(m.Src[0])
		if m.Arg.(*ir.ReduceArg).Op == ir.OpSum {
			r.line("%s += %s;", accs[i], v)
		} else {
			r.line("%s = ((%s>%s)?%s:%s);", accs[i], v, accs[i], v, accs[i])
		}
	}
	if r.vec != nil {
		r.vec.leave(mark)
	}
	for range axes {
		r.indent--
		r.line("}")
	}
	for i, m := range members {
		r.names[m] = accs[i]
		if l, ok := r.vecLane(m); ok {
			r.names[m] = fmt.Sprintf("%s[%d]", l.run.acc, l.lane)
		}
	}
}

func (r *renderer) vecLane(m *ir.Expr) (vlane, bool) {
	if r.vec == nil {
		return vlane{}, false
	}
	l, ok := r.vec.lane[m]
	return l, ok
}

func (r *renderer) typ(dt ir.DType) string { return r.lang.Types[dt] }

func (r *renderer) constant(dt ir.DType, v float64) string {
	if !dt.IsFloat() {
		return strconv.FormatInt(int64(v), 10)
	}
	switch {
	case math.IsInf(v, 1):
		return "INFINITY"
	case math.IsInf(v, -1):
		return "-INFINITY"
	case math.IsNaN(v):
		return "NAN"
	}
	s := strconv.FormatFloat(v, 'g', -1, 32)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s + r.lang.FloatSfx
}

var infixOps = map[ir.Op]string{
	ir.OpAdd: "+", ir.OpSub: "-", ir.OpMul: "*", ir.OpDiv: "/", ir.OpMod: "%",
	ir.OpCmpLt: "<", ir.OpCmpNe: "!=", ir.OpCmpEq: "==", ir.OpAnd: "&", ir.OpOr: "|", ir.OpXor: "^",
}

// expr renders an expression: a name if it has one, else inline.
func (r *renderer) expr(e *ir.Expr) string {
	if n, ok := r.names[e]; ok {
		return n
	}
	s := e.Src
	switch e.Op {
	case ir.OpConst:
		if e.DType.IsFloat() {
			return r.constant(e.DType, e.Arg.(float64))
		}
		return strconv.FormatInt(e.Arg.(int64), 10)
	case ir.OpVar:
		return e.Arg.(*ir.Axis).Name()
	case ir.OpParam:
		return r.param(e.ParamIndex())
	case ir.OpLoad:
		ld := fmt.Sprintf("%s[%s]", BufName(r.k, e.Arg.(int)), r.expr(s[0]))
		if g := r.lang.gpu; g != nil && g.load != nil {
			ld = g.load(e.DType, BufName(r.k, e.Arg.(int)), r.expr(s[0]))
		}
		if len(s) > 1 {
			return fmt.Sprintf("(%s?%s:%s)", r.expr(s[1]), ld, r.constant(e.DType, 0))
		}
		return ld
	case ir.OpRand:
		return fmt.Sprintf("tg_rand(%s, %s, %s)", r.expr(s[1]), r.expr(s[2]), r.expr(s[0]))
	case ir.OpCast:
		if g := r.lang.gpu; g != nil && g.cast != nil {
			if c := g.cast(e.DType, s[0].DType, r.expr(s[0])); c != "" {
				return c
			}
		}
		return fmt.Sprintf("((%s)%s)", r.typ(e.DType), r.expr(s[0]))
	case ir.OpNeg:
		return "(-" + r.expr(s[0]) + ")"
	case ir.OpNot:
		return "(!" + r.expr(s[0]) + ")"
	case ir.OpRecip:
		return fmt.Sprintf("(%s/%s)", r.constant(e.DType, 1), r.expr(s[0]))
	case ir.OpMax:
		a, b := r.expr(s[0]), r.expr(s[1])
		return fmt.Sprintf("((%s>%s)?%s:%s)", a, b, a, b)
	case ir.OpWhere:
		return fmt.Sprintf("(%s?%s:%s)", r.expr(s[0]), r.expr(s[1]), r.expr(s[2]))
	case ir.OpTrunc:
		if !e.DType.IsFloat() {
			return r.expr(s[0])
		}
	case ir.OpAdd:
		// x + y*(-c) reads better as x - y*c
		if m := s[1]; !e.DType.IsFloat() && m.Op == ir.OpMul && m.Src[1].IsConst() {
			if c, _ := m.Src[1].ConstInt(); c < 0 {
				if c == -1 {
					return fmt.Sprintf("(%s-%s)", r.expr(s[0]), r.expr(m.Src[0]))
				}
				return fmt.Sprintf("(%s-(%s*%d))", r.expr(s[0]), r.expr(m.Src[0]), -c)
			}
		}
		if c, ok := s[1].ConstInt(); ok && c < 0 {
			return fmt.Sprintf("(%s-%d)", r.expr(s[0]), -c)
		}
	case ir.OpDiv, ir.OpMod:
		if !e.DType.IsFloat() && !s[1].IsConst() { // C traps on x/0; tgc defines it as 0
			return fmt.Sprintf("((%s==0)?0:(%s%s%s))", r.expr(s[1]), r.expr(s[0]), infixOps[e.Op], r.expr(s[1]))
		}
		if e.Op == ir.OpMod && e.DType.IsFloat() {
			fn := "fmodf"
			if r.lang.gpu != nil {
				fn = r.lang.gpu.fmod
			}
			return fmt.Sprintf("%s(%s, %s)", fn, r.expr(s[0]), r.expr(s[1]))
		}
	}
	if fn, ok := r.lang.FloatFns[e.Op]; ok {
		return fmt.Sprintf("%s(%s)", fn, r.expr(s[0]))
	}
	if op, ok := infixOps[e.Op]; ok {
		return "(" + r.expr(s[0]) + op + r.expr(s[1]) + ")"
	}
	panic(fmt.Sprintf("render: no rendering for %s", e.Op))
}
