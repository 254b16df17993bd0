package ir

// FactorReduces takes a block's scale out of its inner loop. After
// split_reduces a matmul with a quantized weight sums over blocks o and
// the elements i of a block:
//
//	sum over o, i of x(o,i) * (q(o,i) * d(o))                (Q8_0)
//	sum over o, i of x(o,i) * (d(o)*sc(o)*q(o,i) - m(o))     (Q4_K)
//
// and pays the scale's conversion and multiply (Q4_K: the 6-bit scale
// extraction too, where the C compiler does not hoist it) per element.
// Written as
//
//	sum over o of d(o) * (sum over i of x*q)
//	sum over o of d(o)*sc(o) * (sum over i of x*q) - m(o) * (sum over i of x)
//
// the inner loop is a plain dot product of the widened bytes (llama.cpp's
// order: a block's integer dot product, then its scale). The body of a
// float SUM over two or more loops is expanded into a sum of products
// (at most four terms); each term's factors that do not depend on the
// innermost loop form its coefficient, the others a nested SUM over that
// loop alone. It runs after the opts pass, so an UNROLL's lanes stay
// lanes of both the outer and the inner accumulators (no horizontal sum
// per block), and only where a coefficient saves work per element. The
// order of the float sum changes, as any blocked reduction's does.
func FactorReduces(k *Kernel) *Kernel {
	nk, _ := factorReduces(k)
	return nk
}

// factorable says whether FactorReduces would nest a reduce of k (the
// heuristic leaves registers for the inner accumulators).
func factorable(k *Kernel) bool {
	_, n := factorReduces(k)
	return n > 0
}

// factorReduces factors the reduces of k's groups whose members all
// factor. A group is one loop nest (Linearize groups reduces by their
// first axis), so a group factored in part would put the members left
// whole into the factored ones' outer loops, without their inner loop (a
// padded conv's lanes past the image, 0*w, factor; the others do not).
func factorReduces(k *Kernel) (*Kernel, int) {
	refused, factored := map[*Axis]bool{}, map[*Axis]bool{}
	nk, n := factorGroups(k, nil, refused, factored)
	for key := range factored {
		if refused[key] {
			return factorGroups(k, refused, map[*Axis]bool{}, map[*Axis]bool{})
		}
	}
	return nk, n
}

// factorGroups factors each reduce of k not in a group of skip that
// factors, noting its group's key in factored or, where it does not
// factor, in refused.
func factorGroups(k *Kernel, skip, refused, factored map[*Axis]bool) (*Kernel, int) {
	nk := *k
	nk.B = NewBuilder()
	nk.SIMD, nk.Vec4 = nil, nil
	b := nk.B
	f := &factorer{b: b, args: map[*ReduceArg][2]*ReduceArg{}, dep: map[*Expr]bool{}, atoms: map[*Expr]bool{}}
	memo := map[*Expr]*Expr{}
	n := 0
	vals := PrologueValues(k)
	var g func(e *Expr) *Expr
	g = func(e *Expr) *Expr {
		if e.Op != OpReduce {
			return nil
		}
		arg := e.Arg.(*ReduceArg)
		body := b.Rebuild(e.Src[0], g, memo)
		for _, v := range vals {
			if nv, ok := memo[v]; ok {
				f.atoms[nv] = true
			}
		}
		key := groupKey(e)
		if !skip[key] {
			if r := f.factor(arg, body); r != nil {
				factored[key] = true
				n++
				return r
			}
			refused[key] = true
		}
		return b.Reduce(arg, body)
	}
	nk.Stores = make([]*Expr, len(k.Stores))
	for i, s := range k.Stores {
		nk.Stores[i] = b.Rebuild(s, g, memo)
	}
	return &nk, n
}

// maxFactorTerms bounds the expansion of a body into a sum of products.
const maxFactorTerms = 4

type factorer struct {
	b     *Builder
	inner *Axis
	// args: each reduce's outer and inner ReduceArg, shared by the members
	// of a group so that they stay groups (one loop nest each).
	args map[*ReduceArg][2]*ReduceArg
	dep  map[*Expr]bool // depends on inner (reset per axis)
	// atoms: a prologue's values (PrologueValues), one factor each: the
	// reduce they read is computed before the loops, the rest of them
	// once per launch by the prologue.
	atoms map[*Expr]bool
}

// term is coef*rest; nil stands for 1.
type factorTerm struct{ coef, rest *Expr }

func (f *factorer) factor(arg *ReduceArg, body *Expr) *Expr {
	n := len(arg.Axes)
	if arg.Op != OpSum || !body.DType.IsFloat() || n < 2 {
		return nil
	}
	for _, a := range arg.Axes {
		if a.Sym != nil {
			return nil
		}
	}
	nested := false
	WalkPre([]*Expr{body}, func(e *Expr) bool {
		nested = nested || e.Op == OpReduce
		return !nested && !f.atoms[e]
	})
	if nested {
		return nil
	}
	if f.inner != arg.Axes[n-1] {
		f.inner, f.dep = arg.Axes[n-1], map[*Expr]bool{}
	}
	terms, ok := f.expand(body)
	if !ok {
		return nil
	}
	// Merge terms with the same rest; every rest must use the inner loop.
	var merged []factorTerm
	worth := false
	for _, t := range terms {
		if t.rest == nil {
			return nil // a term constant over the inner loop: leave it
		}
		found := false
		for i := range merged {
			if merged[i].rest == t.rest {
				merged[i].coef = f.b.Add(f.one(merged[i].coef, t.rest.DType), f.one(t.coef, t.rest.DType))
				found = true
			}
		}
		if !found {
			merged = append(merged, t)
		}
		worth = worth || t.coef != nil
	}
	if !worth {
		return nil
	}
	for _, t := range merged {
		for _, a := range arg.Axes[:n-1] {
			if !usesVar(t.rest, a) {
				// a nested sum the outer loop does not change: Linearize
				// would hoist it out of that loop, away from the others
				// of its group ((y - x).sum() with y broadcast over a row)
				return nil
			}
		}
	}
	pair, ok := f.args[arg]
	if !ok {
		pair = [2]*ReduceArg{{Op: OpSum, Axes: arg.Axes[: n-1 : n-1]}, {Op: OpSum, Axes: []*Axis{arg.Axes[n-1]}}}
		f.args[arg] = pair
	}
	var sum *Expr
	for _, t := range merged {
		v := f.b.Reduce(pair[1], t.rest)
		if t.coef != nil {
			v = f.b.Mul(t.coef, v)
		}
		if sum == nil {
			sum = v
		} else {
			sum = f.b.Add(sum, v)
		}
	}
	return f.b.Reduce(pair[0], sum)
}

func (f *factorer) one(e *Expr, dt DType) *Expr {
	if e == nil {
		return f.b.Const(dt, 1)
	}
	return e
}

func (f *factorer) uses(e *Expr) bool {
	if d, ok := f.dep[e]; ok {
		return d
	}
	d := e.Op == OpVar && e.Arg.(*Axis) == f.inner
	for _, s := range e.Src {
		d = d || f.uses(s)
	}
	f.dep[e] = d
	return d
}

// expand writes e as a sum of coef*rest terms, coef free of the inner
// loop; not ok when that takes more than maxFactorTerms terms.
func (f *factorer) expand(e *Expr) ([]factorTerm, bool) {
	if !f.uses(e) {
		return []factorTerm{{coef: e}}, true
	}
	atom := []factorTerm{{rest: e}}
	if !e.DType.IsFloat() || f.atoms[e] {
		return atom, true
	}
	switch e.Op {
	case OpAdd, OpSub:
		ta, ok1 := f.expand(e.Src[0])
		tb, ok2 := f.expand(e.Src[1])
		if !ok1 || !ok2 || len(ta)+len(tb) > maxFactorTerms {
			return atom, true
		}
		if e.Op == OpSub {
			for i := range tb {
				tb[i].coef = f.b.Alu(OpNeg, f.one(tb[i].coef, e.DType))
			}
		}
		return append(ta, tb...), true
	case OpNeg:
		ta, ok := f.expand(e.Src[0])
		if !ok {
			return atom, true
		}
		for i := range ta {
			ta[i].coef = f.b.Alu(OpNeg, f.one(ta[i].coef, e.DType))
		}
		return ta, true
	case OpMul:
		ta, ok1 := f.expand(e.Src[0])
		tb, ok2 := f.expand(e.Src[1])
		if !ok1 || !ok2 || len(ta)*len(tb) > maxFactorTerms {
			return atom, true
		}
		var out []factorTerm
		for _, x := range ta {
			for _, y := range tb {
				out = append(out, factorTerm{coef: f.mul(x.coef, y.coef), rest: f.mul(x.rest, y.rest)})
			}
		}
		return out, true
	}
	return atom, true
}

func (f *factorer) mul(x, y *Expr) *Expr {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	return f.b.Mul(x, y)
}
