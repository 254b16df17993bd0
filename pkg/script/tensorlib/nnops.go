package tensorlib

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"

	"tgc/pkg/script/pyrt"
	"tgc/pkg/tensor"
)

// Tensor methods for linear algebra, convolution, pooling, normalization
// and losses.

var nnMethods = map[string]methodFunc{
	"dot":                             dotMethod("dot", "w"),
	"matmul":                          dotMethod("matmul", "x"),
	"linear":                          linearMethod,
	"conv2d":                          conv2dMethod,
	"max_pool2d":                      poolMethod(false),
	"avg_pool2d":                      poolMethod(true),
	"layernorm":                       layernormMethod,
	"batchnorm":                       batchnormMethod,
	"sparse_categorical_crossentropy": sparseCrossentropyMethod,
	"cross_entropy":                   crossEntropyMethod,
	"binary_crossentropy":             lossMethod((*tensor.Tensor).BinaryCrossentropy),
	"binary_crossentropy_logits":      lossMethod((*tensor.Tensor).BinaryCrossentropyLogits),
	"one_hot":                         oneHotMethod,
	"tril":                            triMethod((*tensor.Tensor).Tril),
	"triu":                            triMethod((*tensor.Tensor).Triu),
	"scaled_dot_product_attention":    attentionMethod,
}

// dotMethod binds dot(w) and matmul(x, reverse=False).
func dotMethod(name, param string) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		var w TensorArg
		reverse := false
		if err := c.Unpack(param, &w, "reverse?", &reverse); err != nil {
			return nil, err
		}
		if w.t == nil {
			return nil, fmt.Errorf("%s: for parameter %s: got None, want Tensor", name, param)
		}
		if reverse {
			return Wrap(w.t.Dot(t))
		}
		return Wrap(t.Dot(w.t))
	}
}

func linearMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var w, b TensorArg
	if err := c.Unpack("weight", &w, "bias?", &b); err != nil {
		return nil, err
	}
	if w.t == nil {
		return nil, fmt.Errorf("linear: for parameter weight: got None, want Tensor")
	}
	return Wrap(t.Linear(w.t, b.t))
}

func conv2dMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var w, b TensorArg
	groups := IntArg(1)
	stride, dilation, padding := PairArg{[]int{1}}, PairArg{[]int{1}}, PairArg{[]int{0}}
	if err := c.Unpack("weight", &w, "bias?", &b, "groups?", &groups, "stride?", &stride, "dilation?", &dilation, "padding?", &padding); err != nil {
		return nil, err
	}
	if w.t == nil {
		return nil, fmt.Errorf("conv2d: for parameter weight: got None, want Tensor")
	}
	return Wrap(t.Conv2d(w.t, b.t, tensor.ConvOpts{Groups: int(groups), Stride: stride.v, Dilation: dilation.v, Padding: padding.v}))
}

// poolMethod binds max_pool2d / avg_pool2d(kernel_size=(2, 2), stride=None,
// dilation=1, padding=0, ceil_mode=False[, count_include_pad=True]).
func poolMethod(avg bool) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		kernel, dilation, padding := PairArg{[]int{2, 2}}, PairArg{[]int{1}}, PairArg{[]int{0}}
		var stride PairArg
		var strideV starlark.Value = starlark.None
		ceil, countPad := false, true
		pairs := []any{"kernel_size?", &kernel, "stride?", &strideV, "dilation?", &dilation, "padding?", &padding, "ceil_mode?", &ceil}
		if avg {
			pairs = append(pairs, "count_include_pad?", &countPad)
		}
		if err := c.Unpack(pairs...); err != nil {
			return nil, err
		}
		if strideV != starlark.None {
			if err := stride.Unpack(strideV); err != nil {
				return nil, fmt.Errorf("%s: for parameter stride: %v", c.Name, err)
			}
		}
		o := tensor.PoolOpts{Kernel: kernel.v, Stride: stride.v, Dilation: dilation.v, Padding: padding.v, CeilMode: ceil}
		if avg {
			return Wrap(t.AvgPool2d(o, countPad))
		}
		return Wrap(t.MaxPool2d(o))
	}
}

func layernormMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	axis := axisArg{axes: []int{-1}}
	eps := FloatArg(1e-5)
	if err := c.Unpack("axis?", &axis, "eps?", &eps); err != nil {
		return nil, err
	}
	return Wrap(t.Layernorm(float64(eps), axis.axes...))
}

func batchnormMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var w, b, mean, invstd TensorArg
	axis := axisArg{axes: []int{1}}
	if err := c.Unpack("weight", &w, "bias", &b, "mean", &mean, "invstd", &invstd, "axis?", &axis); err != nil {
		return nil, err
	}
	if mean.t == nil || invstd.t == nil {
		return nil, fmt.Errorf("batchnorm: mean and invstd must be tensors")
	}
	return Wrap(t.Batchnorm(w.t, b.t, mean.t, invstd.t, axis.axes...))
}

func sparseCrossentropyMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var y TensorArg
	ignore := IntArg(-1)
	smoothing := FloatArg(0)
	reduction := "mean"
	if err := c.Unpack("Y", &y, "ignore_index?", &ignore, "label_smoothing?", &smoothing, "reduction?", &reduction); err != nil {
		return nil, err
	}
	if y.t == nil {
		return nil, fmt.Errorf("%s: for parameter Y: got None, want Tensor", c.Name)
	}
	return Wrap(t.SparseCategoricalCrossentropy(y.t, int(ignore), float64(smoothing), reduction))
}

func crossEntropyMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var y TensorArg
	reduction := "mean"
	smoothing := FloatArg(0)
	if err := c.Unpack("Y", &y, "reduction?", &reduction, "label_smoothing?", &smoothing); err != nil {
		return nil, err
	}
	if y.t == nil {
		return nil, fmt.Errorf("%s: for parameter Y: got None, want Tensor", c.Name)
	}
	return Wrap(t.CrossEntropy(y.t, reduction, float64(smoothing)))
}

func lossMethod(f func(t, y *tensor.Tensor, reduction string) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		var y TensorArg
		reduction := "mean"
		if err := c.Unpack("Y", &y, "reduction?", &reduction); err != nil {
			return nil, err
		}
		if y.t == nil {
			return nil, fmt.Errorf("%s: for parameter Y: got None, want Tensor", c.Name)
		}
		return Wrap(f(t, y.t, reduction))
	}
}

// oneHotMethod is one_hot(num_classes=-1); -1 reads the largest label,
// which computes the labels now.
func oneHotMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	n := IntArg(-1)
	if err := c.Unpack("num_classes?", &n); err != nil {
		return nil, err
	}
	if n == -1 {
		if !t.DType().IsInt() {
			return Wrap(t.OneHot(-1)) // reports the dtype error
		}
		if t.Numel() == 0 {
			return nil, fmt.Errorf("one_hot: num_classes=-1 needs at least one label")
		}
		vals, err := ReadValues(c, t.Max(false))
		if err != nil {
			return nil, err
		}
		if vals[0] < 0 || vals[0] >= math.MaxInt32 {
			return nil, fmt.Errorf("one_hot: the largest label is %v", vals[0])
		}
		n = IntArg(vals[0] + 1)
	}
	return Wrap(t.OneHot(int(n)))
}

func triMethod(f func(*tensor.Tensor, int) *tensor.Tensor) methodFunc {
	return func(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
		diagonal := IntArg(0)
		if err := c.Unpack("diagonal?", &diagonal); err != nil {
			return nil, err
		}
		return Wrap(f(t, int(diagonal)))
	}
}

// attentionMethod is scaled_dot_product_attention(key, value,
// attn_mask=None, dropout_p=0.0, is_causal=False).
func attentionMethod(c *pyrt.Call, t *tensor.Tensor) (starlark.Value, error) {
	var k, v, mask TensorArg
	dropout := FloatArg(0)
	causal := false
	if err := c.Unpack("key", &k, "value", &v, "attn_mask?", &mask, "dropout_p?", &dropout, "is_causal?", &causal); err != nil {
		return nil, err
	}
	if k.t == nil || v.t == nil {
		return nil, fmt.Errorf("%s: key and value must be tensors", c.Name)
	}
	r := t.ScaledDotProductAttention(k.t, v.t, mask.t, causal)
	if dropout > 0 && t.Context().Training() {
		r = r.Dropout(float64(dropout))
	}
	return Wrap(r)
}
