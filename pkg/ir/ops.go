package ir

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
)

var opNames = [...]string{
	OpInvalid: "INVALID",
	OpNeg:     "NEG", OpRecip: "RECIP", OpExp2: "EXP2", OpLog2: "LOG2", OpSin: "SIN",
	OpSqrt: "SQRT", OpTrunc: "TRUNC", OpCast: "CAST", OpBitcast: "BITCAST", OpNot: "NOT",
	OpAdd: "ADD", OpSub: "SUB", OpMul: "MUL", OpDiv: "DIV", OpMod: "MOD", OpMax: "MAX",
	OpCmpLt: "CMPLT", OpCmpNe: "CMPNE", OpCmpEq: "CMPEQ", OpAnd: "AND", OpOr: "OR", OpXor: "XOR",
	OpWhere: "WHERE",
	OpSum:   "SUM", OpMaxReduce: "MAX_REDUCE",
	OpReshape: "RESHAPE", OpPermute: "PERMUTE", OpExpand: "EXPAND", OpPad: "PAD",
	OpShrink: "SHRINK", OpFlip: "FLIP",
	OpBuffer: "BUFFER", OpConst: "CONST", OpRand: "RAND", OpContiguous: "CONTIGUOUS",
	OpVar: "VAR", OpParam: "PARAM", OpLoad: "LOAD", OpReduce: "REDUCE", OpStore: "STORE",
}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "OP?"
}

func (o Op) IsUnary() bool    { return o >= OpNeg && o <= OpNot }
func (o Op) IsBinary() bool   { return o >= OpAdd && o <= OpXor }
func (o Op) IsALU() bool      { return o >= OpNeg && o <= OpWhere }
func (o Op) IsReduce() bool   { return o == OpSum || o == OpMaxReduce }
func (o Op) IsMovement() bool { return o >= OpReshape && o <= OpFlip }

// IsCompare is true for ops that return bool.
func (o Op) IsCompare() bool { return o == OpCmpLt || o == OpCmpNe || o == OpCmpEq }

// Commutative binary ops may have their operands reordered by the simplifier.
func (o Op) Commutative() bool {
	switch o {
	case OpAdd, OpMul, OpMax, OpCmpNe, OpCmpEq, OpAnd, OpOr, OpXor:
		return true
	}
	return false
}
