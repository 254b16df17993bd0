package script

import (
	"fmt"
	"math"

	"go.starlark.net/starlark"

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
	return func(c *call, t *tensor.Tensor) (starlark.Value, error) {
		var w tensorArg
		reverse := false
		if err := c.unpack(param, &w, "reverse?", &reverse); err != nil {
			return nil, err
		}
		if w.t == nil {
			return nil, fmt.Errorf("%s: for parameter %s: got None, want Tensor", name, param)
		}
		if reverse {
			return wrap(w.t.Dot(t))
		}
		return wrap(t.Dot(w.t))
	}
}

func linearMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	var w, b tensorArg
	if err := c.unpack("weight", &w, "bias?", &b); err != nil {
		return nil, err
	}
	if w.t == nil {
		return nil, fmt.Errorf("linear: for parameter weight: got None, want Tensor")
	}
	return wrap(t.Linear(w.t, b.t))
}

func conv2dMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	var w, b tensorArg
	groups := intArg(1)
	stride, dilation, padding := pairArg{[]int{1}}, pairArg{[]int{1}}, pairArg{[]int{0}}
	if err := c.unpack("weight", &w, "bias?", &b, "groups?", &groups, "stride?", &stride, "dilation?", &dilation, "padding?", &padding); err != nil {
		return nil, err
	}
	if w.t == nil {
		return nil, fmt.Errorf("conv2d: for parameter weight: got None, want Tensor")
	}
	return wrap(t.Conv2d(w.t, b.t, tensor.ConvOpts{Groups: int(groups), Stride: stride.v, Dilation: dilation.v, Padding: padding.v}))
}

// poolMethod binds max_pool2d / avg_pool2d(kernel_size=(2, 2), stride=None,
// dilation=1, padding=0, ceil_mode=False[, count_include_pad=True]).
func poolMethod(avg bool) methodFunc {
	return func(c *call, t *tensor.Tensor) (starlark.Value, error) {
		kernel, dilation, padding := pairArg{[]int{2, 2}}, pairArg{[]int{1}}, pairArg{[]int{0}}
		var stride pairArg
		var strideV starlark.Value = starlark.None
		ceil, countPad := false, true
		pairs := []any{"kernel_size?", &kernel, "stride?", &strideV, "dilation?", &dilation, "padding?", &padding, "ceil_mode?", &ceil}
		if avg {
			pairs = append(pairs, "count_include_pad?", &countPad)
		}
		if err := c.unpack(pairs...); err != nil {
			return nil, err
		}
		if strideV != starlark.None {
			if err := stride.Unpack(strideV); err != nil {
				return nil, fmt.Errorf("%s: for parameter stride: %v", c.name, err)
			}
		}
		o := tensor.PoolOpts{Kernel: kernel.v, Stride: stride.v, Dilation: dilation.v, Padding: padding.v, CeilMode: ceil}
		if avg {
			return wrap(t.AvgPool2d(o, countPad))
		}
		return wrap(t.MaxPool2d(o))
	}
}

func layernormMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	axis := axisArg{axes: []int{-1}}
	eps := floatArg(1e-5)
	if err := c.unpack("axis?", &axis, "eps?", &eps); err != nil {
		return nil, err
	}
	return wrap(t.Layernorm(float64(eps), axis.axes...))
}

func batchnormMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	var w, b, mean, invstd tensorArg
	axis := axisArg{axes: []int{1}}
	if err := c.unpack("weight", &w, "bias", &b, "mean", &mean, "invstd", &invstd, "axis?", &axis); err != nil {
		return nil, err
	}
	if mean.t == nil || invstd.t == nil {
		return nil, fmt.Errorf("batchnorm: mean and invstd must be tensors")
	}
	return wrap(t.Batchnorm(w.t, b.t, mean.t, invstd.t, axis.axes...))
}

func sparseCrossentropyMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	var y tensorArg
	ignore := intArg(-1)
	smoothing := floatArg(0)
	reduction := "mean"
	if err := c.unpack("Y", &y, "ignore_index?", &ignore, "label_smoothing?", &smoothing, "reduction?", &reduction); err != nil {
		return nil, err
	}
	if y.t == nil {
		return nil, fmt.Errorf("%s: for parameter Y: got None, want Tensor", c.name)
	}
	return wrap(t.SparseCategoricalCrossentropy(y.t, int(ignore), float64(smoothing), reduction))
}

func crossEntropyMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	var y tensorArg
	reduction := "mean"
	smoothing := floatArg(0)
	if err := c.unpack("Y", &y, "reduction?", &reduction, "label_smoothing?", &smoothing); err != nil {
		return nil, err
	}
	if y.t == nil {
		return nil, fmt.Errorf("%s: for parameter Y: got None, want Tensor", c.name)
	}
	return wrap(t.CrossEntropy(y.t, reduction, float64(smoothing)))
}

func lossMethod(f func(t, y *tensor.Tensor, reduction string) *tensor.Tensor) methodFunc {
	return func(c *call, t *tensor.Tensor) (starlark.Value, error) {
		var y tensorArg
		reduction := "mean"
		if err := c.unpack("Y", &y, "reduction?", &reduction); err != nil {
			return nil, err
		}
		if y.t == nil {
			return nil, fmt.Errorf("%s: for parameter Y: got None, want Tensor", c.name)
		}
		return wrap(f(t, y.t, reduction))
	}
}

// oneHotMethod is one_hot(num_classes=-1); -1 reads the largest label,
// which computes the labels now.
func oneHotMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	n := intArg(-1)
	if err := c.unpack("num_classes?", &n); err != nil {
		return nil, err
	}
	if n == -1 {
		if !t.DType().IsInt() {
			return wrap(t.OneHot(-1)) // reports the dtype error
		}
		if t.Numel() == 0 {
			return nil, fmt.Errorf("one_hot: num_classes=-1 needs at least one label")
		}
		vals, err := readValues(c, t.Max(false))
		if err != nil {
			return nil, err
		}
		if vals[0] < 0 || vals[0] >= math.MaxInt32 {
			return nil, fmt.Errorf("one_hot: the largest label is %v", vals[0])
		}
		n = intArg(vals[0] + 1)
	}
	return wrap(t.OneHot(int(n)))
}

func triMethod(f func(*tensor.Tensor, int) *tensor.Tensor) methodFunc {
	return func(c *call, t *tensor.Tensor) (starlark.Value, error) {
		diagonal := intArg(0)
		if err := c.unpack("diagonal?", &diagonal); err != nil {
			return nil, err
		}
		return wrap(f(t, int(diagonal)))
	}
}

// attentionMethod is scaled_dot_product_attention(key, value,
// attn_mask=None, dropout_p=0.0, is_causal=False).
func attentionMethod(c *call, t *tensor.Tensor) (starlark.Value, error) {
	var k, v, mask tensorArg
	dropout := floatArg(0)
	causal := false
	if err := c.unpack("key", &k, "value", &v, "attn_mask?", &mask, "dropout_p?", &dropout, "is_causal?", &causal); err != nil {
		return nil, err
	}
	if k.t == nil || v.t == nil {
		return nil, fmt.Errorf("%s: key and value must be tensors", c.name)
	}
	r := t.ScaledDotProductAttention(k.t, v.t, mask.t, causal)
	if dropout > 0 && t.Context().Training() {
		r = r.Dropout(float64(dropout))
	}
	return wrap(r)
}
