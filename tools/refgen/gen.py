#!/usr/bin/python3
"""Reference test vectors for tgc's Tensor API (tinygrad semantics).

Computes, with numpy and independently of tgc, the expected outputs of small
Tensor expressions and writes them to

    testdata/ref/cases.json          case list: name, expr, inputs, atol, rtol
    testdata/ref/cases.safetensors   tensors "<case>.<input>" and "<case>.expected"

Float inputs are drawn in float64, rounded to their storage dtype, and the
expected values are computed in float64 from the rounded inputs, then rounded
to the output dtype. Each case draws from its own RandomState seeded from the
case name, so adding or removing a case never changes the others, and the
output is byte-identical from run to run.

Run from anywhere: /usr/bin/python3 tools/refgen/gen.py   (or `make refgen`)
"""

import json
import os
import re
import struct
import sys
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "testdata", "ref")
JSON_PATH = os.path.join(OUT_DIR, "cases.json")
ST_PATH = os.path.join(OUT_DIR, "cases.safetensors")

SEED_BASE = 20240601

# dtype tag -> (numpy little-endian dtype, safetensors name); numpy has no
# bfloat16: its values are stored as their uint16 bit patterns (bf16_bits).
DTYPES = {
    "f64": (np.dtype("<f8"), "F64"),
    "f32": (np.dtype("<f4"), "F32"),
    "f16": (np.dtype("<f2"), "F16"),
    "bf16": (np.dtype("<u2"), "BF16"),
    "i64": (np.dtype("<i8"), "I64"),
    "u64": (np.dtype("<u8"), "U64"),
    "i32": (np.dtype("<i4"), "I32"),
    "u32": (np.dtype("<u4"), "U32"),
    "i16": (np.dtype("<i2"), "I16"),
    "u16": (np.dtype("<u2"), "U16"),
    "i8": (np.dtype("i1"), "I8"),
    "u8": (np.dtype("u1"), "U8"),
    "bool": (np.dtype("?"), "BOOL"),
}
ST_TO_NP = {st: npd for npd, st in DTYPES.values()}
FLOAT_TAGS = ("f64", "f32", "f16", "bf16")


def bf16_bits(x):
    """float values -> bfloat16 bit patterns: float32 first, then round to
    nearest even on the upper 16 bits (a NaN stays a quiet NaN)."""
    u = np.asarray(x, dtype=np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(x, dtype=np.float64))
    r = np.where(nan, (u >> 16) | 0x40, r)
    return r.astype(np.uint16)


def bf16_values(bits):
    """bfloat16 bit patterns -> their values as float64."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def bf16(x):
    """x rounded to bfloat16 (as float64 values)."""
    return bf16_values(bf16_bits(x))

# (atol, rtol)
T_ARITH = (1e-6, 1e-5)  # correctly rounded float32 ops
T_TRANS = (1e-5, 1e-4)  # transcendental / compound elementwise
T_REDUCE = (1e-5, 1e-4)  # reductions, matmul, conv
T_F16 = (2e-3, 2e-3)  # float16 outputs (~1-2 ulp)
T_F16_TRANS = (5e-3, 5e-3)  # float16 transcendental (argument rounding in half)
T_EXACT = (0.0, 0.0)  # ints and bools

T_F64 = (1e-12, 1e-12)  # float64 elementwise (composed transcendentals)
DEFAULT_TOL = {"f64": T_F64, "f32": T_ARITH, "f16": T_F16, "bf16": (1e-2, 1e-2), "bool": T_EXACT}
for _tag in ("i64", "u64", "i32", "u32", "i16", "u16", "i8", "u8"):
    DEFAULT_TOL[_tag] = T_EXACT

NAME_RE = re.compile(r"^[a-z0-9_]+$")

CASES = []  # list of Case, in order


class Case:
    def __init__(self, name, expr, tol=None):
        assert NAME_RE.match(name), name
        self.name = name
        self.expr = expr
        self.tol = tol
        self.inputs = []  # (input name, storage array)
        self.expected = None
        self.rs = np.random.RandomState((SEED_BASE + zlib.crc32(name.encode())) % (2**32))

    # ---- inputs; each returns the stored values as float64 / int64 / bool for computing ----
    def _add(self, iname, arr, tag):
        assert NAME_RE.match(iname), iname
        assert iname not in [n for n, _, _ in self.inputs], iname
        npd = DTYPES[tag][0]
        arr = np.asarray(arr)
        # note: np.ascontiguousarray would turn 0-d arrays into shape (1,)
        if tag == "bf16":
            stored = bf16_bits(arr).copy(order="C")
        elif tag in ("i64", "u64") and arr.dtype.kind in "iu":
            stored = arr.astype(npd).copy(order="C")  # exactly, past 2^53
        else:
            stored = arr.astype(npd).copy(order="C")
        assert stored.shape == arr.shape
        self.inputs.append((iname, stored, tag))
        if tag == "bf16":
            return bf16_values(stored)
        if tag in FLOAT_TAGS:
            return stored.astype(np.float64)
        if tag == "bool":
            return stored.astype(bool)
        if tag == "u64":
            return stored  # uint64 values past 2^63 do not fit int64
        return stored.astype(np.int64)

    def f(self, iname, shape, lo=-2.0, hi=2.0):
        """float32 input uniform in [lo, hi]."""
        return self._add(iname, self.rs.uniform(lo, hi, shape), "f32")

    def fpos(self, iname, shape, lo=0.1, hi=3.0):
        """positive float32 input (for log, sqrt, rsqrt, pow base)."""
        return self.f(iname, shape, lo, hi)

    def fnz(self, iname, shape, lo=0.5, hi=2.0):
        """float32 input bounded away from zero, random sign (for division)."""
        mag = self.rs.uniform(lo, hi, shape)
        sgn = np.where(self.rs.uniform(0, 1, shape) < 0.5, -1.0, 1.0)
        return self._add(iname, mag * sgn, "f32")

    def h(self, iname, shape, lo=-2.0, hi=2.0):
        """float16 input uniform in [lo, hi]."""
        return self._add(iname, self.rs.uniform(lo, hi, shape), "f16")

    def i32(self, iname, shape, lo=-10, hi=10):
        """int32 input uniform in [lo, hi] inclusive."""
        return self._add(iname, self.rs.randint(lo, hi + 1, shape), "i32")

    def i8(self, iname, shape, lo=-128, hi=127):
        return self._add(iname, self.rs.randint(lo, hi + 1, shape), "i8")

    def u8(self, iname, shape, lo=0, hi=255):
        return self._add(iname, self.rs.randint(lo, hi + 1, shape), "u8")

    def ints(self, iname, shape, tag):
        """integers of the full range of an integer dtype, edges mixed in."""
        info = np.iinfo(DTYPES[tag][0])
        v = self.rs.randint(0, 2**32, shape, dtype=np.uint64) * np.uint64(2**32) + self.rs.randint(0, 2**32, shape, dtype=np.uint64)
        v = v.astype(DTYPES[tag][0])  # wraps to the width
        edges = np.array([info.min, info.max, 0, 1], dtype=DTYPES[tag][0])
        pick = self.rs.randint(0, 4, shape)
        v = np.where(self.rs.uniform(0, 1, shape) < 0.3, edges[pick], v)
        return self._add(iname, v, tag)

    def d(self, iname, shape, lo=-2.0, hi=2.0):
        """float64 input uniform in [lo, hi]."""
        return self._add(iname, self.rs.uniform(lo, hi, shape), "f64")

    def b(self, iname, shape, lo=-2.0, hi=2.0):
        """bfloat16 input uniform in [lo, hi]."""
        return self._add(iname, self.rs.uniform(lo, hi, shape), "bf16")

    def boolean(self, iname, shape):
        return self._add(iname, self.rs.uniform(0, 1, shape) < 0.5, "bool")

    def raw(self, iname, values, tag):
        """explicit values."""
        return self._add(iname, np.asarray(values), tag)

    # ---- expected ----
    def expect(self, value, tag="f32", tol=None):
        assert self.expected is None
        value = np.asarray(value)
        npd = DTYPES[tag][0]
        if tag == "bf16":
            assert value.dtype.kind in "fiub", (self.name, value.dtype)
            out = bf16_bits(value.astype(np.float64))
            assert np.all(np.isfinite(bf16_values(out))), self.name
        elif tag in FLOAT_TAGS:
            assert value.dtype.kind in "fiub", (self.name, value.dtype)
            out = value.astype(np.float64).astype(npd)
            assert np.all(np.isfinite(out)), self.name
        elif tag == "bool":
            assert value.dtype == bool, (self.name, value.dtype)
            out = value.astype(npd)
        elif value.dtype.kind == "u":
            out = value.astype(npd)  # wraps like C, past 2^63 too
        else:
            assert value.dtype.kind in "iub", (self.name, value.dtype)
            out = value.astype(np.int64).astype(npd)  # wraps like C
        assert out.shape == value.shape
        self.expected = out.copy(order="C")
        self.tag = tag
        if tol is not None:
            self.tol = tol
        if self.tol is None:
            self.tol = DEFAULT_TOL[tag]
        assert all(c.name != self.name for c in CASES), "duplicate case " + self.name
        CASES.append(self)


def case(name, expr, tol=None):
    return Case(name, expr, tol)


# ---------------------------------------------------------------------------
# numpy reference helpers (float64)
# ---------------------------------------------------------------------------


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x, beta=1.0):
    return (1.0 / beta) * np.log1p(np.exp(beta * x))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        r = np.squeeze(r, axis=axis) if axis is not None else r.reshape(())
    return r


def argmax(x, axis=None, keepdims=False):
    # numpy argmax returns the first occurrence, like tinygrad
    r = np.argmax(x, axis=axis)
    if keepdims:
        if axis is None:
            r = np.asarray(r).reshape((1,) * x.ndim)
        else:
            r = np.expand_dims(r, axis)
    return r


def argmin(x, axis=None, keepdims=False):
    r = np.argmin(x, axis=axis)
    if keepdims:
        r = np.expand_dims(r, axis)
    return r


def layernorm(x, axis=-1, eps=1e-5):
    mu = np.mean(x, axis=axis, keepdims=True)
    y = x - mu
    return y / np.sqrt(np.mean(y * y, axis=axis, keepdims=True) + eps)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct NCHW convolution with explicit loops (cross-correlation, like tinygrad/torch)."""
    sh, sw = pair(stride)
    dh, dw = pair(dilation)
    ph, pw = pair(padding)
    n_, c_, h_, w_ = x.shape
    o_, cg, kh, kw = w.shape
    assert c_ == cg * groups and o_ % groups == 0
    og = o_ // groups
    xp = np.zeros((n_, c_, h_ + 2 * ph, w_ + 2 * pw))
    xp[:, :, ph:ph + h_, pw:pw + w_] = x
    oh = (h_ + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w_ + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n_, o_, oh, ow))
    for n in range(n_):
        for o in range(o_):
            g = o // og
            for i in range(oh):
                for j in range(ow):
                    acc = 0.0
                    for c in range(cg):
                        for ki in range(kh):
                            for kj in range(kw):
                                acc += xp[n, g * cg + c, i * sh + ki * dh, j * sw + kj * dw] * w[o, c, ki, kj]
                    out[n, o, i, j] = acc + (b[o] if b is not None else 0.0)
    return out


def pool2d(x, k, s=None, op="max"):
    kh, kw = pair(k)
    sh, sw = pair(s) if s is not None else (kh, kw)
    n_, c_, h_, w_ = x.shape
    oh = (h_ - kh) // sh + 1
    ow = (w_ - kw) // sw + 1
    out = np.zeros((n_, c_, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = x[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
            out[:, :, i, j] = win.max(axis=(2, 3)) if op == "max" else win.mean(axis=(2, 3))
    return out


def one_hot(y, n):
    return (y[..., None] == np.arange(n)).astype(np.int64)


def sparse_ce(logits, y, label_smoothing=0.0, reduction="mean"):
    lp = log_softmax(logits, axis=-1)
    oh = one_hot(y, logits.shape[-1])
    per = (1 - label_smoothing) * (lp * oh).sum(-1) + label_smoothing * lp.mean(-1)
    if reduction == "mean":
        return -per.sum() / per.size
    if reduction == "sum":
        return -per.sum()
    return -per


def floordiv(a, b):
    return np.floor_divide(a, b)


# ---------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------


def elementwise_float():
    S = (3, 4)
    # binary arithmetic, same shape
    c = case("add_same_shape_3x4", "x + y"); x = c.f("x", S); y = c.f("y", S); c.expect(x + y)
    c = case("sub_same_shape_3x4", "x - y"); x = c.f("x", S); y = c.f("y", S); c.expect(x - y)
    c = case("mul_same_shape_3x4", "x * y"); x = c.f("x", S); y = c.f("y", S); c.expect(x * y)
    c = case("div_same_shape_3x4", "x / y"); x = c.f("x", S); y = c.fnz("y", S); c.expect(x / y)
    c = case("add_method_form", "x.add(y)"); x = c.f("x", S); y = c.f("y", S); c.expect(x + y)
    # broadcasting
    c = case("add_broadcast_3x4_plus_4", "x + y"); x = c.f("x", S); y = c.f("y", (4,)); c.expect(x + y)
    c = case("mul_broadcast_3x1_times_1x4", "x * y"); x = c.f("x", (3, 1)); y = c.f("y", (1, 4)); c.expect(x * y)
    c = case("sub_broadcast_2x3x4_minus_3x1", "x - y"); x = c.f("x", (2, 3, 4)); y = c.f("y", (3, 1)); c.expect(x - y)
    c = case("div_broadcast_3x4_by_3x1", "x / y"); x = c.f("x", S); y = c.fnz("y", (3, 1)); c.expect(x / y)
    c = case("add_broadcast_scalar_tensor_shape_empty", "x + y"); x = c.f("x", S); y = c.f("y", ()); c.expect(x + y)
    c = case("maximum_broadcast_4x1_and_3", "x.maximum(y)"); x = c.f("x", (4, 1)); y = c.f("y", (3,)); c.expect(np.maximum(x, y))
    # python scalars on both sides
    c = case("scalar_rsub_2_minus_x", "2 - x"); x = c.f("x", S); c.expect(2 - x)
    c = case("scalar_div_x_by_3", "x / 3"); x = c.f("x", S); c.expect(x / 3)
    c = case("scalar_rdiv_1_over_x", "1 / x", T_TRANS); x = c.fnz("x", S); c.expect(1 / x)
    c = case("scalar_radd_float_1_5_plus_x", "1.5 + x"); x = c.f("x", S); c.expect(1.5 + x)
    c = case("scalar_rmul_3_times_x", "3 * x"); x = c.f("x", S); c.expect(3 * x)
    c = case("scalar_mul_x_times_neg_2_5", "x * -2.5"); x = c.f("x", S); c.expect(x * -2.5)
    c = case("scalar_expression_chain", "(x + 1) * 2 - x / 4"); x = c.f("x", S); c.expect((x + 1) * 2 - x / 4)
    # unary
    c = case("neg_unary_minus", "-x"); x = c.f("x", S); c.expect(-x)
    c = case("abs_float", "x.abs()"); x = c.f("x", S); c.expect(np.abs(x))
    c = case("square_float", "x.square()"); x = c.f("x", S); c.expect(x * x)
    c = case("reciprocal_float", "x.reciprocal()", T_TRANS); x = c.fnz("x", S); c.expect(1 / x)
    c = case("sqrt_positive", "x.sqrt()", T_TRANS); x = c.fpos("x", S); c.expect(np.sqrt(x))
    c = case("rsqrt_positive", "x.rsqrt()", T_TRANS); x = c.fpos("x", S); c.expect(1 / np.sqrt(x))
    c = case("exp_float", "x.exp()", T_TRANS); x = c.f("x", S); c.expect(np.exp(x))
    c = case("exp2_float", "x.exp2()", T_TRANS); x = c.f("x", S); c.expect(np.exp2(x))
    c = case("log_positive", "x.log()", T_TRANS); x = c.fpos("x", S); c.expect(np.log(x))
    c = case("log2_positive", "x.log2()", T_TRANS); x = c.fpos("x", S); c.expect(np.log2(x))
    c = case("sin_float", "x.sin()", T_TRANS); x = c.f("x", S); c.expect(np.sin(x))
    c = case("cos_float", "x.cos()", T_TRANS); x = c.f("x", S); c.expect(np.cos(x))
    c = case("sin_wide_range_pm10", "x.sin()", T_TRANS); x = c.f("x", S, -10, 10); c.expect(np.sin(x))
    c = case("tanh_float", "x.tanh()", T_TRANS); x = c.f("x", S); c.expect(np.tanh(x))
    c = case("sigmoid_float", "x.sigmoid()", T_TRANS); x = c.f("x", S); c.expect(sigmoid(x))
    c = case("sigmoid_saturating_pm30", "x.sigmoid()", T_TRANS); x = c.f("x", S, -30, 30); c.expect(sigmoid(x))
    c = case("relu_float", "x.relu()"); x = c.f("x", S); c.expect(np.maximum(x, 0))
    c = case("gelu_tanh_approximation", "x.gelu()", T_TRANS); x = c.f("x", S, -3, 3); c.expect(gelu_tanh(x))
    c = case("silu_x_times_sigmoid", "x.silu()", T_TRANS); x = c.f("x", S); c.expect(x * sigmoid(x))
    c = case("leaky_relu_default_slope_0_01", "x.leaky_relu()"); x = c.f("x", S); c.expect(np.where(x < 0, 0.01 * x, x))
    c = case("leaky_relu_neg_slope_0_2", "x.leaky_relu(neg_slope=0.2)"); x = c.f("x", S); c.expect(np.where(x < 0, 0.2 * x, x))
    c = case("elu_default_alpha_1", "x.elu()", T_TRANS); x = c.f("x", S); c.expect(np.where(x > 0, x, np.exp(x) - 1))
    c = case("elu_alpha_0_5", "x.elu(alpha=0.5)", T_TRANS); x = c.f("x", S); c.expect(np.where(x > 0, x, 0.5 * (np.exp(x) - 1)))
    c = case("softplus_default_beta_1", "x.softplus()", T_TRANS); x = c.f("x", S); c.expect(softplus(x))
    c = case("softplus_beta_2", "x.softplus(beta=2)", T_TRANS); x = c.f("x", S); c.expect(softplus(x, 2.0))
    # sign / rounding
    c = case("sign_float_with_zeros", "x.sign()")
    x = c.raw("x", [[-1.5, 0.0, 2.0, -0.25], [0.0, 3.0, -7.0, 0.5], [1e-3, -1e-3, 0.0, 1.0]], "f32")
    c.expect(np.sign(x))
    c = case("floor_float_pm5", "x.floor()"); x = c.f("x", S, -5, 5); c.expect(np.floor(x))
    c = case("ceil_float_pm5", "x.ceil()"); x = c.f("x", S, -5, 5); c.expect(np.ceil(x))
    c = case("floor_ceil_exact_integers", "x.floor() + x.ceil()")
    x = c.raw("x", [-2.0, -1.0, 0.0, 1.0, 3.0, -0.5, 0.5, 2.75], "f32"); c.expect(np.floor(x) + np.ceil(x))
    # pow / clip / min / max
    c = case("pow_tensor_exponent_positive_base", "x.pow(y)", T_TRANS); x = c.fpos("x", S); y = c.f("y", S); c.expect(x ** y)
    c = case("pow_scalar_exponent_0_5", "x.pow(0.5)", T_TRANS); x = c.fpos("x", S); c.expect(x ** 0.5)
    c = case("pow_scalar_exponent_neg_1_5", "x.pow(-1.5)", T_TRANS); x = c.fpos("x", S, 0.5, 3.0); c.expect(x ** -1.5)
    c = case("pow_negative_base_int_exponent_3", "x.pow(3)", T_TRANS); x = c.f("x", S); c.expect(x ** 3)
    c = case("clip_min_max", "x.clip(-0.5, 1.0)"); x = c.f("x", S); c.expect(np.clip(x, -0.5, 1.0))
    c = case("clip_keyword_args", "x.clip(min_=-1.0, max_=0.25)"); x = c.f("x", S); c.expect(np.clip(x, -1.0, 0.25))
    c = case("maximum_tensor", "x.maximum(y)"); x = c.f("x", S); y = c.f("y", S); c.expect(np.maximum(x, y))
    c = case("minimum_tensor", "x.minimum(y)"); x = c.f("x", S); y = c.f("y", S); c.expect(np.minimum(x, y))
    c = case("maximum_scalar", "x.maximum(0.5)"); x = c.f("x", S); c.expect(np.maximum(x, 0.5))
    # comparisons -> bool
    c = case("cmp_lt_tensor_tensor", "x < y"); x = c.f("x", S); y = c.f("y", S); c.expect(x < y, "bool")
    c = case("cmp_gt_tensor_scalar", "x > 0.5"); x = c.f("x", S); c.expect(x > 0.5, "bool")
    c = case("cmp_le_broadcast_3x4_and_4", "x <= y"); x = c.f("x", S); y = c.f("y", (4,)); c.expect(x <= y, "bool")
    c = case("cmp_eq_float_with_equal_values", "x == y")
    x = c.raw("x", [[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], "f32"); y = c.raw("y", [[1.0, 2.5, 3.0], [1.0, 0.5, -0.0]], "f32")
    c.expect(x == y, "bool")
    # where
    c = case("where_tensor_tensor", "(x > 0).where(x, y)"); x = c.f("x", S); y = c.f("y", S); c.expect(np.where(x > 0, x, y))
    c = case("where_bool_input_scalar_branches", "c.where(1.5, -2.0)"); cc = c.boolean("c", S); c.expect(np.where(cc, 1.5, -2.0))
    c = case("where_broadcast_cond_3x1", "c.where(x, y)")
    cc = c.boolean("c", (3, 1)); x = c.f("x", S); y = c.f("y", (4,)); c.expect(np.where(cc, x, y))
    c = case("where_tensor_and_scalar_zero", "(x < 0.5).where(x, 0.0)"); x = c.f("x", S); c.expect(np.where(x < 0.5, x, 0.0))
    c = case("composite_elementwise_chain", "((x * y).exp() + 1).log() - x.sigmoid() * y.tanh()", T_TRANS)
    x = c.f("x", S); y = c.f("y", S); c.expect(np.log(np.exp(x * y) + 1) - sigmoid(x) * np.tanh(y))


def dtype_cases():
    S = (3, 4)
    # promotion
    c = case("promote_int32_plus_float32_is_float32", "x + y"); x = c.i32("x", S); y = c.f("y", S); c.expect(x + y, "f32")
    c = case("promote_uint8_plus_int32_is_int32", "x + y"); x = c.u8("x", S); y = c.i32("y", S, -300, 300); c.expect(x + y, "i32")
    c = case("promote_int8_plus_int32_is_int32", "x + y"); x = c.i8("x", S); y = c.i32("y", S, -300, 300); c.expect(x + y, "i32")
    c = case("promote_int32_times_py_float_is_float32", "x * 2.5"); x = c.i32("x", S); c.expect(x * 2.5, "f32")
    c = case("promote_int32_plus_py_int_stays_int32", "x + 1"); x = c.i32("x", S); c.expect(x + 1, "i32")
    c = case("promote_uint8_plus_py_float_is_float32", "x + 1.5"); x = c.u8("x", S); c.expect(x + 1.5, "f32")
    c = case("promote_uint8_times_py_int_stays_uint8_wraps", "x * 2"); x = c.u8("x", S); c.expect(x * 2, "u8")
    c = case("promote_int32_plus_float16_is_float16", "x + y"); x = c.i32("x", S); y = c.h("y", S); c.expect(x + y, "f16")
    c = case("promote_float16_plus_float32_is_float32", "x + y"); x = c.h("x", S); y = c.f("y", S); c.expect(x + y, "f32")
    c = case("where_promotes_int32_and_float32_branches", "(x > 0).where(a, b)")
    x = c.f("x", S); a = c.i32("a", S); b = c.f("b", S); c.expect(np.where(x > 0, a, b), "f32")
    # int32 arithmetic
    c = case("int32_add", "x + y"); x = c.i32("x", S); y = c.i32("y", S); c.expect(x + y, "i32")
    c = case("int32_sub", "x - y"); x = c.i32("x", S); y = c.i32("y", S); c.expect(x - y, "i32")
    c = case("int32_mul", "x * y"); x = c.i32("x", S); y = c.i32("y", S); c.expect(x * y, "i32")
    c = case("int32_neg", "-x"); x = c.i32("x", S); c.expect(-x, "i32")
    c = case("int32_abs", "x.abs()"); x = c.i32("x", S); c.expect(np.abs(x), "i32")
    c = case("int32_sign", "x.sign()"); x = c.i32("x", S, -3, 3); c.expect(np.sign(x), "i32")
    c = case("int32_true_div_is_float32", "x / y"); x = c.i32("x", S); y = c.i32("y", S, 1, 7); c.expect(x / y, "f32", T_ARITH)
    c = case("int32_floordiv_positive", "x // y"); x = c.i32("x", S, 0, 50); y = c.i32("y", S, 1, 7); c.expect(floordiv(x, y), "i32")
    c = case("int32_floordiv_negative_rounds_down", "x // y")
    x = c.raw("x", [7, -7, 7, -7, 6, -6, 0, -1], "i32"); y = c.raw("y", [2, 2, -2, -2, 3, 3, 5, 3], "i32")
    c.expect(floordiv(x, y), "i32")
    c = case("int32_floordiv_by_py_int", "x // 3"); x = c.i32("x", S, 0, 50); c.expect(x // 3, "i32")
    c = case("int32_mod_positive", "x % y"); x = c.i32("x", S, 0, 50); y = c.i32("y", S, 1, 7); c.expect(x % y, "i32")
    c = case("int32_maximum", "x.maximum(y)"); x = c.i32("x", S); y = c.i32("y", S); c.expect(np.maximum(x, y), "i32")
    c = case("int32_minimum", "x.minimum(y)"); x = c.i32("x", S); y = c.i32("y", S); c.expect(np.minimum(x, y), "i32")
    c = case("int32_bitwise_and", "x & y"); x = c.i32("x", S, 0, 255); y = c.i32("y", S, 0, 255); c.expect(x & y, "i32")
    c = case("int32_cmp_eq", "x == y"); x = c.i32("x", S, -2, 2); y = c.i32("y", S, -2, 2); c.expect(x == y, "bool")
    c = case("int32_cmp_ne", "x != y"); x = c.i32("x", S, -2, 2); y = c.i32("y", S, -2, 2); c.expect(x != y, "bool")
    c = case("int32_cmp_ge_py_int", "x >= 2"); x = c.i32("x", S, -4, 4); c.expect(x >= 2, "bool")
    # int8 / uint8 wraparound
    c = case("uint8_add_wraps_200_plus_100_is_44", "x + y")
    x = c.raw("x", [200, 255, 0, 17], "u8"); y = c.raw("y", [100, 1, 0, 3], "u8"); c.expect(x + y, "u8")
    c = case("uint8_sub_wraps", "x - y"); x = c.u8("x", S); y = c.u8("y", S); c.expect(x - y, "u8")
    c = case("uint8_mul_wraps", "x * y"); x = c.u8("x", S, 0, 40); y = c.u8("y", S, 0, 40); c.expect(x * y, "u8")
    c = case("uint8_max_axis1", "x.max(axis=1)"); x = c.u8("x", S); c.expect(x.max(axis=1), "u8")
    c = case("uint8_cmp_gt", "x > y"); x = c.u8("x", S); y = c.u8("y", S); c.expect(x > y, "bool")
    c = case("uint8_cast_float32_div_255", "x.cast(dtypes.float32) / 255"); x = c.u8("x", S); c.expect(x / 255.0, "f32")
    c = case("int8_add_wraps_100_plus_100_is_neg_56", "x + y")
    x = c.raw("x", [100, -128, 127, -5], "i8"); y = c.raw("y", [100, -1, 1, 3], "i8"); c.expect(x + y, "i8")
    c = case("int8_min_axis0", "x.min(axis=0)"); x = c.i8("x", S); c.expect(x.min(axis=0), "i8")
    c = case("int8_cast_int32", "x.cast(dtypes.int32)"); x = c.i8("x", S); c.expect(x, "i32")
    # casts
    c = case("cast_float32_to_int32_truncates_toward_zero", "x.cast(dtypes.int32)"); x = c.f("x", S, -5, 5); c.expect(np.trunc(x).astype(np.int64), "i32")
    c = case("cast_float32_to_int32_shortcut_int", "x.int()"); x = c.f("x", S, -5, 5); c.expect(np.trunc(x).astype(np.int64), "i32")
    c = case("cast_int32_to_float32", "x.cast(dtypes.float32)"); x = c.i32("x", S, -1000, 1000); c.expect(x, "f32")
    c = case("cast_int32_to_int8_wraps", "x.cast(dtypes.int8)"); x = c.raw("x", [200, -200, 127, 128, -129, 256, 0, 1000], "i32"); c.expect(x, "i8")
    c = case("cast_int32_to_uint8_wraps", "x.cast(dtypes.uint8)"); x = c.raw("x", [300, -1, 255, 256, 0, 42], "i32"); c.expect(x, "u8")
    c = case("cast_bool_to_int32", "(x > 0).cast(dtypes.int32)"); x = c.f("x", S); c.expect((x > 0).astype(np.int64), "i32")
    c = case("cast_bool_to_float32", "b.cast(dtypes.float32)"); b = c.boolean("b", S); c.expect(b.astype(np.float64), "f32")
    c = case("cast_float32_to_bool_nonzero", "x.cast(dtypes.bool)")
    x = c.raw("x", [0.0, 1.5, -0.0, -2.0, 0.001, 0.0], "f32"); c.expect(x != 0, "bool")
    # bool logic
    c = case("bool_and_of_comparisons", "(x > 0) & (y > 0)"); x = c.f("x", S); y = c.f("y", S); c.expect((x > 0) & (y > 0), "bool")
    c = case("bool_or_of_comparisons", "(x > 0) | (y > 0)"); x = c.f("x", S); y = c.f("y", S); c.expect((x > 0) | (y > 0), "bool")
    c = case("bool_logical_not", "b.logical_not()"); b = c.boolean("b", S); c.expect(~b, "bool")
    c = case("bool_sum_counts_as_int32", "(x > 0).sum()"); x = c.f("x", (4, 5)); c.expect((x > 0).sum(), "i32")
    # float16
    c = case("f16_add", "x + y"); x = c.h("x", S); y = c.h("y", S); c.expect(x + y, "f16")
    c = case("f16_mul_py_float", "x * 2.5"); x = c.h("x", S); c.expect(x * 2.5, "f16")
    c = case("f16_exp", "x.exp()", T_F16_TRANS); x = c.h("x", S); c.expect(np.exp(x), "f16")
    c = case("f16_sum_axis1", "x.sum(axis=1)"); x = c.h("x", (3, 8)); c.expect(x.sum(axis=1), "f16")
    c = case("f16_matmul", "x.matmul(y)"); x = c.h("x", (3, 4)); y = c.h("y", (4, 5)); c.expect(x @ y, "f16")
    c = case("f16_softmax", "x.softmax()", T_F16_TRANS); x = c.h("x", S); c.expect(softmax(x), "f16")
    c = case("f16_cast_from_float32", "x.cast(dtypes.float16)"); x = c.f("x", S); c.expect(x, "f16")
    c = case("f16_cast_to_float32_exact", "x.cast(dtypes.float32)"); x = c.h("x", S); c.expect(x, "f32", (0.0, 0.0))
    c = case("f16_cast_in_expr_plus_float32", "x.cast(dtypes.float16) + y")
    x = c.f("x", S); y = c.f("y", S); c.expect(x.astype(np.float16).astype(np.float64) + y, "f32")


def shift_cases():
    """x << n and x >> n (the SHL and SHR primitives) against numpy's
    left_shift/right_shift in the input dtype: logical for unsigned, arithmetic
    for signed, and a count of the width or more (or negative) gives 0 or, for
    >> of a negative value, -1."""
    S = (3, 4)
    np_dt = {tag: DTYPES[tag][0].type for tag in ("i64", "u64", "i32", "u32", "i16", "u16", "i8", "u8")}

    def shifted(tag, x, n, left):
        dt = np_dt[tag]
        x, n = np.asarray(x).astype(dt), np.asarray(n).astype(dt)
        with np.errstate(all="ignore"):
            return (np.left_shift if left else np.right_shift)(x, n)

    counts = {"i32": [0, 1, 5, 30, 31, 32, 33, 100, -1, -32, 7, 2],
              "i8": [0, 1, 6, 7, 8, 9, 100, -1, -128, 127, 3, 2],
              "u8": [0, 1, 6, 7, 8, 9, 100, 200, 255, 128, 3, 2],
              "i16": [0, 1, 14, 15, 16, 17, 100, -1, -32768, 32767, 3, 8],
              "u16": [0, 1, 14, 15, 16, 17, 100, 65535, 32768, 3, 8, 2],
              "u32": [0, 1, 30, 31, 32, 33, 100, 2**32 - 1, 2**31, 3, 16, 2],
              "i64": [0, 1, 62, 63, 64, 65, 100, -1, -(2**63), 2**63 - 1, 32, 33],
              "u64": [0, 1, 62, 63, 64, 65, 100, 2**64 - 1, 2**63, 3, 32, 33]}
    for tag in ("i32", "i8", "u8", "i16", "u16", "u32", "i64", "u64"):
        for left, op, name in ((True, "<<", "shl"), (False, ">>", "shr")):
            c = case("%s_%s_tensor_counts" % (tag, name), "x %s n" % op)
            x = getattr(c, tag)("x", S) if tag in ("i32", "i8", "u8") else c.ints("x", S, tag)
            n = c.raw("n", np.array(counts[tag], dtype=np_dt[tag]).reshape(S), tag)
            c.expect(shifted(tag, x, n, left), tag)
    for left, op, name in ((True, "lshift", "shl"), (False, "rshift", "shr")):
        c = case("i32_%s_method_broadcast_counts" % name, "x.%s(n)" % op)
        x = c.i32("x", S, -1000, 1000); n = c.raw("n", [0, 3, 31, 40], "i32")
        c.expect(shifted("i32", x, n, left), "i32")
    for expr, tag, k, left in (("x << 3", "i32", 3, True), ("x >> 2", "i32", 2, False), ("x << 40", "i32", 40, True),
                               ("x >> 31", "i32", 31, False), ("x >> 40", "i32", 40, False), ("x << 7", "i8", 7, True),
                               ("x >> 300", "i8", 300, False), ("x >> 3", "u8", 3, False), ("x << 9", "u8", 9, True),
                               ("x << 40", "i64", 40, True), ("x >> 63", "i64", 63, False), ("x >> 63", "u64", 63, False),
                               ("x << 70", "u64", 70, True), ("x >> 20", "u32", 20, False), ("x << 15", "i16", 15, True)):
        c = case("%s_%s_py_int_%d" % (tag, "shl" if left else "shr", k), expr)
        if tag == "i32":
            x = c.i32("x", S, -1000, 1000)
        else:
            x = getattr(c, tag)("x", S) if tag in ("i8", "u8") else c.ints("x", S, tag)
        kk = min(k, np.dtype(np_dt[tag]).itemsize * 8)  # numpy: any count beyond the width acts alike
        c.expect(shifted(tag, x, np.full(S, kk), left), tag)
    c = case("bool_shl_py_int_is_int32", "b << 2"); b = c.boolean("b", S); c.expect(b.astype(np.int64) << 2, "i32")


def wrap_int(v, tag):
    """Python ints (or int64 arrays) wrapped to an integer dtype, like C."""
    return np.asarray(v, dtype=np.int64).astype(DTYPES[tag][0])


def trunc_div(a, b):
    """C division (toward zero) with tgc's rule x/0 = 0, in int64."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe) * np.sign(a) * np.sign(safe)
    return np.where(b == 0, 0, q)


def semantics_cases():
    """The dtype rules of docs/language.md ("Dtype rules"): bool arithmetic,
    narrow integers inside fused kernels, integer division by zero and
    MIN / -1, float16 rounded after every op, the sign of zero in cat/stack.
    numpy's own results where numpy has the rule (int // 0 is 0, float16 ops
    round per op), explicit int64 arithmetic where it has none."""
    S = (3, 4)
    # bool: + is or, * is and, a - b is a + (-b) = a or not b (tinygrad)
    c = case("bool_add_is_or", "((x > 0) + (y > 0)).cast(dtypes.int32)")
    x = c.f("x", S); y = c.f("y", S); c.expect(((x > 0) | (y > 0)).astype(np.int64), "i32")
    c = case("bool_add_sum_counts_or", "((x > 0) + (y > 0)).sum()")
    x = c.f("x", S); y = c.f("y", S); c.expect(((x > 0) | (y > 0)).sum(), "i32")
    c = case("bool_mul_is_and", "((x > 0) * (y > 0)).cast(dtypes.int32)")
    x = c.f("x", S); y = c.f("y", S); c.expect(((x > 0) & (y > 0)).astype(np.int64), "i32")
    c = case("bool_sub_is_or_not", "((x > 0) - (y > 0)).cast(dtypes.int32)")
    x = c.f("x", S); y = c.f("y", S); c.expect(((x > 0) | ~(y > 0)).astype(np.int64), "i32")
    c = case("bool_add_tensors", "a + b"); a = c.boolean("a", S); b = c.boolean("b", S); c.expect(a | b, "bool")
    # narrow integers are narrowed inside a kernel, not only at the store
    c = case("uint8_mul_narrowed_before_cast", "(x * 2).cast(dtypes.int32)")
    x = c.raw("x", [250, 4, 128, 127, 255, 0], "u8"); c.expect(wrap_int(x * 2, "u8").astype(np.int64), "i32")
    c = case("uint8_add_narrowed_before_compare", "(x + y) < 10")
    x = c.u8("x", S); y = c.u8("y", S); c.expect(wrap_int(x + y, "u8") < 10, "bool")
    c = case("int8_mul_narrowed_before_cast", "(x * y).cast(dtypes.int32)")
    x = c.i8("x", S); y = c.i8("y", S); c.expect(wrap_int(x * y, "i8").astype(np.int64), "i32")
    c = case("int8_sub_narrowed_before_float", "(x - y).cast(dtypes.float32) / 2")
    x = c.i8("x", S); y = c.i8("y", S); c.expect(wrap_int(x - y, "i8").astype(np.float64) / 2, "f32")
    c = case("int8_neg_of_min_wraps", "(-x).cast(dtypes.int32)")
    x = c.raw("x", [-128, 127, 0, -1], "i8"); c.expect(wrap_int(-x, "i8").astype(np.int64), "i32")
    c = case("uint8_neg_wraps", "(-x).cast(dtypes.int32)")
    x = c.raw("x", [0, 1, 200, 255], "u8"); c.expect(wrap_int(-x, "u8").astype(np.int64), "i32")
    c = case("int8_idiv_min_by_neg1_wraps", "x.idiv(y).cast(dtypes.int32)")
    x = c.raw("x", [-128, -128, 100, -7], "i8"); y = c.raw("y", [-1, 2, -1, 2], "i8")
    c.expect(wrap_int(trunc_div(x, y), "i8").astype(np.int64), "i32")
    c = case("int32_mul_wraps", "x * y")
    x = c.raw("x", [65536, -65536, 2147483647, 123456789], "i32"); y = c.raw("y", [65536, 65536, 2, 100], "i32")
    c.expect(wrap_int(x * y, "i32"), "i32")
    # integer division and modulo by zero give 0 (numpy's result too)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        c = case("int32_floordiv_by_zero_is_0", "x // y")
        x = c.raw("x", [7, -7, 0, 5], "i32"); y = c.raw("y", [0, 0, 0, 2], "i32"); c.expect(np.floor_divide(x, y), "i32")
        c = case("int32_mod_by_zero_is_0", "x % y")
        x = c.raw("x", [7, -7, 0, 5], "i32"); y = c.raw("y", [0, 0, 0, 3], "i32"); c.expect(np.mod(x, y), "i32")
        c = case("int32_floordiv_by_py_zero", "x // 0"); x = c.raw("x", [7, -7], "i32"); c.expect(np.zeros(2, np.int64), "i32")
        c = case("int32_mod_by_py_zero", "x % 0"); x = c.raw("x", [7, -7], "i32"); c.expect(np.zeros(2, np.int64), "i32")
        c = case("int32_idiv_by_zero_is_0", "x.idiv(y)")
        x = c.raw("x", [7, -7, 9], "i32"); y = c.raw("y", [0, 0, 2], "i32"); c.expect(trunc_div(x, y), "i32")
        c = case("int32_fmod_by_zero_is_0", "x.fmod(y)")
        x = c.raw("x", [7, -7, -9], "i32"); y = c.raw("y", [0, 0, 2], "i32"); c.expect(np.fmod(x, np.where(y == 0, 1, y)) * (y != 0), "i32")
        c = case("uint8_floordiv_by_zero_is_0", "x // y")
        x = c.raw("x", [7, 255, 0], "u8"); y = c.raw("y", [0, 0, 3], "u8"); c.expect(np.floor_divide(x, y), "u8")
        # MIN / -1 wraps to MIN, MIN % -1 is 0: no trap
        c = case("int32_min_floordiv_neg1_wraps", "x // y")
        x = c.raw("x", [-2147483648, 5, -2147483648], "i32"); y = c.raw("y", [-1, 1, 1], "i32")
        c.expect(wrap_int([2147483648, 5, -2147483648], "i32"), "i32")
        c = case("int32_min_mod_neg1_is_0", "x % y")
        x = c.raw("x", [-2147483648, 5, -7], "i32"); y = c.raw("y", [-1, 3, -1], "i32"); c.expect(np.array([0, 2, 0]), "i32")
        c = case("int32_min_idiv_neg1_wraps", "x.idiv(y)")
        x = c.raw("x", [-2147483648, -2147483647], "i32"); y = c.raw("y", [-1, -1], "i32")
        c.expect(wrap_int([2147483648, 2147483647], "i32"), "i32")
    # float16: every op computed in float32 and rounded to float16 (numpy's rule)
    c = case("f16_mul_add_rounds_each_op", "x * y + x", (0.0, 0.0))
    x = c.raw("x", [-3.697265625], "f16"); y = c.raw("y", [-6.17578125], "f16")
    c.expect((x.astype(np.float16) * y.astype(np.float16) + x.astype(np.float16)), "f16")
    c = case("f16_chain_rounds_each_op", "((x * y + x) * y - x / y).sqrt()", (0.0, 0.0))
    x = c.h("x", (4, 5), 1, 3); y = c.h("y", (4, 5), 1, 3)
    h = lambda v: v.astype(np.float16)
    c.expect(np.sqrt((h(x) * h(y) + h(x)) * h(y) - h(x) / h(y)), "f16")
    # cat and stack select each piece: -0.0 keeps its sign
    c = case("stack_keeps_negative_zero", "Tensor.stack(-x, y)", (0.0, 0.0))
    x = c.raw("x", [0.0, 2.0], "f32"); y = c.raw("y", [1.0, -0.0], "f32"); c.expect(np.stack([-x, y]), "f32")
    c = case("cat_keeps_negative_zero", "x.cat(y, dim=1)", (0.0, 0.0))
    x = c.raw("x", [[-0.0], [0.0]], "f32"); y = c.raw("y", [[-0.0, 1.0], [0.0, -0.0]], "f32")
    c.expect(np.concatenate([x, y], axis=1), "f32")


def wide_dtype_cases():
    """int16, uint16, uint32, int64, uint64, bfloat16, float64 and bitcast:
    the dtypes of the ONNX and GGUF loaders. Integer results wrap like C
    (numpy's fixed-width arithmetic); bfloat16 rounds after every op
    (bf16() on float32 results); float64 against numpy's float64."""
    S = (3, 4)
    ints = ("i16", "u16", "u32", "i64", "u64")
    with np.errstate(over="ignore"):
        for tag in ints:
            c = case(tag + "_add_wraps", "x + y"); x = c.ints("x", S, tag); y = c.ints("y", S, tag)
            c.expect(x.astype(DTYPES[tag][0]) + y.astype(DTYPES[tag][0]), tag)
            c = case(tag + "_sub_wraps", "x - y"); x = c.ints("x", S, tag); y = c.ints("y", S, tag)
            c.expect(x.astype(DTYPES[tag][0]) - y.astype(DTYPES[tag][0]), tag)
            c = case(tag + "_mul_wraps", "x * y"); x = c.ints("x", S, tag); y = c.ints("y", S, tag)
            c.expect(x.astype(DTYPES[tag][0]) * y.astype(DTYPES[tag][0]), tag)
            c = case(tag + "_max_min_compare", "x.maximum(y) - x.minimum(y) + (x < y).cast(x.dtype)")
            x = c.ints("x", S, tag); y = c.ints("y", S, tag)
            xs, ys = x.astype(DTYPES[tag][0]), y.astype(DTYPES[tag][0])
            c.expect(np.maximum(xs, ys) - np.minimum(xs, ys) + (xs < ys).astype(DTYPES[tag][0]), tag)
            c = case(tag + "_max_reduce_axis1", "x.max(axis=1)"); x = c.ints("x", S, tag)
            c.expect(x.astype(DTYPES[tag][0]).max(axis=1), tag)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        c = case("i64_floordiv_mod", "(x // y) + (x % y)")
        x = c.raw("x", [7, -7, 7, -7, -(2**63), 2**62, 5, 0], "i64"); y = c.raw("y", [2, 2, -2, -2, 3, -5, 0, 0], "i64")
        xs, ys = x.astype(np.int64), y.astype(np.int64)
        c.expect(np.floor_divide(xs, ys) + np.mod(xs, ys), "i64")
        c = case("u64_floordiv_mod_unsigned", "(x // y) + (x % y)")
        x = c.raw("x", np.array([2**64 - 1, 2**63, 10, 7], dtype=np.uint64), "u64")
        y = c.raw("y", np.array([2, 3, 2**63 + 1, 0], dtype=np.uint64), "u64")
        c.expect(np.floor_divide(x, y) + np.mod(x, y), "u64")
        c = case("u32_floordiv", "x // y"); x = c.ints("x", S, "u32"); y = c.ints("y", S, "u32")
        c.expect(np.floor_divide(x.astype(np.uint32), y.astype(np.uint32)), "u32")
    # sums: tinygrad's accumulators (int16 in int32, uint8/uint16 in uint32)
    c = case("i16_sum_is_int32", "x.sum(axis=1)"); x = c.ints("x", S, "i16"); c.expect(x.sum(axis=1), "i32")
    c = case("u16_sum_is_uint32", "x.sum()"); x = c.ints("x", S, "u16"); c.expect(x.sum(), "u32")
    c = case("u8_sum_is_uint32", "x.sum(axis=0)"); x = c.u8("x", S); c.expect(x.sum(axis=0), "u32")
    c = case("i64_sum_wraps", "x.sum(axis=1)"); x = c.ints("x", S, "i64")
    with np.errstate(over="ignore"):
        c.expect(x.astype(np.int64).sum(axis=1), "i64")
    # promotion (tinygrad's lattice)
    c = case("promote_int8_uint8_is_int16", "x + y"); x = c.i8("x", S); y = c.u8("y", S); c.expect(x + y, "i16")
    c = case("promote_uint32_int32_is_int64", "x + y"); x = c.ints("x", S, "u32"); y = c.i32("y", S, -1000, 1000)
    c.expect(x + y, "i64")
    c = case("promote_int64_uint64_is_float16", "x + y")
    x = c.raw("x", [-5, 100, 2047, -1], "i64"); y = c.raw("y", np.array([3, 1000, 1, 30000], dtype=np.uint64), "u64")
    f = lambda v: np.asarray(v, dtype=np.float64).astype(np.float16).astype(np.float32)
    c.expect((f(x) + f(y)).astype(np.float16), "f16", (0.0, 0.0))
    c = case("promote_float16_bfloat16_is_float32", "x + y", (0.0, 0.0)); x = c.h("x", S); y = c.b("y", S)
    c.expect(x.astype(np.float32) + y.astype(np.float32), "f32")
    c = case("promote_bfloat16_int32_is_bfloat16", "x + y", (0.0, 0.0)); x = c.b("x", S); y = c.i32("y", S)
    c.expect(bf16(bf16(y) + x), "bf16")
    # casts
    c = case("cast_int64_to_int16_wraps", "x.cast(dtypes.int16)"); x = c.ints("x", S, "i64")
    c.expect(x.astype(np.int64).astype(np.int16), "i16")
    c = case("cast_uint64_to_int64_wraps", "x.cast(dtypes.int64)"); x = c.ints("x", S, "u64")
    c.expect(x.astype(np.uint64).astype(np.int64), "i64")
    c = case("cast_uint32_to_float32_rounds_once", "x.cast(dtypes.float32)", (0.0, 0.0)); x = c.ints("x", S, "u32")
    c.expect(x.astype(np.uint32).astype(np.float32), "f32")
    c = case("cast_int64_to_float32_rounds_once", "x.cast(dtypes.float32)", (0.0, 0.0)); x = c.ints("x", S, "i64")
    c.expect(x.astype(np.int64).astype(np.float32), "f32")
    c = case("cast_float64_to_int64_truncates", "x.cast(dtypes.int64)"); x = c.d("x", S, -1e15, 1e15)
    c.expect(np.trunc(x).astype(np.int64), "i64")
    c = case("cast_float32_to_bfloat16_rounds", "x.cast(dtypes.bfloat16)", (0.0, 0.0)); x = c.f("x", S)
    c.expect(bf16(x), "bf16")
    c = case("cast_float64_to_float32_rounds", "x.float()", (0.0, 0.0)); x = c.d("x", S)
    c.expect(x.astype(np.float32), "f32")
    # bfloat16: every op in float32, rounded to bfloat16 right after it
    c = case("bf16_mul_add_rounds_each_op", "x * y + x", (0.0, 0.0)); x = c.b("x", S); y = c.b("y", S)
    c.expect(bf16(bf16(x * y) + x), "bf16")
    c = case("bf16_div_sqrt_rounds_each_op", "(x / y).abs().sqrt()", (0.0, 0.0)); x = c.b("x", S); y = c.b("y", S, 0.5, 2)
    q = bf16((x.astype(np.float32) / y.astype(np.float32)).astype(np.float64))
    c.expect(bf16(np.sqrt(np.abs(q).astype(np.float32)).astype(np.float64)), "bf16")
    c = case("bf16_sum_accumulates_in_float32", "x.sum(axis=1)", (1e-2, 1e-2)); x = c.b("x", (3, 16))
    c.expect(x.sum(axis=1), "bf16")
    # float64
    c = case("f64_arith_fma_within_an_ulp", "x * y + x / y - y", (2e-15, 1e-15)); x = c.d("x", S); y = c.d("y", S, 0.5, 2)
    c.expect(x * y + x / y - y, "f64")
    c = case("f64_sqrt_exact", "x.sqrt()", (0.0, 0.0)); x = c.d("x", S, 0.1, 3); c.expect(np.sqrt(x), "f64")
    c = case("f64_exp_log_sin", "x.exp() + (x * x + 1).log() + x.sin()"); x = c.d("x", S)
    c.expect(np.exp(x) + np.log(x * x + 1) + np.sin(x), "f64")
    c = case("f64_matmul", "x.matmul(y)", (1e-12, 1e-12)); x = c.d("x", (3, 5)); y = c.d("y", (5, 4))
    c.expect(x @ y, "f64")
    c = case("f64_small_differences_survive", "(x + 1e-12) - x", (1e-20, 1e-4)); x = c.d("x", S, 0.5, 1)
    c.expect((x + 1e-12) - x, "f64")
    # bitcast: the same bits read as another dtype
    c = case("bitcast_uint16_to_float16", "x.bitcast(dtypes.float16)", (0.0, 0.0))
    x = c.raw("x", np.array([0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000], dtype=np.uint16), "u16")
    c.expect(x.astype(np.uint16).view(np.float16), "f16")
    c = case("bitcast_float32_to_int32", "x.bitcast(dtypes.int32)"); x = c.f("x", S)
    c.expect(x.astype(np.float32).view(np.int32), "i32")
    c = case("bitcast_float64_to_uint64", "x.bitcast(dtypes.uint64)"); x = c.d("x", S)
    c.expect(x.view(np.uint64), "u64")
    c = case("bitcast_int8_to_uint8", "x.bitcast(dtypes.uint8)"); x = c.i8("x", S)
    c.expect(x.astype(np.int8).view(np.uint8), "u8")
    c = case("bitcast_bfloat16_to_int16", "x.bitcast(dtypes.int16)"); x = c.b("x", S)
    c.expect(bf16_bits(x).view(np.int16), "i16")
    c = case("bitcast_f16_scales_from_bytes", "(x[:, 0].cast(dtypes.uint16) + x[:, 1].cast(dtypes.uint16) * 256).bitcast(dtypes.float16)", (0.0, 0.0))
    h = np.array([0.5, -3.25, 1000.0, 6e-5], dtype=np.float16)
    x = c.raw("x", h.view(np.uint8).reshape(4, 2), "u8")
    c.expect(h, "f16")


def reduction_cases():
    S3 = (2, 3, 4)
    S2 = (3, 5)
    T = T_REDUCE
    c = case("sum_all_axis_none", "x.sum()", T); x = c.f("x", S3); c.expect(x.sum())
    c = case("sum_axis0", "x.sum(axis=0)", T); x = c.f("x", S3); c.expect(x.sum(axis=0))
    c = case("sum_axis_neg1", "x.sum(axis=-1)", T); x = c.f("x", S3); c.expect(x.sum(axis=-1))
    c = case("sum_axis_tuple_0_2_keepdim", "x.sum(axis=(0,2), keepdim=True)", T); x = c.f("x", S3); c.expect(x.sum(axis=(0, 2), keepdims=True))
    c = case("sum_axis_none_keepdim", "x.sum(keepdim=True)", T); x = c.f("x", S3); c.expect(x.sum(keepdims=True))
    c = case("sum_positional_axis", "x.sum(1)", T); x = c.f("x", S3); c.expect(x.sum(axis=1))
    c = case("sum_int32_axis1", "x.sum(axis=1)"); x = c.i32("x", S3); c.expect(x.sum(axis=1), "i32")
    c = case("max_all", "x.max()"); x = c.f("x", S3); c.expect(x.max())
    c = case("max_axis1", "x.max(axis=1)"); x = c.f("x", S3); c.expect(x.max(axis=1))
    c = case("max_axis_neg1_keepdim", "x.max(axis=-1, keepdim=True)"); x = c.f("x", S3); c.expect(x.max(axis=-1, keepdims=True))
    c = case("max_axis_tuple_0_2", "x.max(axis=(0,2))"); x = c.f("x", S3); c.expect(x.max(axis=(0, 2)))
    c = case("min_all", "x.min()"); x = c.f("x", S3); c.expect(x.min())
    c = case("min_axis0_keepdim", "x.min(axis=0, keepdim=True)"); x = c.f("x", S3); c.expect(x.min(axis=0, keepdims=True))
    c = case("max_int32_axis0", "x.max(axis=0)"); x = c.i32("x", S2); c.expect(x.max(axis=0), "i32")
    c = case("min_int32_all", "x.min()"); x = c.i32("x", S2); c.expect(x.min(), "i32")
    c = case("max_int32_negative_values", "x.max(axis=1)"); x = c.i32("x", S2, -100, -1); c.expect(x.max(axis=1), "i32")
    c = case("mean_all", "x.mean()", T); x = c.f("x", S3); c.expect(x.mean())
    c = case("mean_axis_tuple_1_2", "x.mean(axis=(1,2))", T); x = c.f("x", S3); c.expect(x.mean(axis=(1, 2)))
    c = case("mean_axis_neg2_keepdim", "x.mean(axis=-2, keepdim=True)", T); x = c.f("x", S3); c.expect(x.mean(axis=-2, keepdims=True))
    c = case("mean_int32_returns_float32", "x.mean(axis=1)", T); x = c.i32("x", S2); c.expect(x.mean(axis=1), "f32")
    c = case("var_default_correction_1_all", "x.var()", T); x = c.f("x", S3); c.expect(x.var(ddof=1))
    c = case("var_axis1_correction_1", "x.var(axis=1)", T); x = c.f("x", S3); c.expect(x.var(axis=1, ddof=1))
    c = case("var_correction_0_axis_neg1", "x.var(axis=-1, correction=0)", T); x = c.f("x", S3); c.expect(x.var(axis=-1, ddof=0))
    c = case("var_axis_tuple_keepdim", "x.var(axis=(0,2), keepdim=True)", T); x = c.f("x", S3); c.expect(x.var(axis=(0, 2), ddof=1, keepdims=True))
    c = case("std_default_correction_1_all", "x.std()", T); x = c.f("x", S3); c.expect(x.std(ddof=1))
    c = case("std_axis0_keepdim", "x.std(axis=0, keepdim=True)", T); x = c.f("x", S3); c.expect(x.std(axis=0, ddof=1, keepdims=True))
    c = case("argmax_all_flat_index", "x.argmax()"); x = c.f("x", S3); c.expect(argmax(x), "i32")
    c = case("argmax_axis1", "x.argmax(axis=1)"); x = c.f("x", S3); c.expect(argmax(x, 1), "i32")
    c = case("argmax_axis_neg1_keepdim", "x.argmax(axis=-1, keepdim=True)"); x = c.f("x", S3); c.expect(argmax(x, -1, True), "i32")
    c = case("argmax_ties_first_occurrence", "x.argmax(axis=1)")
    x = c.raw("x", [[1, 3, 3, 0], [5, 5, 5, 5], [0, 0, 2, 2], [-1, -4, -1, -9]], "i32"); c.expect(argmax(x, 1), "i32")
    c = case("argmax_ties_first_occurrence_float_all", "x.argmax()")
    x = c.raw("x", [[0.5, 2.0, 1.0], [2.0, -1.0, 2.0]], "f32"); c.expect(argmax(x), "i32")
    c = case("argmin_axis0", "x.argmin(axis=0)"); x = c.f("x", S2); c.expect(argmin(x, 0), "i32")
    c = case("softmax_default_axis_neg1", "x.softmax()", T); x = c.f("x", S3); c.expect(softmax(x, -1))
    c = case("softmax_axis0", "x.softmax(axis=0)", T); x = c.f("x", S3); c.expect(softmax(x, 0))
    c = case("softmax_large_logits_stable", "x.softmax()", T); x = c.f("x", S2, 50, 100); c.expect(softmax(x, -1))
    c = case("log_softmax_default_axis", "x.log_softmax()", T); x = c.f("x", S3); c.expect(log_softmax(x, -1))
    c = case("log_softmax_axis1", "x.log_softmax(axis=1)", T); x = c.f("x", S3); c.expect(log_softmax(x, 1))
    c = case("logsumexp_axis_none", "x.logsumexp()", T); x = c.f("x", S3); c.expect(logsumexp(x))
    c = case("logsumexp_axis1", "x.logsumexp(axis=1)", T); x = c.f("x", S3); c.expect(logsumexp(x, 1))
    c = case("logsumexp_axis_neg1_keepdim", "x.logsumexp(axis=-1, keepdim=True)", T); x = c.f("x", S3); c.expect(logsumexp(x, -1, True))
    c = case("logsumexp_large_values_stable", "x.logsumexp(axis=1)", T); x = c.f("x", S2, 50, 100); c.expect(logsumexp(x, 1))
    c = case("cumsum_default_axis0", "x.cumsum()", T); x = c.f("x", S2); c.expect(np.cumsum(x, axis=0))
    c = case("cumsum_axis1", "x.cumsum(axis=1)", T); x = c.f("x", S2); c.expect(np.cumsum(x, axis=1))
    c = case("cumsum_axis_neg1_3d", "x.cumsum(axis=-1)", T); x = c.f("x", S3); c.expect(np.cumsum(x, axis=-1))
    c = case("cumsum_int32_axis1", "x.cumsum(axis=1)"); x = c.i32("x", S2); c.expect(np.cumsum(x, axis=1), "i32")


def movement_cases():
    S = (3, 4)
    S3 = (2, 3, 4)
    E = T_EXACT  # movement of float32 is exact
    c = case("reshape_to_4x3", "x.reshape(4, 3)", E); x = c.f("x", S); c.expect(x.reshape(4, 3))
    c = case("reshape_tuple_with_neg1", "x.reshape((2, -1))", E); x = c.f("x", S); c.expect(x.reshape(2, -1))
    c = case("reshape_neg1_flattens", "x.reshape(-1)", E); x = c.f("x", S3); c.expect(x.reshape(-1))
    c = case("permute_2_0_1", "x.permute(2, 0, 1)", E); x = c.f("x", S3); c.expect(x.transpose(2, 0, 1))
    c = case("permute_tuple_1_2_0", "x.permute((1, 2, 0))", E); x = c.f("x", S3); c.expect(x.transpose(1, 2, 0))
    c = case("transpose_0_1", "x.transpose(0, 1)", E); x = c.f("x", S); c.expect(x.T)
    c = case("transpose_default_dims_3d", "x.transpose()", E); x = c.f("x", S3); c.expect(np.swapaxes(x, 1, 0))
    c = case("transpose_neg_dims_3d", "x.transpose(-1, -2)", E); x = c.f("x", S3); c.expect(np.swapaxes(x, -1, -2))
    c = case("transpose_t_property_2d", "x.T", E); x = c.f("x", S); c.expect(x.T)
    c = case("expand_3x1_to_3x4", "x.expand(3, 4)", E); x = c.f("x", (3, 1)); c.expect(np.broadcast_to(x, (3, 4)))
    c = case("expand_4_to_2x3x4", "x.expand(2, 3, 4)", E); x = c.f("x", (4,)); c.expect(np.broadcast_to(x, (2, 3, 4)))
    c = case("expand_with_neg1_keeps_dim", "x.expand(-1, 5)", E); x = c.f("x", (3, 1)); c.expect(np.broadcast_to(x, (3, 5)))
    c = case("pad_2d_before_after", "x.pad(((1, 2), (0, 1)))", E); x = c.f("x", S); c.expect(np.pad(x, ((1, 2), (0, 1))))
    c = case("pad_2d_value_keyword", "x.pad(((1, 1), (2, 0)), value=-1.5)", E); x = c.f("x", S); c.expect(np.pad(x, ((1, 1), (2, 0)), constant_values=-1.5))
    c = case("shrink_2d", "x.shrink(((1, 3), (0, 2)))", E); x = c.f("x", S); c.expect(x[1:3, 0:2])
    c = case("shrink_with_none_keeps_dim", "x.shrink((None, (1, 3)))", E); x = c.f("x", S); c.expect(x[:, 1:3])
    c = case("flip_axis0", "x.flip(0)", E); x = c.f("x", S); c.expect(x[::-1])
    c = case("flip_axis_tuple_0_2", "x.flip((0, 2))", E); x = c.f("x", S3); c.expect(x[::-1, :, ::-1])
    c = case("flatten_default", "x.flatten()", E); x = c.f("x", S3); c.expect(x.reshape(-1))
    c = case("flatten_start_dim_1", "x.flatten(1)", E); x = c.f("x", (2, 3, 2, 2)); c.expect(x.reshape(2, -1))
    c = case("squeeze_dim1", "x.squeeze(1)", E); x = c.f("x", (3, 1, 4)); c.expect(x.reshape(3, 4))
    c = case("squeeze_all_unit_dims", "x.squeeze()", E); x = c.f("x", (1, 3, 1, 4)); c.expect(x.reshape(3, 4))
    c = case("unsqueeze_dim0", "x.unsqueeze(0)", E); x = c.f("x", S); c.expect(x[None])
    c = case("unsqueeze_dim_neg1", "x.unsqueeze(-1)", E); x = c.f("x", S); c.expect(x[..., None])
    c = case("repeat_2_1_tile", "x.repeat(2, 1)", E); x = c.f("x", S); c.expect(np.tile(x, (2, 1)))
    c = case("repeat_adds_leading_dim", "x.repeat(2, 1, 1)", E); x = c.f("x", S); c.expect(np.tile(x, (2, 1, 1)))
    c = case("cat_dim1", "x.cat(y, dim=1)", E); x = c.f("x", S); y = c.f("y", (3, 2)); c.expect(np.concatenate([x, y], axis=1))
    c = case("cat_default_dim0", "x.cat(y)", E); x = c.f("x", S); y = c.f("y", (2, 4)); c.expect(np.concatenate([x, y], axis=0))
    c = case("cat_three_tensors_dim_neg1", "x.cat(y, z, dim=-1)", E)
    x = c.f("x", S3); y = c.f("y", (2, 3, 1)); z = c.f("z", (2, 3, 2)); c.expect(np.concatenate([x, y, z], axis=-1))
    c = case("index_slice_rows_1_3_step2_cols", "x[1:3, ::2]", E); x = c.f("x", (4, 6)); c.expect(x[1:3, ::2])
    c = case("index_int_row_1", "x[1]", E); x = c.f("x", S); c.expect(x[1])
    c = case("index_last_column", "x[:, -1]", E); x = c.f("x", S); c.expect(x[:, -1])
    c = case("index_reverse_rows", "x[::-1]", E); x = c.f("x", S); c.expect(x[::-1])
    c = case("index_two_ints_scalar", "x[1, 2]", E); x = c.f("x", S); c.expect(x[1, 2])
    c = case("index_inner_slice_1_to_neg1", "x[:, 1:-1]", E); x = c.f("x", S); c.expect(x[:, 1:-1])
    c = case("index_3d_int_slice_int", "x[0, :, 1]", E); x = c.f("x", S3); c.expect(x[0, :, 1])
    c = case("index_step2_and_reverse_step2", "x[::2, ::-2]", E); x = c.f("x", (5, 6)); c.expect(x[::2, ::-2])


def matmul_cases():
    T = T_REDUCE
    c = case("dot_2d_3x4_by_4x5", "x.dot(w)", T); x = c.f("x", (3, 4)); w = c.f("w", (4, 5)); c.expect(x @ w)
    c = case("matmul_2d_3x4_by_4x5", "x.matmul(w)", T); x = c.f("x", (3, 4)); w = c.f("w", (4, 5)); c.expect(x @ w)
    c = case("matmul_batched_2x3x4_by_2x4x5", "x.matmul(w)", T); x = c.f("x", (2, 3, 4)); w = c.f("w", (2, 4, 5)); c.expect(x @ w)
    c = case("matmul_batched_broadcast_rhs_2d", "x.matmul(w)", T); x = c.f("x", (2, 3, 4)); w = c.f("w", (4, 5)); c.expect(x @ w)
    c = case("matmul_matrix_vector_3x4_by_4", "x.matmul(v)", T); x = c.f("x", (3, 4)); v = c.f("v", (4,)); c.expect(x @ v)
    c = case("matmul_vector_matrix_4_by_4x5", "v.matmul(w)", T); v = c.f("v", (4,)); w = c.f("w", (4, 5)); c.expect(v @ w)
    c = case("dot_vector_vector_scalar", "u.dot(v)", T); u = c.f("u", (4,)); v = c.f("v", (4,)); c.expect(u @ v)
    c = case("matmul_int32", "x.matmul(w)"); x = c.i32("x", (3, 4)); w = c.i32("w", (4, 2)); c.expect(x @ w, "i32")
    c = case("matmul_with_transposed_input", "x.T.matmul(w)", T); x = c.f("x", (4, 3)); w = c.f("w", (4, 5)); c.expect(x.T @ w)
    c = case("linear_with_bias", "x.linear(w, b)", T); x = c.f("x", (3, 4)); w = c.f("w", (4, 5)); b = c.f("b", (5,)); c.expect(x @ w + b)
    c = case("linear_without_bias", "x.linear(w)", T); x = c.f("x", (3, 4)); w = c.f("w", (4, 5)); c.expect(x @ w)
    c = case("linear_batched_input", "x.linear(w, b)", T); x = c.f("x", (2, 3, 4)); w = c.f("w", (4, 2)); b = c.f("b", (2,)); c.expect(x @ w + b)
    c = case("mlp_two_layers_relu", "x.linear(w1, b1).relu().linear(w2, b2)", T)
    x = c.f("x", (3, 4)); w1 = c.f("w1", (4, 6)); b1 = c.f("b1", (6,)); w2 = c.f("w2", (6, 2)); b2 = c.f("b2", (2,))
    c.expect(np.maximum(x @ w1 + b1, 0) @ w2 + b2)


def conv_pool_cases():
    T = T_REDUCE
    c = case("conv2d_basic_bias", "x.conv2d(w, b)", T)
    x = c.f("x", (2, 3, 7, 7)); w = c.f("w", (4, 3, 3, 3)); b = c.f("b", (4,)); c.expect(conv2d(x, w, b))
    c = case("conv2d_no_bias", "x.conv2d(w)", T)
    x = c.f("x", (2, 3, 7, 7)); w = c.f("w", (4, 3, 3, 3)); c.expect(conv2d(x, w))
    c = case("conv2d_stride2_padding1", "x.conv2d(w, b, stride=2, padding=1)", T)
    x = c.f("x", (2, 3, 7, 7)); w = c.f("w", (4, 3, 3, 3)); b = c.f("b", (4,)); c.expect(conv2d(x, w, b, stride=2, padding=1))
    c = case("conv2d_dilation2", "x.conv2d(w, b, dilation=2)", T)
    x = c.f("x", (2, 3, 7, 7)); w = c.f("w", (4, 3, 3, 3)); b = c.f("b", (4,)); c.expect(conv2d(x, w, b, dilation=2))
    c = case("conv2d_groups2", "x.conv2d(w, b, groups=2)", T)
    x = c.f("x", (2, 4, 6, 6)); w = c.f("w", (6, 2, 3, 3)); b = c.f("b", (6,)); c.expect(conv2d(x, w, b, groups=2))
    c = case("conv2d_depthwise_groups3", "x.conv2d(w, groups=3, padding=1)", T)
    x = c.f("x", (1, 3, 5, 5)); w = c.f("w", (3, 1, 3, 3)); c.expect(conv2d(x, w, groups=3, padding=1))
    c = case("conv2d_tuple_padding_1_2_stride_2_1", "x.conv2d(w, b, stride=(2, 1), padding=(1, 2))", T)
    x = c.f("x", (1, 2, 6, 5)); w = c.f("w", (3, 2, 3, 3)); b = c.f("b", (3,)); c.expect(conv2d(x, w, b, stride=(2, 1), padding=(1, 2)))
    c = case("conv2d_1x1_kernel", "x.conv2d(w, b)", T)
    x = c.f("x", (2, 3, 4, 4)); w = c.f("w", (5, 3, 1, 1)); b = c.f("b", (5,)); c.expect(conv2d(x, w, b))
    c = case("conv2d_rect_kernel_2x3", "x.conv2d(w)", T)
    x = c.f("x", (1, 2, 5, 6)); w = c.f("w", (2, 2, 2, 3)); c.expect(conv2d(x, w))
    c = case("conv2d_all_options", "x.conv2d(w, b, groups=2, stride=2, dilation=2, padding=2)", T)
    x = c.f("x", (1, 4, 8, 8)); w = c.f("w", (4, 2, 3, 3)); b = c.f("b", (4,)); c.expect(conv2d(x, w, b, stride=2, padding=2, dilation=2, groups=2))
    c = case("conv2d_then_relu_then_maxpool", "x.conv2d(w, b, padding=1).relu().max_pool2d()", T)
    x = c.f("x", (1, 2, 6, 6)); w = c.f("w", (3, 2, 3, 3)); b = c.f("b", (3,)); c.expect(pool2d(np.maximum(conv2d(x, w, b, padding=1), 0), 2))
    # pooling
    c = case("max_pool2d_kernel_2x2", "x.max_pool2d(kernel_size=(2, 2))", T_EXACT); x = c.f("x", (2, 3, 6, 6)); c.expect(pool2d(x, 2))
    c = case("max_pool2d_default_kernel", "x.max_pool2d()", T_EXACT); x = c.f("x", (1, 2, 4, 6)); c.expect(pool2d(x, 2))
    c = case("max_pool2d_odd_input_floor", "x.max_pool2d(kernel_size=(2, 2))", T_EXACT); x = c.f("x", (1, 2, 7, 7)); c.expect(pool2d(x, 2))
    c = case("max_pool2d_kernel3_stride2", "x.max_pool2d(kernel_size=(3, 3), stride=2)", T_EXACT); x = c.f("x", (2, 3, 7, 7)); c.expect(pool2d(x, 3, 2))
    c = case("avg_pool2d_kernel_2x2", "x.avg_pool2d(kernel_size=(2, 2))", T); x = c.f("x", (2, 3, 6, 6)); c.expect(pool2d(x, 2, op="avg"))
    c = case("avg_pool2d_kernel3_stride2", "x.avg_pool2d(kernel_size=(3, 3), stride=2)", T); x = c.f("x", (2, 3, 7, 7)); c.expect(pool2d(x, 3, 2, op="avg"))
    c = case("avg_pool2d_default_kernel_odd_input", "x.avg_pool2d()", T); x = c.f("x", (1, 2, 5, 7)); c.expect(pool2d(x, 2, op="avg"))


def nn_misc_cases():
    T = T_REDUCE
    c = case("layernorm_default_axis_neg1", "x.layernorm()", T); x = c.f("x", (3, 5)); c.expect(layernorm(x))
    c = case("layernorm_axis_neg1_eps_1e_5", "x.layernorm(axis=-1, eps=1e-5)", T); x = c.f("x", (2, 3, 4)); c.expect(layernorm(x, -1, 1e-5))
    c = case("layernorm_axis1_3d", "x.layernorm(axis=1)", T); x = c.f("x", (2, 3, 4)); c.expect(layernorm(x, 1))
    c = case("sparse_categorical_crossentropy_mean", "x.sparse_categorical_crossentropy(y)", T)
    x = c.f("x", (5, 4)); y = c.i32("y", (5,), 0, 3); c.expect(sparse_ce(x, y))
    c = case("sparse_categorical_crossentropy_label_smoothing", "x.sparse_categorical_crossentropy(y, label_smoothing=0.1)", T)
    x = c.f("x", (5, 4)); y = c.i32("y", (5,), 0, 3); c.expect(sparse_ce(x, y, 0.1))
    c = case("sparse_categorical_crossentropy_reduction_sum", "x.sparse_categorical_crossentropy(y, reduction=\"sum\")", T)
    x = c.f("x", (6, 3)); y = c.i32("y", (6,), 0, 2); c.expect(sparse_ce(x, y, reduction="sum"))
    c = case("one_hot_int32_4_classes", "y.one_hot(4)"); y = c.i32("y", (5,), 0, 3); c.expect(one_hot(y, 4), "i32")
    c = case("one_hot_2d_labels", "y.one_hot(3)"); y = c.i32("y", (2, 3), 0, 2); c.expect(one_hot(y, 3), "i32")
    c = case("tril_default_diagonal_0", "x.tril()", T_EXACT); x = c.f("x", (4, 5)); c.expect(np.tril(x))
    c = case("tril_diagonal_neg1", "x.tril(diagonal=-1)", T_EXACT); x = c.f("x", (4, 4)); c.expect(np.tril(x, -1))
    c = case("triu_diagonal_1", "x.triu(diagonal=1)", T_EXACT); x = c.f("x", (4, 5)); c.expect(np.triu(x, 1))
    c = case("triu_default_diagonal_0", "x.triu()", T_EXACT); x = c.f("x", (5, 3)); c.expect(np.triu(x))
    c = case("tril_batched_3d", "x.tril()", T_EXACT); x = c.f("x", (2, 3, 4)); c.expect(np.tril(x))
    c = case("attention_scores_softmax_matmul", "(q.matmul(k.transpose(-1, -2)) / 2).softmax().matmul(v)", T)
    q = c.f("q", (2, 3, 4)); k = c.f("k", (2, 3, 4)); v = c.f("v", (2, 3, 4))
    c.expect(softmax(q @ np.swapaxes(k, -1, -2) / 2, -1) @ v)


def creation_cases():
    E = T_EXACT
    c = case("create_arange_5_int32", "Tensor.arange(5)"); c.expect(np.arange(5), "i32")
    c = case("create_arange_2_10_3", "Tensor.arange(2, 10, 3)"); c.expect(np.arange(2, 10, 3), "i32")
    c = case("create_arange_negative_step", "Tensor.arange(5, 0, -2)"); c.expect(np.arange(5, 0, -2), "i32")
    c = case("create_arange_float_step_is_float32", "Tensor.arange(0.0, 1.0, 0.25)", E); c.expect(np.arange(0.0, 1.0, 0.25))
    c = case("create_eye_3", "Tensor.eye(3)", E); c.expect(np.eye(3))
    c = case("create_eye_2x3", "Tensor.eye(2, 3)", E); c.expect(np.eye(2, 3))
    c = case("create_zeros_2x3", "Tensor.zeros(2, 3)", E); c.expect(np.zeros((2, 3)))
    c = case("create_ones_2x3", "Tensor.ones(2, 3)", E); c.expect(np.ones((2, 3)))
    c = case("create_ones_int32_dtype", "Tensor.ones(2, 3, dtype=dtypes.int32)"); c.expect(np.ones((2, 3), np.int64), "i32")
    c = case("create_full_float_7_5", "Tensor.full((2, 3), 7.5)", E); c.expect(np.full((2, 3), 7.5))
    c = case("create_full_int_is_int32", "Tensor.full((2, 2), 7)"); c.expect(np.full((2, 2), 7), "i32")
    c = case("create_full_bool", "Tensor.full((3,), True)"); c.expect(np.full((3,), True), "bool")
    c = case("create_from_int_list_is_int32", "Tensor([[1, 2], [3, 4]])"); c.expect(np.array([[1, 2], [3, 4]]), "i32")
    c = case("create_from_float_list_is_float32", "Tensor([[1.0, 2.5], [-3.0, 4.25]])", E); c.expect(np.array([[1.0, 2.5], [-3.0, 4.25]]))
    c = case("create_from_mixed_list_is_float32", "Tensor([1, 2.5, -3])", E); c.expect(np.array([1.0, 2.5, -3.0]))
    c = case("create_from_bool_list", "Tensor([True, False, True])"); c.expect(np.array([True, False, True]), "bool")
    c = case("create_from_list_with_dtype", "Tensor([[1, 2], [3, 4]], dtype=dtypes.float32)", E); c.expect(np.array([[1.0, 2.0], [3.0, 4.0]]))
    c = case("create_scalar_float", "Tensor(2.5)", E); c.expect(np.array(2.5))
    c = case("arange_plus_float_input", "Tensor.arange(4) + x"); x = c.f("x", (3, 4)); c.expect(np.arange(4) + x, "f32")


# ---------------------------------------------------------------------------
# writing and self-check
# ---------------------------------------------------------------------------


def write_safetensors(path, tensors):
    """tensors: list of (name, contiguous little-endian numpy array, tag)."""
    header = {}
    blobs = []
    off = 0
    for name, arr, tag in tensors:
        assert arr.dtype == DTYPES[tag][0], (name, arr.dtype, tag)
        data = arr.tobytes(order="C")
        header[name] = {"dtype": DTYPES[tag][1], "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(hjson)))
        fp.write(hjson)
        for b in blobs:
            fp.write(b)


def read_safetensors(path):
    with open(path, "rb") as fp:
        buf = fp.read()
    (n,) = struct.unpack("<Q", buf[:8])
    assert n % 8 == 0, "header not padded to 8"
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    data = buf[8 + n:]
    out = {}
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        assert b == end, "tensors not contiguous at " + name
        end = e
        npd = ST_TO_NP[info["dtype"]]
        arr = np.frombuffer(data[b:e], dtype=npd).reshape(info["shape"])
        out[name] = arr
    assert end == len(data), "trailing bytes"
    return out


def cases_json():
    lines = []
    for c in CASES:
        atol, rtol = c.tol
        lines.append("    " + json.dumps({
            "name": c.name,
            "expr": c.expr,
            "inputs": [n for n, _, _ in c.inputs],
            "atol": float(atol),
            "rtol": float(rtol),
        }))
    return '{\n  "version": 1,\n  "cases": [\n' + ",\n".join(lines) + "\n  ]\n}\n"


def self_check(tensors):
    back = read_safetensors(ST_PATH)
    assert list(back.keys()) == [n for n, _, _ in tensors], "tensor order/names differ"
    for name, arr, _ in tensors:
        got = back[name]
        assert got.dtype == arr.dtype, (name, got.dtype, arr.dtype)
        assert got.shape == arr.shape, (name, got.shape, arr.shape)
        assert got.tobytes() == arr.tobytes(), name
    with open(JSON_PATH) as fp:
        meta = json.load(fp)
    assert meta["version"] == 1
    names = [c["name"] for c in meta["cases"]]
    assert len(names) == len(set(names)), "duplicate case names"
    for c in meta["cases"]:
        assert NAME_RE.match(c["name"])
        assert c["name"] + ".expected" in back, c["name"]
        for i in c["inputs"]:
            assert c["name"] + "." + i in back, (c["name"], i)
    assert len(back) == sum(len(c["inputs"]) + 1 for c in meta["cases"]), "stray tensors"


def main():
    elementwise_float()
    dtype_cases()
    shift_cases()
    reduction_cases()
    movement_cases()
    matmul_cases()
    conv_pool_cases()
    nn_misc_cases()
    creation_cases()
    semantics_cases()
    wide_dtype_cases()

    tensors = []
    for c in CASES:
        for iname, arr, tag in c.inputs:
            tensors.append((c.name + "." + iname, arr, tag))
        tensors.append((c.name + ".expected", c.expected, c.tag))

    os.makedirs(OUT_DIR, exist_ok=True)
    write_safetensors(ST_PATH, tensors)
    with open(JSON_PATH, "w") as fp:
        fp.write(cases_json())
    self_check(tensors)
    size = os.path.getsize(ST_PATH)
    assert size < 300 * 1024, "safetensors file too large: %d bytes" % size
    print("refgen: %d cases, %d tensors, %s (%d bytes), %s" % (
        len(CASES), len(tensors), os.path.relpath(ST_PATH, ROOT), size, os.path.relpath(JSON_PATH, ROOT)))


if __name__ == "__main__":
    sys.exit(main())
