package realize

import (
	"math"
	"testing"

	"tgc/pkg/ir"
	"tgc/pkg/tensor"
)

func seq(shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i%7) - 2.5
	}
	t, err := tensor.FromFloats(ir.Float32, shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

func TestSmoke(t *testing.T) {
	for _, dev := range []string{"GO", "CPU"} {
		if _, err := Install(dev, Options{Debug: 3}); err != nil {
			t.Fatal(err)
		}
		a, b := seq(4, 6), seq(6, 3)
		c := a.Reshape(4, 6, 1).Mul(b.Reshape(1, 6, 3)).Sum(false, 1)
		got, err := c.Floats()
		if err != nil {
			t.Fatal(err)
		}
		av, _ := a.Floats()
		bv, _ := b.Floats()
		for i := 0; i < 4; i++ {
			for j := 0; j < 3; j++ {
				want := 0.0
				for k := 0; k < 6; k++ {
					want += av[i*6+k] * bv[k*3+j]
				}
				if math.Abs(got[i*3+j]-want) > 1e-4 {
					t.Errorf("%s: c[%d,%d] = %v, want %v", dev, i, j, got[i*3+j], want)
				}
			}
		}
		p := a.Pad([][2]int{{1, 1}, {0, 2}}, 0).Exp2().Sum(false, 0)
		pv, err := p.Floats()
		if err != nil {
			t.Fatal(err)
		}
		t.Log(dev, pv)
		r := tensor.Rand(3, 3)
		rv, err := r.Floats()
		t.Log(dev, rv, err)
	}
}
