package ir

import (
	"math"
	"strings"
)

// Op is the one op vocabulary of tgc. The tensor graph uses the ALU,
// reduce, movement and source ops; the kernel IR uses the ALU ops plus the
// kernel-only ops (Var, Load, Reduce, Store). Everything a user can call
// decomposes into these.
type Op uint8

const (
	OpInvalid Op = iota

	// unary ALU
	OpNeg
	OpRecip
	OpExp2
	OpLog2
	OpSin
	OpSqrt
	OpTrunc
	OpCast    // Arg-free: the target dtype is the node's dtype
	OpBitcast // the same bits read as the node's dtype (of the same size)
	OpNot     // logical not on bool

	// binary ALU
	OpAdd
	OpSub
	OpMul
	OpDiv // C semantics: true division for floats, truncating for ints
	OpMod // C semantics: sign follows the dividend
	OpMax
	OpCmpLt
	OpCmpNe
	OpCmpEq
	OpAnd
	OpOr
	OpXor
	OpShl // x << n: see shl
	OpShr // x >> n: see shr

	// ternary ALU
	OpWhere

	// reduce (tensor graph: Arg = axes; kernel IR: OpReduce with ReduceArg)
	OpSum
	OpMaxReduce

	// movement (tensor graph only; folded into index expressions)
	OpReshape
	OpPermute
	OpExpand
	OpPad
	OpShrink
	OpFlip

	// sources
	OpBuffer     // a realized buffer (tensor graph)
	OpConst      // a scalar constant
	OpRand       // uniform [0,1) from a counter-based hash of (seed, index)
	OpContiguous // forces a realize

	// kernel IR only
	OpVar    // a loop index (Arg: *Axis)
	OpParam  // a runtime integer parameter (Arg: int, index into vars)
	OpLoad   // Arg: buffer index; Src: index, [valid]
	OpReduce // Arg: ReduceArg; Src: value
	OpStore  // Arg: buffer index; Src: index, value

	numOps
)

// OpKind is the family of an op.
type OpKind uint8

const (
	KindOther    OpKind = iota // sources and kernel-only ops
	KindALU                    // elementwise: unary, binary, ternary
	KindReduce                 // SUM, MAX_REDUCE
	KindMovement               // folded into index expressions by lowering
)

// Types is a set of dtype families: the operands an ALU op accepts.
type Types uint8

const (
	TBool Types = 1 << iota
	TInt        // signed and unsigned integers (index math included)
	TFloat
	TAny = TBool | TInt | TFloat
)

// Has says whether dt belongs to the set.
func (ts Types) Has(dt DType) bool {
	switch {
	case dt == Bool:
		return ts&TBool != 0
	case dt.IsFloat():
		return ts&TFloat != 0
	}
	return ts&TInt != 0
}

func (ts Types) String() string {
	var names []string
	for _, n := range []struct {
		t    Types
		name string
	}{{TBool, "bool"}, {TInt, "integer"}, {TFloat, "float"}} {
		if ts&n.t != 0 {
			names = append(names, n.name)
		}
	}
	switch len(names) {
	case 0:
		return "no"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Result says how an ALU op's dtype follows from its operands'.
type Result uint8

const (
	SameType   Result = iota // the operands' (they share one dtype)
	BoolResult               // comparisons
	Selected                 // WHERE: the dtype of the values selected
)

// OpInfo is one row of the op table: everything tgc knows about a
// primitive. A new elementwise primitive is a constant above, a row here,
// a Tensor method (pkg/tensor) and its script binding (pkg/script); the
// simplifier, constant folding, the GO interpreter, Verify, every renderer
// and autograd read the row (docs/architecture.md walks through SHL).
type OpInfo struct {
	Name  string
	Kind  OpKind
	Arity int // ALU ops: operands

	// The dtype rule of an ALU op: the operand dtypes it accepts (the
	// Tensor API refuses others with an error, Verify checks kernels) and
	// the result's dtype.
	Types       Types
	Result      Result
	Commutative bool // the simplifier may reorder the operands

	// Semantics, shared by constant folding and the GO interpreter (the
	// renderers must agree; docs/language.md, "Dtype rules"): Float
	// computes on float operands in float64 before rounding to the dtype;
	// Int on integer and bool operands (int64 registers, uint64 as bit
	// patterns) before wrapping to the dtype; Cmp compares floats, CmpInt
	// integers (uint64 already mapped to signed order). nil where the op
	// takes no such operands. CAST and BITCAST convert between dtypes
	// (CastFloatToInt, Bits, FromBits).
	Float  func(a, b float64) float64
	Int    func(dt DType, a, b int64) int64
	Cmp    func(a, b float64) bool
	CmpInt func(a, b int64) bool

	// Spellings in the C-family dialects: an expression over the operands
	// $0 $1 $2. C is every dialect's unless CL, CUDA or Metal says
	// otherwise. With Helper set, the spelling calls a helper function the
	// kernel defines once per dtype (tg_<name>_<dtype>, the call spelled
	// $F): Helper is its return expression over its parameters a and b,
	// where $T is the operand type, $U the unsigned type of the width the
	// dialect computes it in and $W the dtype's bits. Ops whose rendering
	// depends on more than the dialect (casts, loads, integer division's
	// guards, wrapping integer arithmetic) are spelled by the renderer.
	C, CL, CUDA, Metal string
	Helper             string
	// Ints and F64 are the op's spellings, in every dialect, for integer
	// and for float64 operands where they differ from the dialect's (whose
	// math functions take float): MOD is % on integers, fmod on doubles.
	Ints, F64 string
	// SIMD is the op on GCC vectors of $w lanes (the simd pass vectorizes
	// the ops that have it); "" when it stays scalar.
	SIMD string

	// Grad names the op's gradient rule in autograd's rule table; "" when
	// no gradient flows through it (piecewise constant, or not float).
	Grad string
}

// Info is op's row of the op table.
func (o Op) Info() *OpInfo {
	if o < numOps {
		return &opTable[o]
	}
	return &opTable[OpInvalid]
}

// Repeats says whether some spelling of the op writes operand i more than
// once (MAX: (($0>$1)?$0:$1)), so that a renderer evaluates the operand
// into a variable first (Program.Named).
func (o *OpInfo) Repeats(i int) bool {
	arg := "$" + string(rune('0'+i))
	for _, t := range []string{o.C, o.CL, o.CUDA, o.Metal, o.Ints, o.F64} {
		if strings.Count(t, arg) > 1 {
			return true
		}
	}
	return false
}

// Ops lists every op of the table, in order.
func Ops() []Op {
	ops := make([]Op, 0, numOps)
	for o := OpInvalid + 1; o < numOps; o++ {
		ops = append(ops, o)
	}
	return ops
}

func b2i(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

var opTable = [numOps]OpInfo{
	OpInvalid: {Name: "INVALID"},

	OpNeg: {Name: "NEG", Kind: KindALU, Arity: 1, Types: TInt | TFloat,
		Float: func(a, _ float64) float64 { return -a }, Int: func(_ DType, a, _ int64) int64 { return -a },
		C: "(-$0)", SIMD: "(-$0)", Grad: "neg"},
	OpRecip: {Name: "RECIP", Kind: KindALU, Arity: 1, Types: TFloat,
		Float: func(a, _ float64) float64 { return 1 / a }, C: "(1.0f/$0)", F64: "(1.0/$0)", SIMD: "(1.0f/$0)", Grad: "recip"},
	OpExp2: {Name: "EXP2", Kind: KindALU, Arity: 1, Types: TFloat, Float: func(a, _ float64) float64 { return math.Exp2(a) },
		C: "tg_exp2f($0)", CL: "exp2($0)", CUDA: "exp2f($0)", Metal: "exp2($0)", F64: "exp2($0)", SIMD: "tg_exp2v(tg_i$w, tg_f$w, $0)", Grad: "exp2"},
	OpLog2: {Name: "LOG2", Kind: KindALU, Arity: 1, Types: TFloat, Float: func(a, _ float64) float64 { return math.Log2(a) },
		C: "tg_log2f($0)", CL: "log2($0)", CUDA: "log2f($0)", Metal: "log2($0)", F64: "log2($0)", Grad: "log2"},
	OpSin: {Name: "SIN", Kind: KindALU, Arity: 1, Types: TFloat, Float: func(a, _ float64) float64 { return math.Sin(a) },
		C: "sinf($0)", CL: "sin($0)", CUDA: "sinf($0)", Metal: "sin($0)", F64: "sin($0)", Grad: "sin"},
	OpSqrt: {Name: "SQRT", Kind: KindALU, Arity: 1, Types: TFloat, Float: func(a, _ float64) float64 { return math.Sqrt(a) },
		C: "sqrtf($0)", CL: "sqrt($0)", CUDA: "sqrtf($0)", Metal: "sqrt($0)", F64: "sqrt($0)", Grad: "sqrt"},
	OpTrunc: {Name: "TRUNC", Kind: KindALU, Arity: 1, Types: TFloat, Float: func(a, _ float64) float64 { return math.Trunc(a) },
		C: "truncf($0)", CL: "trunc($0)", CUDA: "truncf($0)", Metal: "trunc($0)", F64: "trunc($0)"},
	OpCast:    {Name: "CAST", Kind: KindALU, Arity: 1, Types: TAny, Grad: "cast"},
	OpBitcast: {Name: "BITCAST", Kind: KindALU, Arity: 1, Types: TAny},
	OpNot: {Name: "NOT", Kind: KindALU, Arity: 1, Types: TBool,
		Int: func(_ DType, a, _ int64) int64 { return b2i(a == 0) }, C: "(!$0)"},

	OpAdd: {Name: "ADD", Kind: KindALU, Arity: 2, Types: TInt | TFloat, Commutative: true,
		Float: func(a, b float64) float64 { return a + b }, Int: func(_ DType, a, b int64) int64 { return a + b },
		C: "($0+$1)", SIMD: "($0+$1)", Grad: "add"},
	OpSub: {Name: "SUB", Kind: KindALU, Arity: 2, Types: TInt | TFloat,
		Float: func(a, b float64) float64 { return a - b }, Int: func(_ DType, a, b int64) int64 { return a - b },
		C: "($0-$1)", SIMD: "($0-$1)", Grad: "sub"},
	OpMul: {Name: "MUL", Kind: KindALU, Arity: 2, Types: TInt | TFloat, Commutative: true,
		Float: func(a, b float64) float64 { return a * b }, Int: func(_ DType, a, b int64) int64 { return a * b },
		C: "($0*$1)", SIMD: "($0*$1)", Grad: "mul"},
	OpDiv: {Name: "DIV", Kind: KindALU, Arity: 2, Types: TAny,
		Float: func(a, b float64) float64 { return a / b }, Int: idiv, C: "($0/$1)", Grad: "div"},
	OpMod: {Name: "MOD", Kind: KindALU, Arity: 2, Types: TAny,
		Float: math.Mod, Int: imod, C: "fmodf($0, $1)", CL: "fmod($0, $1)", Metal: "fmod($0, $1)", Ints: "($0%$1)", F64: "fmod($0, $1)"},
	OpMax: {Name: "MAX", Kind: KindALU, Arity: 2, Types: TAny, Commutative: true,
		Float: func(a, b float64) float64 {
			if a > b {
				return a
			}
			return b
		},
		Int: func(dt DType, a, b int64) int64 {
			if dt == Uint64 {
				return int64(max(uint64(a), uint64(b)))
			}
			return max(a, b)
		},
		C: "(($0>$1)?$0:$1)", SIMD: "tg_max(tg_i$w, tg_f$w, $0, $1)", Grad: "max"},
	OpCmpLt: {Name: "CMPLT", Kind: KindALU, Arity: 2, Types: TAny, Result: BoolResult,
		Cmp: func(a, b float64) bool { return a < b }, CmpInt: func(a, b int64) bool { return a < b },
		C: "($0<$1)", SIMD: "($0<$1)"},
	OpCmpNe: {Name: "CMPNE", Kind: KindALU, Arity: 2, Types: TAny, Result: BoolResult, Commutative: true,
		Cmp: func(a, b float64) bool { return a != b }, CmpInt: func(a, b int64) bool { return a != b }, C: "($0!=$1)"},
	OpCmpEq: {Name: "CMPEQ", Kind: KindALU, Arity: 2, Types: TAny, Result: BoolResult, Commutative: true,
		Cmp: func(a, b float64) bool { return a == b }, CmpInt: func(a, b int64) bool { return a == b }, C: "($0==$1)", SIMD: "($0==$1)"},
	OpAnd: {Name: "AND", Kind: KindALU, Arity: 2, Types: TBool | TInt, Commutative: true,
		Int: func(_ DType, a, b int64) int64 { return a & b }, C: "($0&$1)"},
	OpOr: {Name: "OR", Kind: KindALU, Arity: 2, Types: TBool | TInt, Commutative: true,
		Int: func(_ DType, a, b int64) int64 { return a | b }, C: "($0|$1)"},
	OpXor: {Name: "XOR", Kind: KindALU, Arity: 2, Types: TBool | TInt, Commutative: true,
		Int: func(_ DType, a, b int64) int64 { return a ^ b }, C: "($0^$1)"},
	OpShl: {Name: "SHL", Kind: KindALU, Arity: 2, Types: TInt, Int: shl,
		C: "$F($0, $1)", Helper: "($U)b >= $W ? 0 : ($T)(($U)a << b)"},
	OpShr: {Name: "SHR", Kind: KindALU, Arity: 2, Types: TInt, Int: shr,
		C: "$F($0, $1)", Helper: "($U)b >= $W ? (a < 0 ? -1 : 0) : a < 0 ? ~(~a >> b) : a >> b"},

	OpWhere: {Name: "WHERE", Kind: KindALU, Arity: 3, Types: TAny, Result: Selected,
		C: "($0?$1:$2)", SIMD: "tg_sel(tg_i$w, tg_f$w, $0, $1, $2)", Grad: "where"},

	OpSum:       {Name: "SUM", Kind: KindReduce, Grad: "sum"},
	OpMaxReduce: {Name: "MAX_REDUCE", Kind: KindReduce, Grad: "max_reduce"},

	OpReshape: {Name: "RESHAPE", Kind: KindMovement, Grad: "reshape"},
	OpPermute: {Name: "PERMUTE", Kind: KindMovement, Grad: "permute"},
	OpExpand:  {Name: "EXPAND", Kind: KindMovement, Grad: "expand"},
	OpPad:     {Name: "PAD", Kind: KindMovement, Grad: "pad"},
	OpShrink:  {Name: "SHRINK", Kind: KindMovement, Grad: "shrink"},
	OpFlip:    {Name: "FLIP", Kind: KindMovement, Grad: "flip"},

	OpBuffer:     {Name: "BUFFER"},
	OpConst:      {Name: "CONST"},
	OpRand:       {Name: "RAND"},
	OpContiguous: {Name: "CONTIGUOUS", Grad: "contiguous"},

	OpVar:    {Name: "VAR"},
	OpParam:  {Name: "PARAM"},
	OpLoad:   {Name: "LOAD"},
	OpReduce: {Name: "REDUCE"},
	OpStore:  {Name: "STORE"},
}

// idiv is C's truncating division, without its traps: x/0 is 0 and
// MIN/-1 wraps to MIN; uint64 bit patterns divide unsigned.
func idiv(dt DType, a, b int64) int64 {
	switch {
	case b == 0:
		return 0
	case dt == Uint64:
		return int64(uint64(a) / uint64(b))
	case b == -1: // -MIN wraps (Go's int64 division would too)
		return -a
	}
	return a / b
}

// imod is C's remainder (the sign of the dividend), without its traps:
// x%0 and MIN%-1 are 0; uint64 bit patterns divide unsigned.
func imod(dt DType, a, b int64) int64 {
	switch {
	case b == 0, b == -1:
		return 0
	case dt == Uint64:
		return int64(uint64(a) % uint64(b))
	}
	return a % b
}

// shl is x << n in x's width: 0 when n, read as an unsigned number, is
// the width or more (so a negative count too). The C helper computes in
// unsigned arithmetic, as signed overflow is undefined there.
func shl(dt DType, a, b int64) int64 {
	if uint64(b) >= uint64(dt.Bits()) {
		return 0
	}
	return a << b
}

// shr is x >> n: arithmetic for signed dtypes, logical for unsigned ones
// (their values are never negative, but uint64's bit patterns may look
// so); a count that is the width or more (or negative) gives the sign
// fill, -1 or 0. The C helper shifts ~x for negative x, as >> of a
// negative value is implementation-defined.
func shr(dt DType, a, b int64) int64 {
	switch {
	case uint64(b) >= uint64(dt.Bits()) && a < 0 && dt != Uint64:
		return -1
	case uint64(b) >= uint64(dt.Bits()):
		return 0
	case dt == Uint64:
		return int64(uint64(a) >> b)
	}
	return a >> b
}

func (o Op) String() string { return o.Info().Name }

func (o Op) IsUnary() bool    { return o.Info().Kind == KindALU && o.Info().Arity == 1 }
func (o Op) IsBinary() bool   { return o.Info().Kind == KindALU && o.Info().Arity == 2 }
func (o Op) IsALU() bool      { return o.Info().Kind == KindALU }
func (o Op) IsReduce() bool   { return o.Info().Kind == KindReduce }
func (o Op) IsMovement() bool { return o.Info().Kind == KindMovement }

// IsCompare is true for ops that return bool.
func (o Op) IsCompare() bool { return o.Info().Result == BoolResult }

// Commutative binary ops may have their operands reordered by the simplifier.
func (o Op) Commutative() bool { return o.Info().Commutative }
