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
	// spell is the dialect's column of the op table (ir.OpInfo); the
	// columns left empty are C's.
	spell func(o *ir.OpInfo) string
	// Unsigned spells the unsigned ints of 32 and 64 bits, in which helper
	// functions compute what may overflow (signed overflow is undefined in
	// every C dialect).
	Unsigned [2]string
	// FnQual qualifies the helper functions a kernel calls (tg_shl_int32...).
	FnQual   string
	FloatSfx string // float literal suffix
	// SIMD prints a kernel's SIMD plan (ir.SIMD) as GCC vector
	// extensions (c_vec.go).
	SIMD bool

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
	// lanes at once, gpu_vec.go) and says whether it was; vecStores maps
	// each store of a vector store to its lanes.
	vecLoad   func(e *ir.Expr) bool
	vecStores map[*ir.Expr][ir.Vec4Width]*ir.Expr
	// vec, when set, prints the kernel's SIMD plan (c_vec.go).
	vec *cVec
	// helpers are the definitions of the helper functions the kernel calls,
	// in first-use order (helperNames dedupes them).
	helpers     []string
	helperNames map[string]bool
}

// need records a helper function's definition; it is emitted once, before
// the kernel, guarded (kernels share translation units).
func (r *renderer) need(name, def string) {
	if r.helperNames == nil {
		r.helperNames = map[string]bool{}
	}
	if r.helperNames[name] {
		return
	}
	r.helperNames[name] = true
	guard := strings.ToUpper(name)
	r.helpers = append(r.helpers, fmt.Sprintf("#ifndef %s\n#define %s\n%s\n#endif\n", guard, guard, def))
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
	head := r.lang.Prelude(ops)
	vecPrelude := ""
	if r.lang.SIMD {
		if r.vec = newCVec(r.k); r.vec != nil {
			vecPrelude = cVecPrelude(r.k.SIMD.Width)
		}
	}
	r.sb.WriteString(r.lang.Signature(r.k))
	r.indent = 1
	for i, a := range r.k.Global {
		if i == 0 {
			r.line("%s", r.lang.OuterLoop(a))
		} else {
			r.line("for (int %s = 0; %s < %d; %s++) {", a.Name(), a.Name(), a.Size, a.Name())
		}
		r.indent++
	}
	r.block(r.prog.Top)
	for _, s := range r.prog.Stores {
		if run := r.vecStore(s); run != nil {
			if run[0] == s {
				r.line("tg_store(&%s[%s], %s);", BufName(r.k, s.Arg.(int)), r.expr(s.Src[0]), r.vexpr(ir.LanesOf(run, 1)))
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
	return head + strings.Join(r.helpers, "") + vecPrelude + r.sb.String()
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
				src := r.vec.src(l.run)
				r.vec.acc[l.run] = r.vec.fresh("vacc")
				init := "{0}"
				if m.Arg.(*ir.ReduceArg).Op == ir.OpMaxReduce {
					init = "{" + strings.Repeat("-INFINITY,", src.W-1) + "-INFINITY}"
				}
				r.line("%s %s = %s;", vtype(src), r.vec.acc[l.run], init)
			}
			continue
		}
		accs[i] = fmt.Sprintf("acc%d", r.nacc)
		r.nacc++
		r.line("%s %s = %s;", r.typ(m.DType), accs[i], r.constant(m.DType, ir.ReduceIdentity(m.Arg.(*ir.ReduceArg).Op, m.DType)))
	}
	axes := leader.Arg.(*ir.ReduceArg).Axes
	for _, a := range axes {
		r.line("for (int %s = 0; %s < %d; %s++) {", a.Name(), a.Name(), a.Size, a.Name())
		r.indent++
	}
	r.block(r.prog.Inner[leader])
	var mark int
	if r.vec != nil {
		mark = r.vec.scope()
	}
	for i, m := range members {
		if l, ok := r.vecLane(m); ok {
			src, acc := r.vec.src(l.run), r.vec.acc[l.run]
			if l.lane == 0 && m.Arg.(*ir.ReduceArg).Op == ir.OpMaxReduce {
				// The scalar form's (v>acc)?v:acc, lane by lane (a NaN never wins).
				v := r.vec.fresh("vmax")
				r.line("%s %s = %s;", vtype(src), v, r.vexpr(src))
				w := src.W
				r.line("%s = tg_sel(tg_i%d, tg_f%d, (%s>%s), %s, %s);", acc, w, w, v, acc, v, acc)
			} else if l.lane == 0 {
				r.line("%s += %s;", acc, r.vexpr(src))
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
			r.names[m] = fmt.Sprintf("%s[%d]", r.vec.acc[l.run], l.lane)
		}
	}
}

func (r *renderer) vecLane(m *ir.Expr) (vlane, bool) {
	if r.vec == nil {
		return vlane{}, false
	}
	return r.vec.lane(m)
}

// vecStore is the run of a store written as a vector (nil: scalar).
func (r *renderer) vecStore(s *ir.Expr) []*ir.Expr {
	if r.vec == nil {
		return nil
	}
	return r.vec.storeRun(s)
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
		if r.lang.gpu != nil {
			return fmt.Sprintf("var%d", e.Arg.(int))
		}
		return fmt.Sprintf("vars[%d]", e.Arg.(int))
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
		if !e.DType.IsFloat() { // integer division: C's / and %; C traps on x/0, tgc defines it as 0
			op := map[ir.Op]string{ir.OpDiv: "/", ir.OpMod: "%"}[e.Op]
			if !s[1].IsConst() {
				return fmt.Sprintf("((%s==0)?0:(%s%s%s))", r.expr(s[1]), r.expr(s[0]), op, r.expr(s[1]))
			}
			return "(" + r.expr(s[0]) + op + r.expr(s[1]) + ")"
		}
	}
	args := make([]string, len(s))
	for i, x := range s {
		args[i] = r.expr(x)
	}
	return r.spellOp(e, args)
}

// spellOp writes an ALU op in the dialect from the op table, its operands
// already rendered.
func (r *renderer) spellOp(e *ir.Expr, args []string) string {
	info := e.Op.Info()
	t := r.lang.spell(info)
	if t == "" {
		t = info.C
	}
	if t == "" {
		panic(fmt.Sprintf("render: no rendering for %s", e.Op))
	}
	fn := ""
	if info.Helper != "" {
		dt := e.Src[0].DType
		fn = "tg_" + strings.ToLower(info.Name) + "_" + dt.String()
		u := r.lang.Unsigned[0]
		if dt.Size() > 4 {
			u = r.lang.Unsigned[1]
		}
		typ := r.typ(dt)
		body := expand(info.Helper, nil, map[byte]string{'T': typ, 'U': u, 'W': strconv.Itoa(dt.Bits())})
		r.need(fn, fmt.Sprintf("%s %s %s(%s a, %s b) { return %s; }", r.lang.FnQual, typ, fn, typ, typ, body))
	}
	return expand(t, args, map[byte]string{'F': fn})
}

// expand fills in a template of the op table: $0 $1 $2 are args, $X the
// variable X.
func expand(t string, args []string, vars map[byte]string) string {
	var sb strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c != '$' || i+1 == len(t) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch n := t[i]; {
		case n >= '0' && n <= '9' && int(n-'0') < len(args):
			sb.WriteString(args[n-'0'])
		default:
			v, ok := vars[n]
			if !ok {
				panic(fmt.Sprintf("render: template %q uses $%c", t, n))
			}
			sb.WriteString(v)
		}
	}
	return sb.String()
}
