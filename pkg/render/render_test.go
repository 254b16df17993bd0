package render

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tgc/pkg/fuse"
	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func input(dt ir.DType, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	t, err := tc.FromFloats(dt, shape, make([]float64, n))
	if err != nil {
		panic(err)
	}
	return t
}

// goldenGraphs are the graphs whose rendered kernels are pinned.
func goldenGraphs() map[string]*tensor.Tensor {
	a, b := input(ir.Float32, 64, 32), input(ir.Float32, 32, 16)
	x := input(ir.Float32, 8, 10)
	h := input(ir.Float16, 4, 4)
	i := input(ir.Int32, 5, 6)
	zero := tc.Const(0, ir.Float32)
	e := x.Sub(x.Max(true, 1)).Exp2()
	u8, i8 := input(ir.Uint8, 4, 4), input(ir.Int8, 4, 4)
	j := input(ir.Int32, 5, 6)
	bf := input(ir.BFloat16, 4, 4)
	f64 := input(ir.Float64, 8, 10)
	l, ul := input(ir.Int64, 5, 6), input(ir.Uint64, 5, 6)
	u16, f32 := input(ir.Uint16, 4, 4), input(ir.Float32, 4, 4)
	tc.ManualSeed(0)
	return map[string]*tensor.Tensor{
		// the dtype rules of docs/language.md: narrowing inside the kernel,
		// division guards, saturating float-to-int casts, bool logic,
		// float16 rounded per op, 64-bit indices past 2^31
		"narrow_ints":  u8.Mul(tc.Const(2, ir.Uint8)).Cast(ir.Int32).Add(i8.Neg().Cast(ir.Int32)),
		"int_div":      i.IDiv(j).Add(i.Fmod(j)),
		"float_to_int": x.Cast(ir.Int32).Add(x.Cast(ir.Uint8).Cast(ir.Int32)),
		"bool_logic":   x.Gt(zero).Add(x.Lt(zero).Mul(x.Ne(zero))).Cast(ir.Int32),
		"half_chain":   h.Mul(h).Add(h),
		"wide_index":   input(ir.Uint8, 1, 1).Expand(65536, 65536).Contiguous(),
		// the dtypes of the model loaders: bfloat16 bits in buffers, float64
		// math, 64-bit and unsigned integer rules, bit reinterpretation
		"bf16_chain":   bf.Mul(bf).Add(bf).Sqrt(),
		"f64_math":     f64.Exp2().Add(f64.Sqrt()).Mul(f64.Cast(ir.Float32).Cast(ir.Float64)).Cast(ir.Int64),
		"int64_ops":    l.IDiv(l.Add(tc.ConstInt(1, ir.Int64))).Add(l.Mul(l)).Cast(ir.Uint64).Maximum(ul).Lt(ul.Add(ul)),
		"bitcast":      u16.Bitcast(ir.Float16).Cast(ir.Float32).Mul(f32.Bitcast(ir.Int32).Cast(ir.Float32)).Add(bf.Bitcast(ir.Int16).Cast(ir.Float32)),
		"matmul_relu":  a.Reshape(64, 32, 1).Mul(b.Reshape(1, 32, 16)).Sum(false, 1).Maximum(zero),
		"softmax":      e.Div(e.Sum(true, 1)),
		"pad_flip":     x.Pad([][2]int{{1, 1}, {0, 3}}, 0).Flip(1).Sqrt(),
		"half_cast":    h.Cast(ir.Float32).Mul(h.Cast(ir.Float32)).Cast(ir.Float16),
		"int_ops":      i.IDiv(tc.Const(3, ir.Int32)).Add(i.Permute(1, 0).Reshape(5, 6)),
		"rand_uniform": tc.Rand(4, 8).Mul(tc.Const(2, ir.Float32)),
		"where_cmp":    x.Lt(zero).Where(x.Neg(), x.Exp2()),
		// the op table's helper functions, one per dtype
		"shifts": i.Shl(i.Permute(1, 0).Reshape(5, 6)).Add(i.Shr(tc.Const(3, ir.Int32))).
			Cast(ir.Int8).Shr(input(ir.Int8, 5, 6)).Cast(ir.Uint8).Shl(tc.Const(1, ir.Uint8)),
	}
}

func TestGoldenC(t *testing.T) {
	for name, out := range goldenGraphs() {
		if err := out.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, err := fuse.Create([]*tensor.Node{out.Node()}, fuse.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, it := range s.Items {
			k, err := ir.Optimize(it.Kernel, nil)
			if err != nil {
				t.Fatal(err)
			}
			k.Name = it.Kernel.Name
			src := Render(C, k)
			if again := Render(C, k); again != src {
				t.Fatalf("%s: rendering is not stable", name)
			}
			parts = append(parts, src)
		}
		got := strings.Join(parts, "\n")
		path := filepath.Join("testdata", name+".c")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./pkg/render -update to create it)", name, err)
		}
		if got != string(want) {
			t.Errorf("%s: rendered C differs from %s:\n%s", name, path, got)
		}
	}
}

// tc is the context of this package's test graphs (they are scheduled and
// rendered, never realized).
var tc = tensor.NewContext(nil)
