package render

import (
	"fmt"
	"strings"

	"tgc/pkg/ir"
)

// GPU code generation, shared by the OpenCL, CUDA and Metal dialects.
//
// A kernel's global loops become the grid. Up to three of them map to grid
// dimensions directly: the innermost (contiguous) axis to dimension 0, so
// neighbouring threads touch neighbouring addresses, the next to dimension
// 1, and all the others merged into dimension 2 (recovered with / and %).
// Local (work-group) sizes are chosen per dimension within the device's
// Limits: a dimension that fits is one group, otherwise the largest divisor
// in [cap/2, cap], otherwise cap with the grid padded up and a guard that
// returns early for the padding threads.
//
// Reduces are per-thread loops, except in kernels the opts pass gave a
// GROUP (ir.Kernel.Group): there each output is one work-group whose lanes
// stride through the reduce, combine their partial results in local memory
// with a tree of barriers, and lane 0 stores. The loads and stores the
// vec4 pass grouped (ir.Kernel.Vec4) are printed as vector accesses
// (gpu_vec.go).
//
// Kernel ABI on GPUs (all dialects): the buffers as pointer parameters in
// the kernel's order (out0, in1, ...), then the runtime vars as individual
// 64-bit integer parameters (var0, var1, ...). float16 is a storage type:
// arithmetic happens in float32 as in the IR; OpenCL uses `half` when the
// device has cl_khr_fp16 and vload_half/vstore_half otherwise, CUDA
// converts with PTX cvt instructions (no cuda_fp16.h, so NVRTC needs no
// include path and clang can check the source), Metal uses `half`.

// GPUABI describes the kernel signature of the GPU dialects for plan.json.
const GPUABI = "NAME(buffers in args order as pointers, then vars as 64-bit integers); global = work-items per dimension (OpenCL NDRange; CUDA grid = global/local), local = work-group size"

// Limits are the device limits a launch is planned within.
type Limits struct {
	MaxWorkGroup int64    // threads per work-group
	MaxLocal     [3]int64 // work-group size limit per dimension
	MaxGroups    [3]int64 // number of work-groups per dimension (0: no limit)
	LocalMem     int64    // bytes of local (shared) memory per work-group
	Half         bool     // the device computes in half (OpenCL: cl_khr_fp16)
	NoFloat64    bool     // the device has no float64 (OpenCL without cl_khr_fp64)
}

// DefaultLimits fit every current GPU; `tgc emit` renders with them.
var DefaultLimits = Limits{
	MaxWorkGroup: 256,
	MaxLocal:     [3]int64{1024, 1024, 64},
	MaxGroups:    [3]int64{1<<31 - 1, 65535, 65535},
	LocalMem:     16 << 10,
	Half:         true,
}

// Launch is the geometry of one GPU launch.
type Launch struct {
	// Global counts work-items per dimension (OpenCL's convention; a
	// multiple of Local). CUDA's grid is Global/Local blocks of Local.
	Global, Local [3]int64
	// Group > 0: dimension 0 holds the lanes of a grouped reduce.
	Group int64
	dims  [3][]*ir.Axis // global axes of each dimension, outermost first
	sizes [3]int64      // unpadded size of each dimension
}

// Dims is the number of grid dimensions used (1 to 3).
func (l Launch) Dims() int {
	n := 1
	for d := 1; d < 3; d++ {
		if l.Global[d] > 1 {
			n = d + 1
		}
	}
	return n
}

// Threads is the number of threads in one work-group.
func (l Launch) Threads() int64 { return l.Local[0] * l.Local[1] * l.Local[2] }

// IsGPU says whether a dialect renders grid kernels (and has a Launch).
func (l *Lang) IsGPU() bool { return l.gpu != nil }

// WithLimits returns a copy of a GPU dialect planning launches within lim
// (the runtime passes the limits it queried from the device).
func (l *Lang) WithLimits(lim Limits) *Lang {
	c := *l
	c.Limits = lim
	return &c
}

// GPULaunch is the launch geometry of a kernel rendered in a GPU dialect.
func GPULaunch(l *Lang, k *ir.Kernel) Launch { return planLaunch(k, l.Limits) }

// Target is what the passes need to know of a dialect: for a GPU dialect
// its launch limits and vector accesses (the opts and vec4 passes), for C
// the CPU target at the default vector width.
func (l *Lang) Target() ir.Target {
	if l.gpu == nil {
		return ir.CPUTarget
	}
	lim := l.Limits
	return ir.Target{GPU: &ir.GPU{MaxWorkGroup: lim.MaxWorkGroup, MaxLocal: lim.MaxLocal, MaxGroups: lim.MaxGroups,
		LocalMem: lim.LocalMem, Vec4: l.gpu.vec != nil}}
}

// LaunchSize is GPULaunch as plan.json lists it: global (work-items) and
// local sizes of the dimensions used; ok is false for CPU dialects.
func (l *Lang) LaunchSize(k *ir.Kernel) (global, local []int64, ok bool) {
	if l.gpu == nil {
		return nil, nil, false
	}
	lt := GPULaunch(l, k)
	n := lt.Dims()
	return append([]int64{}, lt.Global[:n]...), append([]int64{}, lt.Local[:n]...), true
}

// chooseLocal picks a work-group size for a dimension of size s.
func chooseLocal(s, limit int64) int64 {
	limit = max(limit, 1)
	if s <= limit {
		return s
	}
	for d := limit; d > limit/2; d-- {
		if s%d == 0 {
			return d
		}
	}
	return limit
}

func planLaunch(k *ir.Kernel, lim Limits) Launch {
	lt := Launch{Global: [3]int64{1, 1, 1}, Local: [3]int64{1, 1, 1}, sizes: [3]int64{1, 1, 1}}
	ax := k.Global
	if g := k.Group; g > 0 {
		lt.Group = g
		lt.Global[0], lt.Local[0], lt.sizes[0] = g, g, g
		lt.dims[1] = ax
		lt.sizes[1] = k.GlobalSize()
		lt.Global[1] = lt.sizes[1]
		return lt
	}
	n := len(ax)
	switch {
	case n == 1:
		lt.dims[0] = ax
	case n == 2:
		lt.dims[0], lt.dims[1] = ax[1:], ax[:1]
	case n >= 3:
		lt.dims[0], lt.dims[1], lt.dims[2] = ax[n-1:], ax[n-2:n-1], ax[:n-2]
	}
	fit := func() bool {
		budget := max(lim.MaxWorkGroup, 1)
		for d := 0; d < 3; d++ {
			s := int64(1)
			for _, a := range lt.dims[d] {
				s *= a.Size
			}
			limit := budget
			if lim.MaxLocal[d] > 0 {
				limit = min(limit, lim.MaxLocal[d])
			}
			l := chooseLocal(s, limit)
			budget /= l
			lt.sizes[d], lt.Local[d] = s, l
			lt.Global[d] = (s + l - 1) / l * l
			if lim.MaxGroups[d] > 0 && lt.Global[d]/l > lim.MaxGroups[d] {
				return false
			}
		}
		return true
	}
	if !fit() { // too many groups in dimension 1 or 2: one flat dimension
		lt.dims = [3][]*ir.Axis{ax}
		fit()
	}
	return lt
}

// gpuDialect is what differs between the GPU languages.
type gpuDialect struct {
	prelude func(usesRand, usesHalf bool, lim Limits) string
	// header renders the kernel's qualifiers, name and parameters, up to
	// and including the opening brace.
	header func(k *ir.Kernel, lt Launch, lim Limits) string
	// ids: global id (wide: as a 64-bit value), local id and group id of
	// dimension d.
	globalID         func(d int, lt Launch, wide bool) string
	localID, groupID func(d int, lt Launch) string
	shared           string // qualifier of a work-group array
	barrier          string
	load             func(dt ir.DType, buf, idx string) string
	store            func(dt ir.DType, buf, idx, val string) string
	cast             func(to, from ir.DType, x string) string
	vec              *vecDialect // nil: no vector memory operations
}

var dimNames = [3]string{"x", "y", "z"}

func usesOp(k *ir.Kernel, f func(e *ir.Expr) bool) bool {
	found := false
	ir.Walk(k.Stores, func(e *ir.Expr) { found = found || f(e) })
	return found
}

func usesDType(k *ir.Kernel, dt ir.DType) bool {
	for _, b := range k.Bufs {
		if b.DType == dt {
			return true
		}
	}
	return usesOp(k, func(e *ir.Expr) bool { return e.DType == dt })
}

func usesHalf(k *ir.Kernel) bool {
	for _, b := range k.Bufs {
		if b.DType == ir.Float16 {
			return true
		}
	}
	return usesOp(k, func(e *ir.Expr) bool { return e.DType == ir.Float16 })
}

func (r *renderer) gpuKernel() string {
	g := r.lang.gpu
	lim := r.lang.Limits
	lt := planLaunch(r.k, lim)
	head := g.prelude(usesOp(r.k, func(e *ir.Expr) bool { return e.Op == ir.OpRand }), usesHalf(r.k), lim)
	if usesDType(r.k, ir.Float64) {
		head = r.lang.Float64Prelude + head
	}
	vp := r.k.Vec4
	if vp != nil && g.vec == nil {
		vp = nil // no vector accesses in this dialect: lane by lane
	}
	if vp != nil {
		head += g.vec.prelude
		r.vecLoad = r.vecLoadHook(vp)
		r.vecStores = vecStoreRuns(vp)
		r.prog.Uses = liveUses(r.k, vp)
	}
	r.sb.WriteString(g.header(r.k, lt, lim))
	r.indent = 1
	if lt.Group > 0 {
		r.line("%s lidx0 = %s; /* lane of %d */", r.idx, g.localID(0, lt), lt.Group)
		r.gpuIndex(1, g.groupID(1, lt), lt)
		lanes := lt.Group
		n := 0
		r.group = func(e *ir.Expr) { r.groupReduce(e, lanes, n); n++ }
	} else {
		for d := 0; d < 3; d++ {
			if len(lt.dims[d]) > 0 {
				r.gpuIndex(d, g.globalID(d, lt, r.wide), lt)
			}
		}
	}
	r.block(r.prog.Top)
	if lt.Group > 0 {
		r.line("if (lidx0 == 0) {")
		r.indent++
	}
	for _, s := range r.prog.Stores {
		if l, ok := r.vecStores[s]; ok {
			if l[0] == s {
				r.gpuVecStore(l)
			}
			continue
		}
		buf, idx := BufName(r.k, s.Arg.(int)), r.expr(s.Src[0])
		val := r.expr(r.storeValue(s))
		if s.DType == ir.BFloat16 {
			val = r.storeExpr(s)
		}
		if g.store != nil {
			r.line("%s;", g.store(s.DType, buf, idx, val))
		} else {
			r.line("%s[%s] = %s;", buf, idx, val)
		}
	}
	if lt.Group > 0 {
		r.indent--
		r.line("}")
	}
	r.sb.WriteString("}\n")
	return head + strings.Join(r.helpers, "") + r.sb.String()
}

// gpuIndex declares the global loop variables of grid dimension d from its
// id, with a guard when the dimension is padded to a multiple of the local
// size.
func (r *renderer) gpuIndex(d int, id string, lt Launch) {
	axes := lt.dims[d]
	padded := lt.Global[d] != lt.sizes[d] && lt.Group == 0
	v := fmt.Sprintf("gdim%d", d)
	if len(axes) == 1 {
		v = axes[0].Name()
	}
	r.line("%s %s = %s; /* %d */", r.idx, v, id, lt.sizes[d])
	if padded {
		r.line("if (%s >= %d) return;", v, lt.sizes[d])
	}
	defer func() {
		// A symbolic axis is launched at its largest size; the threads
		// past its trip count have nothing to do (no group reduce, so no
		// barrier, runs in such a kernel).
		for _, a := range axes {
			if a.Sym != nil {
				r.line("if (%s >= %s) return;", a.Name(), r.trip(a))
			}
		}
	}()
	if len(axes) == 1 {
		return
	}
	stride := lt.sizes[d]
	for i, a := range axes {
		stride /= a.Size
		switch {
		case i == 0:
			r.line("%s %s = (%s/%d);", r.idx, a.Name(), v, stride)
		case stride == 1:
			r.line("%s %s = (%s%%%d);", r.idx, a.Name(), v, a.Size)
		default:
			r.line("%s %s = ((%s/%d)%%%d);", r.idx, a.Name(), v, stride, a.Size)
		}
	}
}

// groupReduce renders a top-level reduce split across the lanes of the
// work-group: each lane strides through the (flattened) reduce loops, the
// partial results meet in local memory, and a tree of barriers combines
// them; every lane reads the result.
func (r *renderer) groupReduce(e *ir.Expr, lanes int64, n int) {
	g := r.lang.gpu
	arg := e.Arg.(*ir.ReduceArg)
	acc := fmt.Sprintf("acc%d", r.nacc)
	r.nacc++
	typ := r.typ(e.DType)
	r.line("%s %s = %s;", typ, acc, r.constant(e.DType, ir.ReduceIdentity(arg.Op, e.DType)))
	// only the outermost axis may be symbolic (ir.groupableSym): the flat
	// trip count is its trip times the others' sizes
	rest := int64(1)
	for _, a := range arg.Axes[1:] {
		rest *= a.Size
	}
	total := fmt.Sprint(arg.Axes[0].Size * rest)
	if a0 := arg.Axes[0]; a0.Sym != nil {
		total = r.trip(a0)
		if rest > 1 {
			total = fmt.Sprintf("%s*%d", total, rest)
		}
	}
	if len(arg.Axes) == 1 {
		a := arg.Axes[0].Name()
		r.line("for (%s %s = lidx0; %s < %s; %s += %d) {", r.idx, a, a, total, a, lanes)
		r.indent++
	} else {
		v := fmt.Sprintf("rflat%d", n)
		r.line("for (%s %s = lidx0; %s < %s; %s += %d) {", r.idx, v, v, total, v, lanes)
		r.indent++
		stride := rest * arg.Axes[0].Size
		for i, a := range arg.Axes {
			stride /= a.Size
			switch {
			case i == 0:
				r.line("%s %s = (%s/%d);", r.idx, a.Name(), v, stride)
			case stride == 1:
				r.line("%s %s = (%s%%%d);", r.idx, a.Name(), v, a.Size)
			default:
				r.line("%s %s = ((%s/%d)%%%d);", r.idx, a.Name(), v, stride, a.Size)
			}
		}
	}
	r.block(r.prog.Inner[e])
	val := r.expr(e.Src[0])
	combine := func(dst, x string) string {
		if arg.Op == ir.OpSum {
			return r.accumulate(e, dst, x)
		}
		return fmt.Sprintf("%s = ((%s>%s)?%s:%s);", dst, x, dst, x, dst)
	}
	r.line("%s", combine(acc, val))
	r.indent--
	r.line("}")
	lds := fmt.Sprintf("part%d", n)
	r.line("%s %s %s[%d];", g.shared, typ, lds, lanes)
	r.line("%s[lidx0] = %s;", lds, acc)
	r.line("%s", g.barrier)
	r.line("for (int s = %d; s > 0; s >>= 1) {", lanes/2)
	r.indent++
	r.line("if (lidx0 < s) { %s }", combine(lds+"[lidx0]", lds+"[lidx0+s]"))
	r.line("%s", g.barrier)
	r.indent--
	r.line("}")
	r.line("%s = %s[0];", acc, lds)
	r.names[e] = acc
}

// randSource is tg_rand (render.RandC) in a GPU dialect: the same integer
// arithmetic, so the same bits on every device.
func randSource(qual, u64, i64, sfx string) string {
	s := `QUAL U64 tg_mix(U64 x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9SFX;
  x ^= x >> 27; x *= 0x94d049bb133111ebSFX;
  return x ^ (x >> 31);
}
QUAL float tg_rand(I64 seed, I64 ctr, I64 idx) {
  U64 x = tg_mix((U64)seed + 0x9e3779b97f4a7c15SFX * ((U64)ctr + 1));
  x = tg_mix(x ^ ((U64)idx * 0xd1b54a32d192ed03SFX));
  return (float)(x >> 40) * (1.0f / 16777216.0f);
}
`
	return strings.NewReplacer("QUAL", qual, "U64", u64, "I64", i64, "SFX", sfx).Replace(s)
}

// gpuParams lists a kernel's buffer and var parameters as "TYPE NAME"
// strings: bufType gives a buffer's declaration, varType the vars' type.
func gpuParams(k *ir.Kernel, buf func(i int, b ir.BufParam) string, varDecl func(i int) string) []string {
	var ps []string
	for i, b := range k.Bufs {
		ps = append(ps, buf(i, b))
	}
	for i := 0; i < k.NumParams; i++ {
		ps = append(ps, varDecl(i))
	}
	return ps
}
