package ir

// TILE is cache blocking of an output axis, GotoBLAS's mc: a matmul's
// rows split into groups whose slice of the left operand (mc rows by the
// reduce's kc, with KBLOCK) stays in L2 while every column panel of the
// right operand streams past it. Without it each column panel reads all
// of the left operand from L3 or memory (64 MB per panel at 4096):
//
//	for rowgroup: for kb: for panel: for rows in group: acc = sum over kc
//
// The group loop goes outermost, so the cores split the row groups; the
// loop within a group keeps the axis's place among the others.

// Tile splits global axis a of k (a loop after any upcast) into an
// outermost loop over a.Size/n blocks and a loop of n within a block, in
// a's place. n must divide a.Size.
func Tile(k *Kernel, a *Axis, n int64) *Kernel {
	id := 0
	for _, g := range k.Global {
		id = max(id, g.ID+1)
	}
	for _, r := range k.ReduceAxes() {
		id = max(id, r.ID+1)
	}
	blk := &Axis{ID: id, Size: a.Size / n, Kind: AxisGlobal}
	in := &Axis{ID: a.ID, Size: n, Kind: AxisGlobal}
	nk := k.rewrite(func(b *Builder, e *Expr) *Expr {
		if e.Op == OpVar && e.Arg.(*Axis) == a {
			return b.Add(b.Mul(b.Var(blk), b.Int(n)), b.Var(in))
		}
		return nil
	})
	nk.Global = []*Axis{blk}
	for _, g := range k.Global {
		if g == a {
			g = in
		}
		nk.Global = append(nk.Global, g)
	}
	return nk
}
