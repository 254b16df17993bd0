package render

import (
	"fmt"

	"tgc/pkg/ir"
)

// A lagged column loop (ir.Stream.Lag): a row's column loop, its streamed
// lines, runs inside the next row's kept loop (ir.Stream.Loop: a row
// kernel without a keep plan, its first sum's), Lag lines an iteration,
// and the launch's last row's after the rows. It is the same C as the
// column loop's, in a block that declares the previous row's index, its
// scratch row and the row values it reads (saved at the end of that row)
// under the names the loop's C uses, so the block's declarations shadow
// the current row's.

// declareLag finds the row's values the column loop reads (r.lag) and
// declares a variable for each, before the rows.
func (r *renderer) declareLag() {
	row := map[*ir.Expr]bool{}
	for _, e := range r.prog.Hoisted[1].Nodes {
		if r.prog.Named(e) {
			row[e] = true
		}
	}
	seen := map[*ir.Expr]bool{}
	var visit func(e *ir.Expr)
	visit = func(e *ir.Expr) {
		if seen[e] || r.keep != nil && e == r.keep.Value || r.dead[e] {
			return
		}
		seen[e] = true
		if row[e] {
			r.lag = append(r.lag, e)
			return
		}
		for _, s := range e.Src {
			visit(s)
		}
	}
	for _, e := range r.prog.Innermost.Nodes {
		visit(e)
	}
	for _, s := range r.prog.Stores {
		visit(s)
	}
	for i, e := range r.lag {
		r.line("%s tg_lag%d = 0;", r.typ(e.DType), i)
	}
}

// laggedLines writes, in an iteration of the kept loop over axes, the
// previous row's Lag lines at that iteration (none in a launch's first
// row).
func (r *renderer) laggedLines(axes []*ir.Axis) {
	row := r.k.Global[0].Name()
	it := axes[0].Name()
	for _, a := range axes[1:] {
		it = fmt.Sprintf("(%s*%d+%s)", it, a.Size, a.Name())
	}
	r.line("if (%s > start) {", row)
	r.indent++
	r.line("%s tg_prev = %s - 1;", r.idx, row)
	r.line("for (int tg_q = 0; tg_q < %d; tg_q++) {", r.k.Stream.Lag)
	r.indent++
	r.previousRow(fmt.Sprintf("(%s*%d+tg_q)*16", it, r.k.Stream.Lag))
	r.indent--
	r.line("}")
	r.indent--
	r.line("}")
}

// lastLagRow writes the launch's last row's column loop, after the rows.
func (r *renderer) lastLagRow() {
	col := r.k.Global[1]
	r.line("if (end > start) {")
	r.indent++
	r.line("%s tg_prev = end - 1;", r.idx)
	r.line("for (%s %s_line = 0; %s_line < %d; %s_line += 16) {", r.idx, col.Name(), col.Name(), col.Size, col.Name())
	r.indent++
	r.previousRow(col.Name() + "_line")
	r.indent--
	r.line("}")
	r.indent--
	r.line("}")
}

// previousRow writes one line of row tg_prev's column loop, at column
// lineStart: the column loop's C under the previous row's names.
func (r *renderer) previousRow(lineStart string) {
	col := r.k.Global[1]
	r.line("%s %s = tg_prev;", r.idx, r.k.Global[0].Name())
	if r.keep != nil {
		r.line("float *tg_keep = tg_keep2[%s & 1];", r.k.Global[0].Name())
	}
	saved := map[*ir.Expr]string{}
	for i, e := range r.lag {
		if n, ok := r.names[e]; ok {
			saved[e] = n
		}
		r.names[e] = fmt.Sprintf("tg_lag%d", i)
	}
	inner := map[*ir.Expr]bool{}
	for _, e := range r.prog.Innermost.Nodes {
		if _, ok := r.names[e]; !ok {
			inner[e] = true
		}
	}
	r.openLine(col, lineStart)
	r.block(r.prog.Innermost)
	r.storeLine(r.k.ColumnStore())
	r.closeLine()
	r.need("tg_stream", cStreamDef)
	for e := range inner { // out of scope with the block
		delete(r.names, e)
	}
	for _, e := range r.lag {
		if n, ok := saved[e]; ok {
			r.names[e] = n
		} else {
			delete(r.names, e)
		}
	}
}
