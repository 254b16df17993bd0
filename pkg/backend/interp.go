package backend

import (
	"fmt"
	"time"
	"unsafe"

	"tgc/pkg/half"
	"tgc/pkg/ir"
)

// The GO device interprets kernel IR directly. It needs no compiler, is the
// oracle that tests compare every other device against, and is the
// fallback when no C compiler is found. Values travel as float64 (exact for
// every tgc integer type); each op rounds or wraps to its dtype, with the
// same scalar semantics as constant folding (ir.FloatOp, ir.IntOp).

func init() {
	register(entry{name: "GO", rank: 90,
		probe: func() (string, error) { return "pure-Go interpreter of the kernel IR (reference, slow)", nil },
		open:  func(Options) (Device, error) { return goDevice{}, nil }})
}

type goDevice struct{}

func (goDevice) Name() string               { return "GO" }
func (goDevice) Source(k *ir.Kernel) string { return k.Dump() }

// hostBuffer is memory the CPU can address: a Go slice (GO) or an mmap'd
// region (CPU).
type hostBuffer struct {
	dt   ir.DType
	n    int
	data []byte
	free func()
}

func (b *hostBuffer) CopyIn(data []byte) error {
	if len(data) != len(b.data) {
		return fmt.Errorf("copy in: %d bytes into a buffer of %d", len(data), len(b.data))
	}
	copy(b.data, data)
	return nil
}

func (b *hostBuffer) CopyOut(data []byte) error {
	if len(data) != len(b.data) {
		return fmt.Errorf("copy out: %d bytes from a buffer of %d", len(data), len(b.data))
	}
	copy(data, b.data)
	return nil
}

func (b *hostBuffer) Free() {
	if b.free != nil {
		b.free()
		b.free = nil
	}
	b.data = nil
}

func (goDevice) Alloc(dt ir.DType, n int) (Buffer, error) {
	// 8-byte aligned backing store so typed views are aligned.
	words := make([]uint64, (n*dt.Size()+7)/8)
	var data []byte
	if len(words) > 0 {
		data = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n*dt.Size())
	}
	return &hostBuffer{dt: dt, n: n, data: data}, nil
}

func (goDevice) Compile(ks []*ir.Kernel) ([]Program, error) {
	out := make([]Program, len(ks))
	for i, k := range ks {
		out[i] = &interpProgram{k: k, prog: ir.Linearize(k)}
	}
	return out, nil
}

type interpProgram struct {
	k    *ir.Kernel
	prog *ir.Program
}

func (p *interpProgram) Name() string                 { return p.k.Name }
func (p *interpProgram) Disassembly() (string, error) { return p.k.Dump(), nil }

// Rand is tg_rand of the C prelude (render.RandC), in Go.
func Rand(seed, ctr, idx int64) float32 {
	mix := func(x uint64) uint64 {
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		return x ^ (x >> 31)
	}
	x := mix(uint64(seed) + 0x9e3779b97f4a7c15*(uint64(ctr)+1))
	x = mix(x ^ (uint64(idx) * 0xd1b54a32d192ed03))
	return float32(x>>40) * (1.0 / 16777216.0)
}

// evaluator holds the compiled closures of one kernel.
type evaluator struct {
	slot  map[*ir.Expr]int
	steps map[*ir.Block][]func(r []float64)
	bufs  [][]byte
	vars  []int64
	p     *interpProgram
}

func (p *interpProgram) Run(bufs []Buffer, vars []int64) (time.Duration, error) {
	start := time.Now()
	ev := &evaluator{slot: map[*ir.Expr]int{}, steps: map[*ir.Block][]func([]float64){}, vars: vars, p: p}
	for _, b := range bufs {
		ev.bufs = append(ev.bufs, b.(*hostBuffer).data)
	}
	ir.Walk(p.k.Stores, func(e *ir.Expr) { ev.slot[e] = len(ev.slot) })
	top := ev.compile(p.prog.Top)
	var stores []func([]float64)
	for _, s := range p.prog.Stores {
		stores = append(stores, ev.store(s))
	}
	g := p.k.Global
	outer := g[0]
	parallel(outer.Trip(vars), func(lo, hi int64) {
		r := make([]float64, len(ev.slot))
		var rec func(d int)
		rec = func(d int) {
			if d == len(g) {
				for _, f := range top {
					f(r)
				}
				for _, f := range stores {
					f(r)
				}
				return
			}
			v := ev.varSlot(g[d])
			a, b := int64(0), g[d].Trip(ev.vars)
			if d == 0 {
				a, b = lo, hi
			}
			for i := a; i < b; i++ {
				if v >= 0 {
					r[v] = float64(i)
				}
				rec(d + 1)
			}
		}
		rec(0)
	})
	return time.Since(start), nil
}

// varSlot finds the register of a loop variable (-1 if unused).
func (ev *evaluator) varSlot(a *ir.Axis) int {
	for e, s := range ev.slot {
		if e.Op == ir.OpVar && e.Arg.(*ir.Axis) == a {
			return s
		}
	}
	return -1
}

func (ev *evaluator) compile(b *ir.Block) []func([]float64) {
	var fs []func([]float64)
	for _, e := range b.Nodes {
		if f := ev.node(e); f != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

func (ev *evaluator) node(e *ir.Expr) func([]float64) {
	out := ev.slot[e]
	src := make([]int, len(e.Src))
	for i, s := range e.Src {
		src[i] = ev.slot[s]
	}
	switch op := e.Op; {
	case op == ir.OpVar || op == ir.OpStore:
		return nil // set by loops / run after the top block
	case op == ir.OpConst:
		v := e.ConstFloat()
		return func(r []float64) { r[out] = v }
	case op == ir.OpParam:
		i := e.ParamIndex()
		return func(r []float64) { r[out] = float64(ev.vars[i]) }
	case op == ir.OpRand:
		return func(r []float64) {
			r[out] = float64(Rand(int64(r[src[1]]), int64(r[src[2]]), int64(r[src[0]])))
		}
	case op == ir.OpLoad:
		get := reader(e.DType, ev.bufs[e.Arg.(int)])
		if len(src) > 1 {
			return func(r []float64) {
				if r[src[1]] != 0 {
					r[out] = get(int(r[src[0]]))
				} else {
					r[out] = 0
				}
			}
		}
		return func(r []float64) { r[out] = get(int(r[src[0]])) }
	case op == ir.OpReduce:
		return ev.reduce(e)
	case op == ir.OpCast:
		from, to := e.Src[0].DType, e.DType
		return func(r []float64) { r[out] = castValue(from, to, r[src[0]]) }
	case op == ir.OpWhere:
		return func(r []float64) {
			if r[src[0]] != 0 {
				r[out] = r[src[1]]
			} else {
				r[out] = r[src[2]]
			}
		}
	case op.IsCompare():
		return func(r []float64) { r[out] = b2f(ir.Compare(op, r[src[0]], r[src[1]])) }
	case e.DType.IsFloat():
		dt := e.DType
		if len(src) == 1 {
			return func(r []float64) { r[out] = ir.FloatOp(op, dt, r[src[0]], 0) }
		}
		return func(r []float64) { r[out] = ir.FloatOp(op, dt, r[src[0]], r[src[1]]) }
	default:
		dt := e.DType
		if len(src) == 1 {
			return func(r []float64) { r[out] = float64(ir.IntOp(op, dt, int64(r[src[0]]), 0)) }
		}
		return func(r []float64) { r[out] = float64(ir.IntOp(op, dt, int64(r[src[0]]), int64(r[src[1]]))) }
	}
}

// reduce evaluates a reduce's whole group (its leader's closure fills every
// member's register); other members evaluate to nothing.
func (ev *evaluator) reduce(e *ir.Expr) func([]float64) {
	leader := ev.p.prog.Leader[e]
	if leader != e {
		return nil
	}
	members := ev.p.prog.Members[leader]
	arg := leader.Arg.(*ir.ReduceArg)
	body := ev.compile(ev.p.prog.Inner[leader])
	type acc struct {
		out, val int
		op       ir.Op
		dt       ir.DType
		init     float64
	}
	accs := make([]acc, len(members))
	for i, m := range members {
		op := m.Arg.(*ir.ReduceArg).Op
		accs[i] = acc{ev.slot[m], ev.slot[m.Src[0]], op, m.DType, ir.ReduceIdentity(op, m.DType)}
	}
	vars := make([]int, len(arg.Axes))
	for i, a := range arg.Axes {
		vars[i] = ev.varSlot(a)
	}
	return func(r []float64) {
		for _, a := range accs {
			r[a.out] = a.init
		}
		var rec func(d int)
		rec = func(d int) {
			if d == len(arg.Axes) {
				for _, f := range body {
					f(r)
				}
				for _, a := range accs {
					v := r[a.val]
					switch {
					case a.op != ir.OpSum:
						if v > r[a.out] {
							r[a.out] = v
						}
					case a.dt.IsFloat():
						r[a.out] = ir.RoundFloat(a.dt, r[a.out]+v)
					default:
						r[a.out] = float64(a.dt.Wrap(int64(r[a.out]) + int64(v)))
					}
				}
				return
			}
			n := arg.Axes[d].Trip(ev.vars)
			for i := int64(0); i < n; i++ {
				if vars[d] >= 0 {
					r[vars[d]] = float64(i)
				}
				rec(d + 1)
			}
		}
		rec(0)
	}
}

func (ev *evaluator) store(s *ir.Expr) func([]float64) {
	put := writer(s.DType, ev.bufs[s.Arg.(int)])
	idx, val := ev.slot[s.Src[0]], ev.slot[s.Src[1]]
	return func(r []float64) { put(int(r[idx]), r[val]) }
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// castValue converts with C semantics; float16 rounds through binary16.
func castValue(from, to ir.DType, v float64) float64 {
	switch {
	case to == ir.Float16:
		return float64(half.ToFloat32(half.FromFloat32(float32(v))))
	case to.IsFloat():
		return ir.RoundFloat(to, v)
	case from.IsFloat():
		return float64(ir.CastFloatToInt(to, v))
	}
	return float64(to.Wrap(int64(v)))
}

func reader(dt ir.DType, b []byte) func(int) float64 {
	switch dt {
	case ir.Float32:
		s := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
		return func(i int) float64 { return float64(s[i]) }
	case ir.Float16:
		s := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
		return func(i int) float64 { return float64(half.ToFloat32(s[i])) }
	case ir.Int32:
		s := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
		return func(i int) float64 { return float64(s[i]) }
	case ir.Int8:
		return func(i int) float64 { return float64(int8(b[i])) }
	}
	return func(i int) float64 { return float64(b[i]) }
}

func writer(dt ir.DType, b []byte) func(int, float64) {
	switch dt {
	case ir.Float32:
		s := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
		return func(i int, v float64) { s[i] = float32(v) }
	case ir.Float16:
		s := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
		return func(i int, v float64) { s[i] = half.FromFloat32(float32(v)) }
	case ir.Int32:
		s := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
		return func(i int, v float64) { s[i] = int32(int64(v)) }
	case ir.Bool:
		return func(i int, v float64) {
			if v != 0 {
				b[i] = 1
			} else {
				b[i] = 0
			}
		}
	}
	return func(i int, v float64) { b[i] = byte(int64(v)) }
}
