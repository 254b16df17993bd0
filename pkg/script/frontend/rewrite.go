// Package frontend translates the Python that .tg scripts are written in
// into Starlark that go.starlark.net parses, and rewrites the parsed
// syntax tree so that classes, decorators, comparisons, slices and
// conditions reach the builtins that give them their meaning. Positions
// always point at the original text.
package frontend

import (
	"fmt"
	"strconv"
	"strings"

	"go.starlark.net/syntax"
)

// The AST rewriter finishes what the text translation started and turns the
// Python semantics that Starlark cannot express through its Value
// interfaces into calls of hidden builtins, keeping the original positions
// on the new nodes:
//
//	def M(__tgclass__=(B,)): body
//	               ->  M__tg__x = __tgunset__ ...; body with its names renamed M__tg__x;
//	                   M = __tgclass__("M", (B,), {"x": M__tg__x, ...})
//	__tgdeco__(d); def f(...)
//	               ->  def f(...); f = d(f)
//	super()        ->  __tgsuper__(M, self)      (in a method of M)
//	x < y          ->  __cmp__("<", x, y)        (a bool tensor for tensors)
//	x is y         ->  __cmp__("is", x, y)
//	x[a:b:c]       ->  __getslice__(x, a, b, c)
//	if c: / while c: / not c / c and d / x if c else y / [.. if c]
//	               ->  __truth__(c)              (an error for tensors)
//
// A class body runs in the enclosing scope with its names renamed, so its
// methods see the module's names as in Python, not the class's. Starlark's
// Compare must return a Go bool and Truth cannot fail, so comparisons and
// conditions cannot be methods of the tensor value. The position of each
// call moves to the callee's name (x.dot(y) reports the column of "dot"),
// so errors point at the function that failed.

// The hidden builtins of the AST rewrite; the session binds them.
const (
	Cmp       = "__cmp__"      // Cmp(op, x, y): a comparison
	GetSlice  = "__getslice__" // GetSlice(x, lo, hi, step): x[lo:hi:step]
	Truth     = "__truth__"    // Truth(c): c, or an error for a tensor
	MakeSlice = "__slice__"    // MakeSlice(start, stop, step): a slice value
	FStr      = "__fstr__"     // FStr(template, *values): an f-string
	Unset     = "__tgunset__"  // the value of a class member not (yet) bound
	Super     = "__tgsuper__"  // Super(class, self): super()
	// ClassMarker (translate.go) is also the builtin that makes a class:
	// __tgclass__(name, bases, members).
)

// memberSep joins a class and a member name in the renamed class body:
// Model__tg__forward. DisplayName turns it back into Model.forward.
const memberSep = "__tg__"

// DisplayName is the name a user wrote for a function or class that the
// rewrite renamed: Model__tg__forward is Model.forward.
func DisplayName(name string) string { return strings.ReplaceAll(name, memberSep, ".") }

// FileOptions is the .tg dialect of Starlark: top-level control flow,
// global reassignment, while loops, sets and recursion (Starlark stops a
// recursion 100000 calls deep with an error).
var FileOptions = &syntax.FileOptions{
	Set:             true,
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
	Recursion:       true,
}

// rewriter rewrites one file or expression.
type rewriter struct {
	tr  *Translation
	err *Error
}

// Rewrite rewrites a file parsed from tr.Text in place.
func (tr *Translation) Rewrite(f *syntax.File) error {
	r := &rewriter{tr: tr}
	f.Stmts = r.stmts(f.Stmts, nil)
	if r.err != nil {
		return r.err
	}
	return nil
}

// RewriteExpr rewrites an expression parsed from tr.Text.
func (tr *Translation) RewriteExpr(e syntax.Expr) (syntax.Expr, error) {
	r := &rewriter{tr: tr}
	e = r.expr(e)
	if r.err != nil {
		return nil, r.err
	}
	return e, nil
}

// fail records the first error at p (a position of the translated text).
func (r *rewriter) fail(p syntax.Position, format string, args ...any) {
	if r.err != nil {
		return
	}
	line, col := p.Line, p.Col
	if r.tr != nil {
		line, col = r.tr.Map.Pos(line, col)
	}
	r.err = &Error{Line: int(line), Col: int(col), Msg: fmt.Sprintf(format, args...)}
}

// loop is what the statements being rewritten are nested in.
type loop struct {
	with bool // a with block (a one-iteration for loop)
	up   *loop
}

// stmts rewrites a statement list: decorators fold into the def or class
// that follows them, classes expand.
func (r *rewriter) stmts(list []syntax.Stmt, in *loop) []syntax.Stmt {
	var out []syntax.Stmt
	var decos []*syntax.CallExpr
	for _, s := range list {
		if d := decorator(s); d != nil {
			decos = append(decos, d)
			continue
		}
		def, isDef := s.(*syntax.DefStmt)
		if len(decos) > 0 && !isDef {
			r.fail(decos[0].Lparen, "a decorator must be followed by def or class")
			return out
		}
		switch {
		case isDef && isClass(def):
			out = append(out, r.class(def, in)...)
		case isDef:
			r.stmt(def, in)
			out = append(out, def)
		default:
			r.stmt(s, in)
			out = append(out, s)
		}
		if isDef && len(decos) > 0 {
			out = append(out, r.decorate(def.Name, decos))
		}
		decos = nil
	}
	if len(decos) > 0 {
		r.fail(decos[0].Lparen, "a decorator must be followed by def or class")
	}
	return out
}

// decorator returns the call of a decorator line, or nil.
func decorator(s syntax.Stmt) *syntax.CallExpr {
	if es, ok := s.(*syntax.ExprStmt); ok {
		if c, ok := es.X.(*syntax.CallExpr); ok && isIdent(c.Fn, Deco) && len(c.Args) == 1 {
			return c
		}
	}
	return nil
}

func isIdent(e syntax.Expr, name string) bool {
	id, ok := e.(*syntax.Ident)
	return ok && id.Name == name
}

// decorate is name = d1(d2(... dn(name))) for decorators d1..dn (top first).
func (r *rewriter) decorate(name *syntax.Ident, decos []*syntax.CallExpr) syntax.Stmt {
	var v syntax.Expr = &syntax.Ident{NamePos: name.NamePos, Name: name.Name}
	for i := len(decos) - 1; i >= 0; i-- {
		d := r.expr(decos[i].Args[0])
		start, end := d.Span()
		v = &syntax.CallExpr{Fn: d, Lparen: start, Args: []syntax.Expr{v}, Rparen: end}
	}
	return &syntax.AssignStmt{Op: syntax.EQ, OpPos: name.NamePos, LHS: &syntax.Ident{NamePos: name.NamePos, Name: name.Name}, RHS: v}
}

func (r *rewriter) stmt(s syntax.Stmt, in *loop) {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.LHS = r.target(s.LHS)
		s.RHS = r.expr(s.RHS)
	case *syntax.DefStmt:
		r.params(s.Params)
		s.Body = r.stmts(s.Body, nil)
	case *syntax.ExprStmt:
		s.X = r.expr(s.X)
	case *syntax.IfStmt:
		s.Cond = r.truth(s.Cond)
		s.True = r.stmts(s.True, in)
		s.False = r.stmts(s.False, in)
	case *syntax.ForStmt:
		s.Vars = r.target(s.Vars)
		s.X = r.expr(s.X)
		s.Body = r.stmts(s.Body, &loop{with: isWith(s), up: in})
	case *syntax.WhileStmt:
		s.Cond = r.truth(s.Cond)
		s.Body = r.stmts(s.Body, &loop{up: in})
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = r.expr(s.Result)
		}
	case *syntax.BranchStmt:
		if (s.Token == syntax.BREAK || s.Token == syntax.CONTINUE) && in != nil && in.with {
			for l := in; l != nil; l = l.up {
				if !l.with {
					r.fail(s.TokenPos, "%s inside a with block is not supported: set a flag, leave the with block, then %s", s.Token, s.Token)
					return
				}
			}
			r.fail(s.TokenPos, "%s is outside a loop", s.Token)
		}
	}
}

// isWith reports whether a for loop is a translated with block.
func isWith(f *syntax.ForStmt) bool {
	c, ok := f.X.(*syntax.CallExpr)
	return ok && isIdent(c.Fn, With)
}

// isClass reports whether a def is a translated class.
func isClass(d *syntax.DefStmt) bool {
	if len(d.Params) != 1 {
		return false
	}
	b, ok := d.Params[0].(*syntax.BinaryExpr)
	return ok && b.Op == syntax.EQ && isIdent(b.X, ClassMarker)
}

// class expands a translated class definition.
func (r *rewriter) class(def *syntax.DefStmt, in *loop) []syntax.Stmt {
	binding := def.Name.Name
	pos := def.Def
	bases := r.expr(def.Params[0].(*syntax.BinaryExpr).Y)

	// The names the class body binds, in order of first binding.
	var names []string
	seen := map[string]bool{}
	bind := func(id *syntax.Ident) {
		if !seen[id.Name] {
			seen[id.Name] = true
			names = append(names, id.Name)
		}
	}
	var collect func(list []syntax.Stmt)
	collect = func(list []syntax.Stmt) {
		for _, s := range list {
			switch s := s.(type) {
			case *syntax.AssignStmt:
				targets(s.LHS, bind)
			case *syntax.DefStmt:
				bind(s.Name)
			case *syntax.ForStmt:
				targets(s.Vars, bind)
				collect(s.Body)
			case *syntax.WhileStmt:
				collect(s.Body)
			case *syntax.IfStmt:
				collect(s.True)
				collect(s.False)
			}
		}
	}
	collect(def.Body)
	renamed := map[string]string{}
	for _, n := range names {
		renamed[n] = binding + memberSep + n
	}
	rn := &renamer{names: renamed}
	for _, s := range def.Body {
		rn.stmt(s)
	}
	// super() in the methods
	for _, s := range def.Body {
		if m, ok := s.(*syntax.DefStmt); ok && !isClass(m) {
			r.supers(m, binding)
		}
	}

	var out []syntax.Stmt
	for _, n := range names {
		out = append(out, &syntax.AssignStmt{Op: syntax.EQ, OpPos: pos,
			LHS: &syntax.Ident{NamePos: pos, Name: renamed[n]}, RHS: &syntax.Ident{NamePos: pos, Name: Unset}})
	}
	out = append(out, r.stmts(def.Body, in)...)
	members := &syntax.DictExpr{Lbrace: pos, Rbrace: pos}
	for _, n := range names {
		members.List = append(members.List, &syntax.DictEntry{
			Key:   &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: strconv.Quote(n), Value: n},
			Colon: pos, Value: &syntax.Ident{NamePos: pos, Name: renamed[n]}})
	}
	name := DisplayName(binding)
	mk := callExpr(ClassMarker, def.Name.NamePos, def.Name.NamePos,
		&syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: strconv.Quote(name), Value: name}, bases, members)
	out = append(out, &syntax.AssignStmt{Op: syntax.EQ, OpPos: pos, LHS: &syntax.Ident{NamePos: def.Name.NamePos, Name: binding}, RHS: mk})
	return out
}

// targets calls bind for each name an assignment target binds.
func targets(e syntax.Expr, bind func(*syntax.Ident)) {
	switch e := e.(type) {
	case *syntax.Ident:
		bind(e)
	case *syntax.ParenExpr:
		targets(e.X, bind)
	case *syntax.TupleExpr:
		for _, x := range e.List {
			targets(x, bind)
		}
	case *syntax.ListExpr:
		for _, x := range e.List {
			targets(x, bind)
		}
	}
}

// supers turns super() in a method of class binding into
// __tgsuper__(binding, self).
func (r *rewriter) supers(m *syntax.DefStmt, binding string) {
	var self syntax.Expr
	if len(m.Params) > 0 {
		if id, ok := m.Params[0].(*syntax.Ident); ok {
			self = id
		}
	}
	syntax.Walk(m, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || !isIdent(c.Fn, "super") || len(c.Args) != 0 {
			return true
		}
		if self == nil {
			r.fail(c.Lparen, "super() needs the method's first parameter (self)")
			return false
		}
		pos := c.Fn.(*syntax.Ident).NamePos
		c.Fn = &syntax.Ident{NamePos: pos, Name: Super}
		c.Args = []syntax.Expr{&syntax.Ident{NamePos: pos, Name: binding}, &syntax.Ident{NamePos: pos, Name: self.(*syntax.Ident).Name}}
		return true
	})
}

// renamer renames the class-level names of a class body: in its
// statements, parameter defaults and decorators, but not in function or
// lambda bodies, which see the enclosing scope as in Python.
type renamer struct{ names map[string]string }

func (rn *renamer) id(id *syntax.Ident) {
	if n, ok := rn.names[id.Name]; ok {
		id.Name = n
	}
}

func (rn *renamer) stmts(list []syntax.Stmt) {
	for _, s := range list {
		rn.stmt(s)
	}
}

func (rn *renamer) stmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		rn.expr(s.LHS)
		rn.expr(s.RHS)
	case *syntax.DefStmt:
		rn.id(s.Name)
		for _, p := range s.Params {
			if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				rn.expr(b.Y)
			}
		}
	case *syntax.ExprStmt:
		rn.expr(s.X)
	case *syntax.IfStmt:
		rn.expr(s.Cond)
		rn.stmts(s.True)
		rn.stmts(s.False)
	case *syntax.ForStmt:
		rn.expr(s.Vars)
		rn.expr(s.X)
		rn.stmts(s.Body)
	case *syntax.WhileStmt:
		rn.expr(s.Cond)
		rn.stmts(s.Body)
	case *syntax.ReturnStmt:
		rn.expr(s.Result)
	}
}

func (rn *renamer) expr(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.Ident:
		rn.id(e)
	case *syntax.ParenExpr:
		rn.expr(e.X)
	case *syntax.CallExpr:
		rn.expr(e.Fn)
		for _, a := range e.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				rn.expr(b.Y) // name=value: the name is a keyword
				continue
			}
			rn.expr(a)
		}
	case *syntax.DotExpr:
		rn.expr(e.X)
	case *syntax.IndexExpr:
		rn.expr(e.X)
		rn.expr(e.Y)
	case *syntax.SliceExpr:
		rn.expr(e.X)
		rn.expr(e.Lo)
		rn.expr(e.Hi)
		rn.expr(e.Step)
	case *syntax.BinaryExpr:
		rn.expr(e.X)
		rn.expr(e.Y)
	case *syntax.UnaryExpr:
		rn.expr(e.X)
	case *syntax.CondExpr:
		rn.expr(e.Cond)
		rn.expr(e.True)
		rn.expr(e.False)
	case *syntax.ListExpr:
		for _, x := range e.List {
			rn.expr(x)
		}
	case *syntax.TupleExpr:
		for _, x := range e.List {
			rn.expr(x)
		}
	case *syntax.DictExpr:
		for _, x := range e.List {
			rn.expr(x)
		}
	case *syntax.DictEntry:
		rn.expr(e.Key)
		rn.expr(e.Value)
	case *syntax.Comprehension:
		// Only the first iterable is evaluated in the class scope.
		if len(e.Clauses) > 0 {
			if f, ok := e.Clauses[0].(*syntax.ForClause); ok {
				rn.expr(f.X)
			}
		}
	case *syntax.LambdaExpr:
		for _, p := range e.Params {
			if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				rn.expr(b.Y)
			}
		}
	}
}

// target rewrites the expressions evaluated inside an assignment target
// (x[i] = v evaluates x and i) but leaves the target itself alone.
func (r *rewriter) target(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X = r.expr(e.X)
		e.Y = r.expr(e.Y)
	case *syntax.DotExpr:
		e.X = r.expr(e.X)
	case *syntax.ParenExpr:
		e.X = r.target(e.X)
	case *syntax.TupleExpr:
		for i, x := range e.List {
			e.List[i] = r.target(x)
		}
	case *syntax.ListExpr:
		for i, x := range e.List {
			e.List[i] = r.target(x)
		}
	}
	return e
}

// params rewrites default values of parameters.
func (r *rewriter) params(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = r.expr(b.Y)
		}
	}
}

func (r *rewriter) exprs(list []syntax.Expr) {
	for i, x := range list {
		list[i] = r.expr(x)
	}
}

func (r *rewriter) expr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case nil:
		return nil
	case *syntax.ParenExpr:
		e.X = r.expr(e.X)
	case *syntax.CallExpr:
		e.Fn = r.expr(e.Fn)
		for i, a := range e.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ { // name=value
				b.Y = r.expr(b.Y)
				continue
			}
			e.Args[i] = r.expr(a)
		}
		switch fn := e.Fn.(type) {
		case *syntax.DotExpr:
			e.Lparen = fn.Name.NamePos
		case *syntax.Ident:
			e.Lparen = fn.NamePos
		}
	case *syntax.DotExpr:
		e.X = r.expr(e.X)
		e.Dot = e.Name.NamePos // attribute errors point at the name
	case *syntax.Comprehension:
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = r.target(c.Vars)
				c.X = r.expr(c.X)
			case *syntax.IfClause:
				c.Cond = r.truth(c.Cond)
			}
		}
		e.Body = r.expr(e.Body)
	case *syntax.DictExpr:
		r.exprs(e.List)
	case *syntax.DictEntry:
		e.Key = r.expr(e.Key)
		e.Value = r.expr(e.Value)
	case *syntax.LambdaExpr:
		r.params(e.Params)
		e.Body = r.expr(e.Body)
	case *syntax.ListExpr:
		r.exprs(e.List)
	case *syntax.TupleExpr:
		r.exprs(e.List)
	case *syntax.CondExpr:
		e.Cond = r.truth(e.Cond)
		e.True = r.expr(e.True)
		e.False = r.expr(e.False)
	case *syntax.UnaryExpr:
		if e.Op == syntax.NOT {
			e.X = r.truth(e.X)
		} else {
			e.X = r.expr(e.X)
		}
	case *syntax.IndexExpr:
		e.X = r.expr(e.X)
		e.Y = r.expr(e.Y)
	case *syntax.SliceExpr:
		pos := e.Lbrack
		return callExpr(GetSlice, pos, e.Rbrack,
			r.expr(e.X), noneIfNil(r.expr(e.Lo), pos), noneIfNil(r.expr(e.Hi), pos), noneIfNil(r.expr(e.Step), pos))
	case *syntax.BinaryExpr:
		if e.Op == syntax.AND || e.Op == syntax.OR {
			e.X = r.truth(e.X)
		} else {
			e.X = r.expr(e.X)
		}
		e.Y = r.expr(e.Y)
		switch e.Op {
		case syntax.EQL, syntax.NEQ, syntax.LT, syntax.LE, syntax.GT, syntax.GE:
			op := e.Op.String()
			if r.tr != nil && r.tr.is[[2]int32{e.OpPos.Line, e.OpPos.Col}] {
				op = "is"
				if e.Op == syntax.NEQ {
					op = "is not"
				}
			}
			lit := &syntax.Literal{Token: syntax.STRING, TokenPos: e.OpPos, Raw: strconv.Quote(op), Value: op}
			_, end := e.Y.Span()
			return callExpr(Cmp, e.OpPos, end, lit, e.X, e.Y)
		}
	}
	return e
}

// callExpr builds fn(args...) at pos.
func callExpr(fn string, pos, end syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{
		Fn:     &syntax.Ident{NamePos: pos, Name: fn},
		Lparen: pos,
		Args:   args,
		Rparen: end,
	}
}

// truth rewrites a condition and wraps it in __truth__, which fails for
// tensors; errors point at the start of the condition.
func (r *rewriter) truth(e syntax.Expr) syntax.Expr {
	start, end := e.Span()
	return callExpr(Truth, start, end, r.expr(e))
}

func noneIfNil(e syntax.Expr, pos syntax.Position) syntax.Expr {
	if e == nil {
		return &syntax.Ident{NamePos: pos, Name: "None"}
	}
	return e
}
