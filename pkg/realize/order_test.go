package realize

import (
	"fmt"
	"math"
	"runtime/metrics"
	"strings"
	"testing"

	"tgc/pkg/backend"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

// TestLeafReadersRunJustBeforeTheirUser: kernels that read only realized
// leaves (here a "dequantization" of each weight into a float copy, as a
// quantized prompt's matmuls store it) launch right before the kernel
// that reads their output, so one copy is live at a time: the device's
// peak is the activations and one copy, not every copy at once. The
// values match a float64 computation.
func TestLeafReadersRunJustBeforeTheirUser(t *testing.T) {
	const rows, n, layers = 32, 64, 3
	for _, dev := range []string{"GO", "CPU"} {
		ctx, e, err := NewContext(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		mem, counts := e.Dev.(backend.MemoryCounter)
		x := seq(ctx, rows, n).Realize()
		ws := make([]*tensor.Tensor, layers)
		for k := range ws {
			ws[k] = seq(ctx, n, n).Mul(ctx.Full([]int{n, n}, 0.01*float64(k+1), ir.Float32)).Realize()
		}
		old := map[string]bool{}
		for key := range e.cache {
			old[key] = true
		}
		var before int64
		if counts {
			before = mem.Memory().Live
			mem.ResetPeak()
		}
		// a feed-forward block's shape, w3(relu(x w1) * (x w2)), each
		// weight read through its float copy (a kernel reading only a leaf)
		cp := make([]*tensor.Tensor, layers)
		for k := range ws {
			cp[k] = ws[k].Mul(ctx.Full([]int{n, n}, 3, ir.Float32)).Contiguous()
		}
		h := x.Dot(cp[0].T()).Relu().Mul(x.Dot(cp[1].T())).Dot(cp[2].T())
		got, err := h.Floats()
		if err != nil {
			t.Fatal(err)
		}

		// the order: each leaf-only kernel just before its first reader
		if len(e.cache) != len(old)+1 {
			t.Fatalf("%s: %d schedules compiled, want 1", dev, len(e.cache)-len(old))
		}
		for key, c := range e.cache {
			if old[key] {
				continue
			}
			moved := 0
			for p, i := range c.order {
				leavesOnly := true
				for _, r := range c.items[i].args[1:] {
					leavesOnly = leavesOnly && r.leaf
				}
				if !leavesOnly {
					continue
				}
				moved++
				if p+1 >= len(c.order) || !reads(c.items[c.order[p+1]], i) {
					t.Errorf("%s: leaf-only kernel %s at %d is not followed by its reader (order %v)", dev, c.items[i].name, p, c.order)
				}
			}
			if moved != layers {
				t.Errorf("%s: %d leaf-only kernels, want %d", dev, moved, layers)
			}
		}
		if counts {
			// one copy and three activations (the two products and
			// the output, or the transposed input the products read)
			copyBytes, actBytes := int64(n*n*4), int64(rows*n*4)
			if extra := mem.Memory().Peak - before; extra > copyBytes+3*actBytes {
				t.Errorf("%s: the device's peak rose by %d bytes, more than one %d-byte copy and three %d-byte activations", dev, extra, copyBytes, actBytes)
			}
		}

		// the values, in float64
		xv, _ := x.Floats()
		w := make([][]float64, layers)
		for k := range ws {
			w[k], _ = ws[k].Floats()
		}
		dot := func(a []float64, k int) []float64 {
			out := make([]float64, rows*n)
			for r := range rows {
				for j := range n {
					for q := range n {
						out[r*n+j] += a[r*n+q] * 3 * w[k][j*n+q]
					}
				}
			}
			return out
		}
		a, b := dot(xv, 0), dot(xv, 1)
		for i := range a {
			a[i] = math.Max(a[i], 0) * b[i]
		}
		for i, want := range dot(a, 2) {
			if math.Abs(got[i]-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Fatalf("%s: out[%d] = %v, want %v", dev, i, got[i], want)
			}
		}
	}
}

func reads(it compiledItem, i int) bool {
	for _, r := range it.args[1:] {
		if !r.leaf && r.idx == i {
			return true
		}
	}
	return false
}

// TestReleaseAfterCompile: a compile that allocates more than
// ReleaseAfterCompile bytes gives the freed heap back (a forced
// collection, debug.FreeOSMemory) before its schedule runs; below the
// threshold, or with the option off, nothing is forced. A cached schedule
// compiles nothing and releases nothing.
func TestReleaseAfterCompile(t *testing.T) {
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	for _, tc := range []struct {
		release uint64
		want    bool
	}{{0, false}, {1, true}, {1 << 40, false}} {
		ctx, _, err := NewContext("GO", Options{ReleaseAfterCompile: tc.release})
		if err != nil {
			t.Fatal(err)
		}
		build := func() *tensor.Tensor { return seq(ctx, 8, 8).Dot(seq(ctx, 8, 8)).Relu() }
		before := forced()
		if _, err := build().Floats(); err != nil {
			t.Fatal(err)
		}
		if got := forced() > before; got != tc.want {
			t.Errorf("ReleaseAfterCompile %d: a collection forced = %v, want %v", tc.release, got, tc.want)
		}
		before = forced()
		if _, err := build().Floats(); err != nil { // the schedule is cached
			t.Fatal(err)
		}
		if forced() != before {
			t.Errorf("ReleaseAfterCompile %d: a cached schedule forced a collection", tc.release)
		}
	}
}

// TestAssignChainsRunFirst: a schedule that writes a cache (an assign of a
// value computed from scratch nothing else reads) and, independently,
// scores that it then multiplies by the cache: the assign's kernels
// launch before the scores' (topoOrder), so a prompt's value projection
// and its scratch are done with before the softmax's buffers are live. The
// values match a float64 computation.
func TestAssignChainsRunFirst(t *testing.T) {
	const n, d = 16, 32
	for _, dev := range []string{"GO", "CPU"} {
		ctx, e, err := NewContext(dev, Options{})
		if err != nil {
			t.Logf("skipping %s: %v", dev, err)
			continue
		}
		x := seq(ctx, n, d).Mul(ctx.Full([]int{n, d}, 0.1, ir.Float32)).Realize()
		w := seq(ctx, d, d).Mul(ctx.Full([]int{d, d}, 0.01, ir.Float32)).Realize()
		cache := ctx.Full([]int{n, d}, 0, ir.Float32).Contiguous().Realize()
		xv, _ := x.Floats()
		wv, _ := w.Floats()
		old := map[string]bool{}
		for key := range e.cache {
			old[key] = true
		}
		cache.Assign(x.Dot(w).Contiguous().Mul(ctx.Full([]int{n, d}, 2, ir.Float32)))
		out := x.Dot(x.T()).Softmax(-1).Dot(cache)
		if err := tensor.RealizeAll(out, cache); err != nil {
			t.Fatal(err)
		}
		got, _ := out.Floats()
		for i := range n {
			s := make([]float64, n)
			m := math.Inf(-1)
			for j := range n {
				for k := range d {
					s[j] += xv[i*d+k] * xv[j*d+k]
				}
				m = max(m, s[j])
			}
			sum := 0.0
			for j := range s {
				s[j] = math.Exp(s[j] - m)
				sum += s[j]
			}
			for c := range d {
				want := 0.0
				for j := range n {
					v := 0.0
					for k := range d {
						v += xv[j*d+k] * wv[k*d+c]
					}
					want += s[j] / sum * 2 * v
				}
				if math.Abs(got[i*d+c]-want) > 1e-4*(1+math.Abs(want)) {
					t.Fatalf("%s: out[%d,%d] = %v, want %v", dev, i, c, got[i*d+c], want)
				}
			}
		}
		for key, c := range e.cache {
			if old[key] {
				continue
			}
			assignAt, scoresAt := -1, -1
			for p, i := range c.order {
				it := c.items[i]
				if it.dst >= 0 {
					assignAt = p
				}
				if scoresAt < 0 && len(it.args) == 2 && it.args[1].leaf && strings.HasPrefix(it.name, fmt.Sprintf("r_%d_%d_", n, n)) {
					scoresAt = p
				}
			}
			if assignAt < 0 || scoresAt < 0 || assignAt > scoresAt {
				var names []string
				for _, i := range c.order {
					names = append(names, c.items[i].name)
				}
				t.Errorf("%s: the assign at %d, the scores at %d: %v", dev, assignAt, scoresAt, names)
			}
		}
	}
}
