package backend

import (
	"fmt"
	"math"
	"runtime"
	"sync"
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

// Owns: every host buffer (GO's or the CPU's) is plain memory to GO.
func (goDevice) Owns(b Buffer) bool { _, ok := b.(*hostBuffer); return ok }

// hostBuffer is memory the CPU can address: a Go slice (GO) or an mmap'd
// region (CPU).
type hostBuffer struct {
	dt    ir.DType
	n     int
	data  []byte
	free  func()
	pages *lazyPages // a fresh zeroed mapping, populated ahead of writes (populate.go); nil otherwise
}

func (b *hostBuffer) CopyIn(data []byte) error {
	if len(data) != len(b.data) {
		return fmt.Errorf("copy in: %d bytes into a buffer of %d", len(data), len(b.data))
	}
	parallelCopy(b.data, data)
	return nil
}

// parallelCopy copies src into dst, a large one in a piece per core: an
// upload's copy is where a buffer's pages are first touched, which in a
// guest whose host backs memory lazily costs the host's faults (up to
// 10.8 ms per MB of huge pages on the Xeon guest), and those proceed on
// both cores at once (128 MiB: 1.34 → 0.75 s, 0.66 → 0.53 s).
func parallelCopy(dst, src []byte) {
	workers := runtime.GOMAXPROCS(0)
	if len(src) < parallelCopyMin || workers < 2 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := len(src)*w/workers, len(src)*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// parallelCopyMin is the size from which parallelCopy splits a copy.
const parallelCopyMin = 8 << 20

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

// Carve is n values of dt at byte offset of a host buffer (Carver).
func (goDevice) Carve(from Buffer, offset int, dt ir.DType, n int) (Buffer, error) {
	return carveHost(from, offset, dt, n)
}

// carveHost is Carve for the host's buffers (GO's, the CPU's).
func carveHost(from Buffer, offset int, dt ir.DType, n int) (Buffer, error) {
	h, ok := from.(*hostBuffer)
	size := n * dt.Size()
	switch {
	case !ok:
		return nil, fmt.Errorf("carve: %T is not a host buffer", from)
	case offset < 0 || n < 0 || offset%dt.Size() != 0 || offset+size > len(h.data):
		return nil, fmt.Errorf("carve: %d bytes at %d from a buffer of %d", size, offset, len(h.data))
	}
	return &hostBuffer{dt: dt, n: n, data: h.data[offset : offset+size : offset+size]}, nil
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

// regs are one thread's registers: each expression has a slot, in f when
// its dtype is a float, in i otherwise (integers exactly, uint64 as bit
// patterns, bools as 0/1).
type regs struct {
	f []float64
	i []int64
}

// evaluator holds the compiled closures of one kernel.
type evaluator struct {
	slot map[*ir.Expr]int
	bufs [][]byte
	vars []int64
	p    *interpProgram
}

func (p *interpProgram) Run(bufs []Buffer, vars []int64) (time.Duration, error) {
	start := time.Now()
	ev := &evaluator{slot: map[*ir.Expr]int{}, vars: vars, p: p}
	for _, b := range bufs {
		ev.bufs = append(ev.bufs, b.(*hostBuffer).data)
	}
	ir.Walk(p.k.Stores, func(e *ir.Expr) { ev.slot[e] = len(ev.slot) })
	// The global axes are loops: what is hoisted out of inner ones runs
	// once per iteration of the loops it uses (ir.Program.Hoisted).
	hoisted := make([][]func(*regs), len(p.prog.Hoisted))
	for d, b := range p.prog.Hoisted {
		hoisted[d] = ev.compile(b)
	}
	top := ev.compile(p.prog.Innermost)
	var stores []func(*regs)
	for _, s := range p.prog.Stores {
		stores = append(stores, ev.store(s))
	}
	g := p.k.Global
	outer := g[0]
	parallel(outer.Trip(vars), func(lo, hi int64) {
		r := &regs{f: make([]float64, len(ev.slot)), i: make([]int64, len(ev.slot))}
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
			for _, f := range hoisted[d] {
				f(r)
			}
			v := ev.varSlot(g[d])
			a, b := int64(0), g[d].Trip(ev.vars)
			if d == 0 {
				a, b = lo, hi
			}
			for i := a; i < b; i++ {
				if v >= 0 {
					r.i[v] = i
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

func (ev *evaluator) compile(b *ir.Block) []func(*regs) {
	var fs []func(*regs)
	for _, e := range b.Nodes {
		if f := ev.node(e); f != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

func (ev *evaluator) node(e *ir.Expr) func(*regs) {
	out := ev.slot[e]
	src := make([]int, len(e.Src))
	for i, s := range e.Src {
		src[i] = ev.slot[s]
	}
	dt := e.DType
	switch op := e.Op; {
	case op == ir.OpVar || op == ir.OpStore:
		return nil // set by loops / run after the top block
	case op == ir.OpConst:
		if dt.IsFloat() {
			v := e.ConstFloat()
			return func(r *regs) { r.f[out] = v }
		}
		v, _ := e.ConstInt()
		return func(r *regs) { r.i[out] = v }
	case op == ir.OpParam:
		k := e.ParamIndex()
		return func(r *regs) { r.i[out] = ev.vars[k] }
	case op == ir.OpRand:
		return func(r *regs) { r.f[out] = float64(Rand(r.i[src[1]], r.i[src[2]], r.i[src[0]])) }
	case op == ir.OpLoad:
		return ev.load(e, out, src)
	case op == ir.OpReduce:
		return ev.reduce(e)
	case op == ir.OpCast:
		return castOp(e.Src[0].DType, dt, out, src[0])
	case op == ir.OpBitcast:
		from := e.Src[0].DType
		return func(r *regs) {
			f, i := ir.FromBits(dt, ir.Bits(from, r.f[src[0]], r.i[src[0]]))
			r.f[out], r.i[out] = f, i
		}
	case op == ir.OpWhere:
		if dt.IsFloat() {
			return func(r *regs) {
				if r.i[src[0]] != 0 {
					r.f[out] = r.f[src[1]]
				} else {
					r.f[out] = r.f[src[2]]
				}
			}
		}
		return func(r *regs) {
			if r.i[src[0]] != 0 {
				r.i[out] = r.i[src[1]]
			} else {
				r.i[out] = r.i[src[2]]
			}
		}
	case op.IsCompare():
		if from := e.Src[0].DType; from.IsFloat() {
			return func(r *regs) { r.i[out] = b2i(ir.Compare(op, r.f[src[0]], r.f[src[1]])) }
		} else {
			return func(r *regs) { r.i[out] = b2i(ir.CompareInt(op, from, r.i[src[0]], r.i[src[1]])) }
		}
	case dt.IsFloat():
		if len(src) == 1 {
			return func(r *regs) { r.f[out] = ir.FloatOp(op, dt, r.f[src[0]], 0) }
		}
		return func(r *regs) { r.f[out] = ir.FloatOp(op, dt, r.f[src[0]], r.f[src[1]]) }
	default:
		if len(src) == 1 {
			return func(r *regs) { r.i[out] = ir.IntOp(op, dt, r.i[src[0]], 0) }
		}
		return func(r *regs) { r.i[out] = ir.IntOp(op, dt, r.i[src[0]], r.i[src[1]]) }
	}
}

// load reads a buffer element into e's register (0 where a guard fails).
func (ev *evaluator) load(e *ir.Expr, out int, src []int) func(*regs) {
	b := ev.bufs[e.Arg.(int)]
	if e.DType.IsFloat() {
		get := readerF(e.DType, b)
		if len(src) > 1 {
			return func(r *regs) {
				r.f[out] = 0
				if r.i[src[1]] != 0 {
					r.f[out] = get(int(r.i[src[0]]))
				}
			}
		}
		return func(r *regs) { r.f[out] = get(int(r.i[src[0]])) }
	}
	get := readerI(e.DType, b)
	if len(src) > 1 {
		return func(r *regs) {
			r.i[out] = 0
			if r.i[src[1]] != 0 {
				r.i[out] = get(int(r.i[src[0]]))
			}
		}
	}
	return func(r *regs) { r.i[out] = get(int(r.i[src[0]])) }
}

// castOp converts with the dtype rules: floats round to the target (an
// integer to float32 rounds once), float to integer truncates and
// saturates (ir.CastFloatToInt), integers wrap.
func castOp(from, to ir.DType, out, in int) func(*regs) {
	switch {
	case from.IsFloat() && to.IsFloat():
		return func(r *regs) { r.f[out] = ir.RoundFloat(to, r.f[in]) }
	case from.IsFloat():
		return func(r *regs) { r.i[out] = ir.CastFloatToInt(to, r.f[in]) }
	case to.IsFloat():
		return func(r *regs) { r.f[out] = ir.RoundFloat(to, intToFloat(from, to, r.i[in])) }
	}
	return func(r *regs) { r.i[out] = to.Wrap(r.i[in]) }
}

// intToFloat converts an integer to a float with a single rounding to
// float32 (or float64), as a C conversion does; float16 and bfloat16 then
// round once more, as their float32 registers do on every device.
func intToFloat(from, to ir.DType, v int64) float64 {
	if to == ir.Float64 {
		return from.IntToFloat(v)
	}
	if from == ir.Uint64 {
		return float64(float32(uint64(v)))
	}
	return float64(float32(v))
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// reduce evaluates a reduce's whole group (its leader's closure fills every
// member's register); other members evaluate to nothing.
func (ev *evaluator) reduce(e *ir.Expr) func(*regs) {
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
	}
	accs := make([]acc, len(members))
	for i, m := range members {
		accs[i] = acc{ev.slot[m], ev.slot[m.Src[0]], m.Arg.(*ir.ReduceArg).Op, m.DType}
	}
	vars := make([]int, len(arg.Axes))
	for i, a := range arg.Axes {
		vars[i] = ev.varSlot(a)
	}
	return func(r *regs) {
		for _, a := range accs {
			init := ir.ReduceIdentity(a.op, a.dt)
			if a.dt.IsFloat() {
				r.f[a.out] = init
			} else {
				r.i[a.out] = ir.CastFloatToInt(a.dt, init)
			}
		}
		var rec func(d int)
		rec = func(d int) {
			if d == len(arg.Axes) {
				for _, f := range body {
					f(r)
				}
				for _, a := range accs {
					switch {
					case a.dt.IsFloat() && a.op == ir.OpSum:
						r.f[a.out] = ir.RoundFloat(a.dt, r.f[a.out]+r.f[a.val])
					case a.dt.IsFloat(): // the C form (v>acc)?v:acc: NaN never wins
						if v := r.f[a.val]; v > r.f[a.out] {
							r.f[a.out] = v
						}
					case a.op == ir.OpSum:
						r.i[a.out] = a.dt.Wrap(r.i[a.out] + r.i[a.val])
					default:
						if v := r.i[a.val]; ir.CompareInt(ir.OpCmpLt, a.dt, r.i[a.out], v) {
							r.i[a.out] = v
						}
					}
				}
				return
			}
			n := arg.Axes[d].Trip(ev.vars)
			for i := int64(0); i < n; i++ {
				if vars[d] >= 0 {
					r.i[vars[d]] = i
				}
				rec(d + 1)
			}
		}
		rec(0)
	}
}

func (ev *evaluator) store(s *ir.Expr) func(*regs) {
	b := ev.bufs[s.Arg.(int)]
	idx, val := ev.slot[s.Src[0]], ev.slot[s.Src[1]]
	if s.DType.IsFloat() {
		put := writerF(s.DType, b)
		return func(r *regs) { put(int(r.i[idx]), r.f[val]) }
	}
	put := writerI(s.DType, b)
	return func(r *regs) { put(int(r.i[idx]), r.i[val]) }
}

// Typed views of a buffer's bytes.
func view16(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}
func view32(b []byte) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
func view64(b []byte) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

func readerF(dt ir.DType, b []byte) func(int) float64 {
	switch dt {
	case ir.Float32:
		s := view32(b)
		return func(i int) float64 { return float64(math.Float32frombits(s[i])) }
	case ir.Float64:
		s := view64(b)
		return func(i int) float64 { return math.Float64frombits(s[i]) }
	case ir.Float16:
		s := view16(b)
		return func(i int) float64 { return float64(half.ToFloat32(s[i])) }
	}
	s := view16(b) // bfloat16
	return func(i int) float64 { return float64(half.BFloat16ToFloat32(s[i])) }
}

func readerI(dt ir.DType, b []byte) func(int) int64 {
	switch dt.Size() {
	case 1:
		return func(i int) int64 { return dt.Wrap(int64(b[i])) }
	case 2:
		s := view16(b)
		return func(i int) int64 { return dt.Wrap(int64(s[i])) }
	case 4:
		s := view32(b)
		return func(i int) int64 { return dt.Wrap(int64(s[i])) }
	}
	s := view64(b)
	return func(i int) int64 { return int64(s[i]) }
}

func writerF(dt ir.DType, b []byte) func(int, float64) {
	switch dt {
	case ir.Float32:
		s := view32(b)
		return func(i int, v float64) { s[i] = math.Float32bits(float32(v)) }
	case ir.Float64:
		s := view64(b)
		return func(i int, v float64) { s[i] = math.Float64bits(v) }
	case ir.Float16:
		s := view16(b)
		return func(i int, v float64) { s[i] = half.FromFloat32(float32(v)) }
	}
	s := view16(b) // bfloat16
	return func(i int, v float64) { s[i] = half.BFloat16FromFloat32(float32(v)) }
}

func writerI(dt ir.DType, b []byte) func(int, int64) {
	switch dt.Size() {
	case 1:
		if dt == ir.Bool {
			return func(i int, v int64) { b[i] = byte(b2i(v != 0)) }
		}
		return func(i int, v int64) { b[i] = byte(v) }
	case 2:
		s := view16(b)
		return func(i int, v int64) { s[i] = uint16(v) }
	case 4:
		s := view32(b)
		return func(i int, v int64) { s[i] = uint32(v) }
	}
	s := view64(b)
	return func(i int, v int64) { s[i] = uint64(v) }
}
