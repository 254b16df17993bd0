package ir

import (
	"fmt"
	"strconv"
)

var infix = map[Op]string{
	OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpMod: "%", OpCmpLt: "<",
	OpCmpNe: "!=", OpCmpEq: "==", OpAnd: "&&", OpOr: "||", OpXor: "^",
}

// String prints an expression in infix form, for tests and error messages.
func (e *Expr) String() string {
	switch e.Op {
	case OpConst:
		if f, ok := e.Arg.(float64); ok {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return fmt.Sprint(e.Arg)
	case OpVar:
		return e.Arg.(*Axis).Name()
	case OpParam:
		if p := e.Arg.(ParamArg); p.Name != "" {
			return p.Name
		}
		return fmt.Sprintf("vars[%d]", e.ParamIndex())
	case OpLoad:
		if len(e.Src) > 1 {
			return fmt.Sprintf("(%s ? buf%d[%s] : 0)", e.Src[1], e.Arg, e.Src[0])
		}
		return fmt.Sprintf("buf%d[%s]", e.Arg, e.Src[0])
	case OpWhere:
		return fmt.Sprintf("(%s ? %s : %s)", e.Src[0], e.Src[1], e.Src[2])
	case OpCast:
		return fmt.Sprintf("(%s)%s", e.DType, e.Src[0])
	}
	if s, ok := infix[e.Op]; ok {
		return "(" + e.Src[0].String() + s + e.Src[1].String() + ")"
	}
	args := ""
	for i, s := range e.Src {
		if i > 0 {
			args += ", "
		}
		args += s.String()
	}
	return fmt.Sprintf("%s(%s)", e.Op, args)
}
