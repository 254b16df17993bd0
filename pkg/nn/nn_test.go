package nn_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"tgc/pkg/autograd"
	"tgc/pkg/ir"
	"tgc/pkg/nn"
	"tgc/pkg/realize"
	"tgc/pkg/tensor"
)

var (
	engine *realize.Engine
	tc     *tensor.Context // the tests' tensors (GO device), training
)

func TestMain(m *testing.M) {
	var err error
	tc, engine, err = realize.NewContext("GO", realize.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tc.SetTraining(true)
	os.Exit(m.Run())
}

func buf(t *testing.T, dt ir.DType, shape []int, vals ...float64) *tensor.Tensor {
	t.Helper()
	x, err := tc.FromFloats(dt, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func read(t *testing.T, x *tensor.Tensor) []float64 {
	t.Helper()
	v, err := x.Floats()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

// The loss of the optimizer tests is sum(a*p*p): its gradient is 2*a*p.
var optA = []float64{0.5, 1, -0.25, 2}

func quadLoss(p *tensor.Tensor, t *testing.T) *tensor.Tensor {
	return p.Mul(p).Mul(buf(t, ir.Float32, []int{4}, optA...)).Sum(false)
}

// runOpt takes three steps of opt on p and returns p after each step.
func runOpt(t *testing.T, p *tensor.Tensor, opt nn.Optimizer) [][]float64 {
	t.Helper()
	var out [][]float64
	for range 3 {
		opt.ZeroGrad()
		if err := autograd.Backward(quadLoss(p, t)); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		out = append(out, read(t, p))
	}
	return out
}

func p0() []float64 { return []float64{1, -2, 3, 0.5} }

func TestSGD(t *testing.T) {
	for _, c := range []struct {
		lr, momentum, wd float64
		nesterov         bool
	}{{0.1, 0, 0, false}, {0.1, 0.9, 0.1, false}, {0.05, 0.8, 0.01, true}} {
		name := fmt.Sprintf("lr=%g,momentum=%g,wd=%g,nesterov=%v", c.lr, c.momentum, c.wd, c.nesterov)
		p := buf(t, ir.Float32, []int{4}, p0()...).SetRequiresGrad(true)
		opt, err := nn.NewSGD([]*tensor.Tensor{p}, c.lr, c.momentum, c.wd, c.nesterov)
		if err != nil {
			t.Fatal(err)
		}
		got := runOpt(t, p, opt)
		// by hand, PyTorch's SGD
		w := p0()
		b := make([]float64, 4)
		for step := range 3 {
			for i := range w {
				g := 2*optA[i]*w[i] + c.wd*w[i]
				if c.momentum != 0 {
					b[i] = c.momentum*b[i] + g
					if c.nesterov {
						g += c.momentum * b[i]
					} else {
						g = b[i]
					}
				}
				w[i] -= c.lr * g
			}
			near(t, fmt.Sprintf("SGD(%s) step %d", name, step+1), got[step], w, 1e-5)
		}
	}
}

func TestAdamAndAdamW(t *testing.T) {
	for _, wd := range []float64{0, 0.1} {
		const lr, b1, b2, eps = 0.1, 0.9, 0.99, 1e-8
		p := buf(t, ir.Float32, []int{4}, p0()...).SetRequiresGrad(true)
		opt, err := nn.NewAdamW([]*tensor.Tensor{p}, lr, b1, b2, eps, wd)
		if err != nil {
			t.Fatal(err)
		}
		got := runOpt(t, p, opt)
		w := p0()
		m, v := make([]float64, 4), make([]float64, 4)
		for step := range 3 {
			tt := float64(step + 1)
			for i := range w {
				g := 2 * optA[i] * w[i]
				m[i] = b1*m[i] + (1-b1)*g
				v[i] = b2*v[i] + (1-b2)*g*g
				mh := m[i] / (1 - math.Pow(b1, tt))
				vh := v[i] / (1 - math.Pow(b2, tt))
				w[i] -= lr * (mh/(math.Sqrt(vh)+eps) + wd*w[i])
			}
			near(t, fmt.Sprintf("AdamW(wd=%g) step %d", wd, step+1), got[step], w, 1e-5)
		}
	}
}

func TestOptimizerErrors(t *testing.T) {
	p := buf(t, ir.Float32, []int{2}, 1, 2).SetRequiresGrad(true)
	opt, err := nn.NewSGD([]*tensor.Tensor{p}, 0.1, 0, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(); err == nil || !strings.Contains(err.Error(), "no gradient") {
		t.Errorf("step without backward: %v", err)
	}
	if _, err := nn.NewAdam([]*tensor.Tensor{buf(t, ir.Float32, []int{2}, 1, 2)}, 0.1, 0.9, 0.999, 1e-8); err == nil {
		t.Errorf("optimizer without a parameter that requires grad: no error")
	}
	tc.SetTraining(false)
	defer tc.SetTraining(true)
	if err := autograd.Backward(p.Sum(false)); err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(); err == nil || !strings.Contains(err.Error(), "training") {
		t.Errorf("step outside training: %v", err)
	}
}

// mlp is a model made of layers, walked by StateDict.
type mlp struct {
	L1, L2 *nn.Linear
	BN     *nn.BatchNorm
}

func newMLP() *mlp {
	return &mlp{L1: nn.NewLinear(tc, 2, 16, true), L2: nn.NewLinear(tc, 16, 2, true), BN: nn.NewBatchNorm(tc, 16)}
}

func (m *mlp) forward(x *tensor.Tensor) *tensor.Tensor {
	return m.L2.Forward(m.BN.Forward(m.L1.Forward(x)).Relu())
}

// dataset: points in [-1, 1]², class 1 where x0*x1 > 0 (not linearly
// separable).
func dataset(t *testing.T, n int) (*tensor.Tensor, *tensor.Tensor) {
	var xs, ys []float64
	s := uint64(7)
	for range n {
		var p [2]float64
		for j := range p {
			s = s*6364136223846793005 + 1442695040888963407
			p[j] = 2*float64(s>>11)/float64(1<<53) - 1
		}
		xs = append(xs, p[0], p[1])
		y := 0.0
		if p[0]*p[1] > 0 {
			y = 1
		}
		ys = append(ys, y)
	}
	return buf(t, ir.Float32, []int{n, 2}, xs...), buf(t, ir.Int32, []int{n}, ys...)
}

func TestTrainMLP(t *testing.T) {
	tc.ManualSeed(1)
	m := newMLP()
	opt, err := nn.NewAdam(nn.Parameters(m), 0.05, 0.9, 0.999, 1e-8)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(opt.Params()); n != 6 { // running stats are buffers, not parameters
		t.Errorf("%d parameters, want 6", n)
	}
	x, y := dataset(t, 64)
	var losses []float64
	var scheduled int
	for step := range 25 {
		opt.ZeroGrad()
		loss := m.forward(x).SparseCategoricalCrossentropy(y, -1, 0, "mean")
		if err := autograd.Backward(loss); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(loss); err != nil {
			t.Fatal(err)
		}
		l, err := loss.Item()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
		if step == 2 {
			scheduled = engine.Stats.Scheduled
		}
	}
	if engine.Stats.Scheduled != scheduled {
		t.Errorf("steps after the third scheduled %d new graphs: the training step must hit the schedule cache", engine.Stats.Scheduled-scheduled)
	}
	first, last := losses[0], losses[len(losses)-1]
	if !(last < 0.5*first) || math.IsNaN(last) {
		t.Errorf("loss did not decrease enough: %v", losses)
	}
	// evaluation uses the running statistics, which moved off their init
	rm := read(t, m.BN.RunningMean)
	moved := false
	for _, v := range rm {
		moved = moved || v != 0
	}
	if !moved {
		t.Errorf("BatchNorm running mean never updated: %v", rm)
	}
	if nb := read(t, m.BN.NumBatchesTracked); nb[0] != 25 {
		t.Errorf("num_batches_tracked = %v, want 25", nb)
	}
	tc.SetTraining(false)
	defer tc.SetTraining(true)
	acc := m.forward(x).Argmax(ptr(1), false).Eq(y).Cast(ir.Float32).Mean(false)
	if a, err := acc.Item(); err != nil || a < 0.8 {
		t.Errorf("eval accuracy %v (%v), want >= 0.8 after training", a, err)
	}
}

func ptr(i int) *int { return &i }

func TestStepKernelCount(t *testing.T) {
	tc.ManualSeed(2)
	layers := []*nn.Linear{nn.NewLinear(tc, 8, 16, true), nn.NewLinear(tc, 16, 16, true), nn.NewLinear(tc, 16, 4, true)}
	x := buf(t, ir.Float32, []int{2, 8}, make([]float64, 16)...)
	for name, mk := range map[string]func(ps []*tensor.Tensor) (nn.Optimizer, error){
		"sgd":  func(ps []*tensor.Tensor) (nn.Optimizer, error) { return nn.NewSGD(ps, 0.1, 0, 0, false) },
		"adam": func(ps []*tensor.Tensor) (nn.Optimizer, error) { return nn.NewAdam(ps, 0.1, 0.9, 0.999, 1e-8) },
	} {
		ps := nn.Parameters(layers)
		opt, err := mk(ps)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			h := x
			for _, l := range layers {
				h = l.Forward(h).Relu()
			}
			opt.ZeroGrad()
			loss := h.Sum(false)
			if err := autograd.Backward(loss); err != nil {
				t.Fatal(err)
			}
			grads := []*tensor.Tensor{loss} // the step would realize the loss with the update
			for _, p := range ps {
				grads = append(grads, p.Grad)
			}
			if err := tensor.RealizeAll(grads...); err != nil {
				t.Fatal(err)
			}
			k0, r0 := engine.Stats.Kernels, engine.Stats.Realizes
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			kernels, realizes := engine.Stats.Kernels-k0, engine.Stats.Realizes-r0
			// one kernel per updated tensor: SGD updates the parameter,
			// Adam the parameter, m and v, plus b1^t and b2^t
			want := len(ps)
			if name == "adam" {
				want = 3*len(ps) + 2
			}
			if realizes != 1 || kernels > want {
				t.Errorf("%s step: %d kernels in %d realizes, want at most %d kernels in 1", name, kernels, realizes, want)
			}
		}
	}
}

func TestBatchNormStatistics(t *testing.T) {
	vals := []float64{1, 2, 3, -1, 0, 4, 2, 2, 5, 0, 1, -3}
	x := buf(t, ir.Float32, []int{3, 2, 2}, vals...) // N=3, C=2, L=2
	bn := nn.NewBatchNorm(tc, 2)
	bn.Weight.Assign(buf(t, ir.Float32, []int{2}, 2, 0.5))
	bn.Bias.Assign(buf(t, ir.Float32, []int{2}, 1, -1))
	y := bn.Forward(x)
	if err := tensor.RealizeAll(y, bn.RunningMean, bn.RunningVar); err != nil {
		t.Fatal(err)
	}
	// by hand
	w, b := []float64{2, 0.5}, []float64{1, -1}
	mean, varB := make([]float64, 2), make([]float64, 2)
	at := func(n, c, l int) float64 { return vals[n*4+c*2+l] }
	for c := range 2 {
		for n := range 3 {
			for l := range 2 {
				mean[c] += at(n, c, l) / 6
			}
		}
		for n := range 3 {
			for l := range 2 {
				d := at(n, c, l) - mean[c]
				varB[c] += d * d / 6
			}
		}
	}
	want := make([]float64, 12)
	for n := range 3 {
		for c := range 2 {
			for l := range 2 {
				want[n*4+c*2+l] = (at(n, c, l)-mean[c])/math.Sqrt(varB[c]+1e-5)*w[c] + b[c]
			}
		}
	}
	near(t, "train output", read(t, y), want, 1e-5)
	rm := []float64{0.1 * mean[0], 0.1 * mean[1]}
	rv := []float64{0.9 + 0.1*varB[0]*6/5, 0.9 + 0.1*varB[1]*6/5}
	near(t, "running mean", read(t, bn.RunningMean), rm, 1e-6)
	near(t, "running var", read(t, bn.RunningVar), rv, 1e-6)

	tc.SetTraining(false)
	defer tc.SetTraining(true)
	ye := bn.Forward(x)
	for n := range 3 {
		for c := range 2 {
			for l := range 2 {
				want[n*4+c*2+l] = (at(n, c, l)-rm[c])/math.Sqrt(rv[c]+1e-5)*w[c] + b[c]
			}
		}
	}
	near(t, "eval output", read(t, ye), want, 1e-5)
	near(t, "running mean unchanged in eval", read(t, bn.RunningMean), rm, 1e-6)
}

func TestLayers(t *testing.T) {
	tc.ManualSeed(3)
	x := buf(t, ir.Float32, []int{2, 3}, 1, 2, 4, -1, 0, 3)
	ln := nn.NewLayerNorm(tc, []int{3}, 1e-5, true)
	got := read(t, ln.Forward(x))
	for r := range 2 {
		row := []float64{1, 2, 4, -1, 0, 3}[3*r : 3*r+3]
		m := (row[0] + row[1] + row[2]) / 3
		v := 0.0
		for _, e := range row {
			v += (e - m) * (e - m) / 3
		}
		for j, e := range row {
			if w := (e - m) / math.Sqrt(v+1e-5); math.Abs(got[3*r+j]-w) > 1e-5 {
				t.Errorf("LayerNorm[%d,%d] = %v, want %v", r, j, got[3*r+j], w)
			}
		}
	}
	rms := nn.NewRMSNorm(tc, 3, 1e-6, true)
	got = read(t, rms.Forward(x))
	r0 := math.Sqrt((1 + 4 + 16) / 3.0)
	near(t, "RMSNorm row 0", got[:3], []float64{1 / r0, 2 / r0, 4 / r0}, 1e-5)

	emb := nn.NewEmbedding(tc, 5, 3)
	w := read(t, emb.Weight)
	idx := buf(t, ir.Int32, []int{2, 2}, 4, 0, 2, 4)
	got = read(t, emb.Forward(idx))
	var want []float64
	for _, i := range []int{4, 0, 2, 4} {
		want = append(want, w[3*i:3*i+3]...)
	}
	near(t, "Embedding", got, want, 0)

	lin := nn.NewLinear(tc, 3, 2, true)
	if s := lin.Weight.Shape(); s[0] != 2 || s[1] != 3 {
		t.Errorf("Linear weight shape %v, want (out, in)", s)
	}
	bound := 1 / math.Sqrt(3)
	for _, v := range read(t, lin.Weight) {
		if math.Abs(v) > bound {
			t.Errorf("Linear weight %v outside ±1/sqrt(in)", v)
		}
	}
	conv, err := nn.NewConv2d(tc, 4, 6, []int{3}, tensor.ConvOpts{Groups: 2, Padding: []int{1}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if s := conv.Weight.Shape(); fmt.Sprint(s) != "[6 2 3 3]" {
		t.Errorf("Conv2d weight shape %v", s)
	}
	if s := conv.Forward(tc.Rand(1, 4, 5, 5)).Shape(); fmt.Sprint(s) != "[1 6 5 5]" {
		t.Errorf("Conv2d output shape %v", s)
	}
	if _, err := nn.NewConv2d(tc, 3, 6, []int{3}, tensor.ConvOpts{Groups: 2}, true); err == nil {
		t.Errorf("Conv2d with channels not divisible by groups: no error")
	}
	tc.SetTraining(false)
	d := buf(t, ir.Float32, []int{4}, 1, 2, 3, 4)
	if nn.Dropout(d, 0.5) != d {
		t.Errorf("Dropout outside training changed the tensor")
	}
	tc.SetTraining(true)
	dv := read(t, nn.Dropout(tc.Ones([]int{1000}, ir.Float32), 0.5))
	zeros := 0
	for _, v := range dv {
		if v == 0 {
			zeros++
		} else if v != 2 {
			t.Fatalf("Dropout kept value %v, want 2", v)
		}
	}
	if zeros < 400 || zeros > 600 {
		t.Errorf("Dropout(0.5) zeroed %d of 1000", zeros)
	}
	near(t, "MSE", read(t, nn.MSE(d, tc.Zeros([]int{4}, ir.Float32), "mean")), []float64{7.5}, 1e-6)
}

func TestStateDictRoundTrip(t *testing.T) {
	tc.ManualSeed(4)
	type model struct {
		L1     *nn.Linear
		BN     *nn.BatchNorm
		Layers []*nn.Linear
		Skip   *nn.Linear    `nn:"-"`
		Emb    *nn.Embedding `nn:"tok_embeddings"`
	}
	mk := func() *model {
		return &model{L1: nn.NewLinear(tc, 3, 4, true), BN: nn.NewBatchNorm(tc, 4), Layers: []*nn.Linear{nn.NewLinear(tc, 4, 2, false)}, Skip: nn.NewLinear(tc, 1, 1, true), Emb: nn.NewEmbedding(tc, 3, 2)}
	}
	a := mk()
	sd := nn.StateDict(a)
	var names []string
	for n := range sd {
		names = append(names, n)
	}
	sort.Strings(names)
	want := "[bn.bias bn.num_batches_tracked bn.running_mean bn.running_var bn.weight l1.bias l1.weight layers.0.weight tok_embeddings.weight]"
	if fmt.Sprint(names) != want {
		t.Fatalf("state dict names %v, want %v", names, want)
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := nn.SafeSave(path, sd); err != nil {
		t.Fatal(err)
	}
	loaded, err := nn.SafeLoad(tc, path)
	if err != nil {
		t.Fatal(err)
	}
	b := mk()
	if err := nn.LoadStateDict(b, loaded, true); err != nil {
		t.Fatal(err)
	}
	sb := nn.StateDict(b)
	for _, n := range names {
		near(t, n, read(t, sb[n]), read(t, sd[n]), 0)
	}
	delete(loaded, "l1.bias")
	if err := nn.LoadStateDict(b, loaded, true); err == nil || !strings.Contains(err.Error(), "l1.bias") {
		t.Errorf("strict load with a missing entry: %v", err)
	}
	loaded["l1.bias"] = tc.Zeros([]int{5}, ir.Float32)
	if err := nn.LoadStateDict(b, loaded, false); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("load with a wrong shape: %v", err)
	}
}
