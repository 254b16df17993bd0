// Package frontend translates the Python that .tg scripts are written in
// into Starlark that go.starlark.net parses, and rewrites the parsed
// syntax tree so that comparisons, slices and conditions reach the builtins
// that give them their tensor meaning. Positions always point at the
// original text.
package frontend

import (
	"strconv"

	"go.starlark.net/syntax"
)

// The AST rewriter turns the Python semantics that Starlark cannot express
// through its Value interfaces into calls of hidden builtins, keeping the
// original positions on the new nodes:
//
//	x < y          ->  __cmp__("<", x, y)     (a bool tensor for tensors)
//	x[a:b:c]       ->  __getslice__(x, a, b, c)
//	if c: / while c: / not c / c and d / x if c else y / [.. if c]
//	               ->  __truth__(c)           (an error for tensors)
//
// Starlark's Compare must return a Go bool and Truth cannot fail, so these
// cannot be done with methods on the tensor value. It also moves the
// position of each call to the callee's name (x.dot(y) reports the column
// of "dot"), so errors point at the function that failed.

// The hidden builtins that translated code calls; the session binds them.
const (
	Cmp       = "__cmp__"      // Cmp(op, x, y): a comparison
	GetSlice  = "__getslice__" // GetSlice(x, lo, hi, step): x[lo:hi:step]
	Truth     = "__truth__"    // Truth(c): c, or an error for a tensor
	MakeSlice = "__slice__"    // MakeSlice(start, stop, step): a slice value
	FStr      = "__fstr__"     // FStr(template, *values): an f-string
)

// FileOptions is the .tg dialect of Starlark: top-level control flow,
// global reassignment, while loops and sets; no recursion.
var FileOptions = &syntax.FileOptions{
	Set:             true,
	While:           true,
	TopLevelControl: true,
	GlobalReassign:  true,
}

// RewriteFile rewrites every statement of f in place.
func RewriteFile(f *syntax.File) {
	f.Stmts = rewriteStmts(f.Stmts)
}

func rewriteStmts(stmts []syntax.Stmt) []syntax.Stmt {
	for _, s := range stmts {
		rewriteStmt(s)
	}
	return stmts
}

func rewriteStmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.LHS = rewriteTarget(s.LHS)
		s.RHS = RewriteExpr(s.RHS)
	case *syntax.DefStmt:
		rewriteParams(s.Params)
		s.Body = rewriteStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = RewriteExpr(s.X)
	case *syntax.IfStmt:
		s.Cond = truth(s.Cond)
		s.True = rewriteStmts(s.True)
		s.False = rewriteStmts(s.False)
	case *syntax.ForStmt:
		s.Vars = rewriteTarget(s.Vars)
		s.X = RewriteExpr(s.X)
		s.Body = rewriteStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = truth(s.Cond)
		s.Body = rewriteStmts(s.Body)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = RewriteExpr(s.Result)
		}
	}
}

// rewriteTarget rewrites the expressions evaluated inside an assignment
// target (x[i] = v evaluates x and i) but leaves the target itself alone.
func rewriteTarget(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X = RewriteExpr(e.X)
		e.Y = RewriteExpr(e.Y)
	case *syntax.DotExpr:
		e.X = RewriteExpr(e.X)
	case *syntax.ParenExpr:
		e.X = rewriteTarget(e.X)
	case *syntax.TupleExpr:
		for i, x := range e.List {
			e.List[i] = rewriteTarget(x)
		}
	case *syntax.ListExpr:
		for i, x := range e.List {
			e.List[i] = rewriteTarget(x)
		}
	}
	return e
}

// rewriteParams rewrites default values of parameters.
func rewriteParams(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = RewriteExpr(b.Y)
		}
	}
}

func rewriteExprs(list []syntax.Expr) {
	for i, x := range list {
		list[i] = RewriteExpr(x)
	}
}

func RewriteExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case nil:
		return nil
	case *syntax.ParenExpr:
		e.X = RewriteExpr(e.X)
	case *syntax.CallExpr:
		e.Fn = RewriteExpr(e.Fn)
		for i, a := range e.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ { // name=value
				b.Y = RewriteExpr(b.Y)
				continue
			}
			e.Args[i] = RewriteExpr(a)
		}
		switch fn := e.Fn.(type) {
		case *syntax.DotExpr:
			e.Lparen = fn.Name.NamePos
		case *syntax.Ident:
			e.Lparen = fn.NamePos
		}
	case *syntax.DotExpr:
		e.X = RewriteExpr(e.X)
		e.Dot = e.Name.NamePos // attribute errors point at the name
	case *syntax.Comprehension:
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = rewriteTarget(c.Vars)
				c.X = RewriteExpr(c.X)
			case *syntax.IfClause:
				c.Cond = truth(c.Cond)
			}
		}
		e.Body = RewriteExpr(e.Body)
	case *syntax.DictExpr:
		rewriteExprs(e.List)
	case *syntax.DictEntry:
		e.Key = RewriteExpr(e.Key)
		e.Value = RewriteExpr(e.Value)
	case *syntax.LambdaExpr:
		rewriteParams(e.Params)
		e.Body = RewriteExpr(e.Body)
	case *syntax.ListExpr:
		rewriteExprs(e.List)
	case *syntax.TupleExpr:
		rewriteExprs(e.List)
	case *syntax.CondExpr:
		e.Cond = truth(e.Cond)
		e.True = RewriteExpr(e.True)
		e.False = RewriteExpr(e.False)
	case *syntax.UnaryExpr:
		if e.Op == syntax.NOT {
			e.X = truth(e.X)
		} else {
			e.X = RewriteExpr(e.X)
		}
	case *syntax.IndexExpr:
		e.X = RewriteExpr(e.X)
		e.Y = RewriteExpr(e.Y)
	case *syntax.SliceExpr:
		pos := e.Lbrack
		return callExpr(GetSlice, pos, e.Rbrack,
			RewriteExpr(e.X), noneIfNil(RewriteExpr(e.Lo), pos), noneIfNil(RewriteExpr(e.Hi), pos), noneIfNil(RewriteExpr(e.Step), pos))
	case *syntax.BinaryExpr:
		if e.Op == syntax.AND || e.Op == syntax.OR {
			e.X = truth(e.X)
		} else {
			e.X = RewriteExpr(e.X)
		}
		e.Y = RewriteExpr(e.Y)
		switch e.Op {
		case syntax.EQL, syntax.NEQ, syntax.LT, syntax.LE, syntax.GT, syntax.GE:
			op := &syntax.Literal{Token: syntax.STRING, TokenPos: e.OpPos, Raw: strconv.Quote(e.Op.String()), Value: e.Op.String()}
			_, end := e.Y.Span()
			return callExpr(Cmp, e.OpPos, end, op, e.X, e.Y)
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
func truth(e syntax.Expr) syntax.Expr {
	start, end := e.Span()
	return callExpr(Truth, start, end, RewriteExpr(e))
}

func noneIfNil(e syntax.Expr, pos syntax.Position) syntax.Expr {
	if e == nil {
		return &syntax.Ident{NamePos: pos, Name: "None"}
	}
	return e
}
