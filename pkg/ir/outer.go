package ir

import "slices"

// minOuter is the fewest iterations the loop a CPU launch splits across
// cores should have: the launcher cuts each core's range into up to 8
// pieces (backend/csrc/launch.c), and a core done with its own takes the
// pieces the others have not started, so a short outer loop (a batch of 8
// images: pieces of a whole image, 0.5 ms of a ResNet-50 conv) leaves one
// core waiting for the other's last piece whenever the two did not start
// together.
const minOuter = 64

// MergeOuter fuses the outermost global loop with the next one while it
// has fewer than minOuter iterations, even where that costs a division and
// a modulo per iteration of the merged loop (MergeAxes merges only where it
// costs nothing): the merged loop keeps the order of the two (so OUTER's
// column panels stay outermost) and gives the launcher pieces of a few
// register blocks instead of one image or one panel. Applied after the
// opts, to the loops they made; not to a kernel with KBLOCK (its block loop,
// right inside the core split, must run in order for each output on one
// core) or TILE, nor to a row kernel (its reduces are computed inside the
// outer loops, and a merged loop would compute them once per iteration),
// nor to loops of symbolic size. The innermost loop is not merged into the
// outer one in a kernel with guarded loads: skip_zeros and row_guards test
// a padding's rows before the columns' loop, which must stay a loop of its
// own (a conv's vector lanes run along it). The merged kernel is kept only if Verify
// proves its accesses in bounds, as it did the unmerged one's.
func MergeOuter(k *Kernel) *Kernel {
	if k.HasSym() || len(k.Global) < 2 || k.Global[0].Size >= minOuter {
		return k
	}
	if slices.ContainsFunc(k.Opts, func(o Opt) bool { return o.Kind == OptKBlock || o.Kind == OptTile }) {
		return k
	}
	if hoistsRows(k) {
		return k
	}
	guarded := GuardedLoads(k)
	orig := k
	for len(k.Global) >= 2 && k.Global[0].Size < minOuter && (len(k.Global) > 2 || !guarded) {
		outer, inner := k.Global[0], k.Global[1]
		merged := &Axis{ID: outer.ID, Size: outer.Size * inner.Size, Kind: AxisGlobal}
		nk := k.rewrite(func(b *Builder, e *Expr) *Expr {
			if e.Op != OpVar {
				return nil
			}
			switch e.Arg.(*Axis) {
			case outer:
				return b.Div(b.Var(merged), b.Int(inner.Size))
			case inner:
				return b.Mod(b.Var(merged), b.Int(inner.Size))
			}
			return nil
		})
		nk.Global = append([]*Axis{merged}, k.Global[2:]...)
		k = nk
	}
	if k.Verify() != nil {
		return orig
	}
	return k
}
