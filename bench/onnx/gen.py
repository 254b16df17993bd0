# Writes the ONNX models of tgc's ONNX benchmarks, with random weights
# (Debian's python3-onnx and python3-numpy):
#
#   /usr/bin/python3 bench/onnx/gen.py [DIR]      (default bench/onnx/models)
#
# resnet50.onnx  ResNet-50 v1.5 (torchvision's layout), input "data" (batch, 3, 224, 224),
#                BatchNormalization nodes kept (as in the ONNX model zoo's resnet50), opset 13
# bert_base.onnx a BERT-base encoder stack: 12 layers of hidden 768, 12 heads, FFN 3072, GELU
#                as exporters write it (Erf), LayerNormalization, reshape targets computed by
#                Shape/Gather/Concat subgraphs as exporters write them; inputs "hidden"
#                (batch, seq, 768) and "mask" (batch, 1, 1, seq) (additive), opset 17
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base):
        self.n += 1
        return "%s_%d" % (base, self.n)

    def weight(self, base, shape, scale):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(self, base, array):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op, inputs, base=None, n_out=1, **attrs):
        outs = [self.name(base or op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs


def resnet50():
    g = Graph()

    def conv_bn(x, cin, cout, k, stride, relu=True):
        w = g.weight("conv_w", (cout, cin, k, k), np.sqrt(2.0 / (cin * k * k)))
        y = g.op("Conv", [x, w], "conv", kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
        scale = g.const("bn_scale", (1 + 0.1 * rng.standard_normal(cout)).astype(np.float32))
        bias = g.const("bn_bias", (0.1 * rng.standard_normal(cout)).astype(np.float32))
        mean = g.const("bn_mean", (0.1 * rng.standard_normal(cout)).astype(np.float32))
        var = g.const("bn_var", (1 + 0.1 * rng.random(cout)).astype(np.float32))
        y = g.op("BatchNormalization", [y, scale, bias, mean, var], "bn", epsilon=1e-5)
        return g.op("Relu", [y]) if relu else y

    x = conv_bn("data", 3, 64, 7, 2)
    x = g.op("MaxPool", [x], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for b in range(blocks):
            s = stride if b == 0 else 1
            y = conv_bn(x, cin, width, 1, 1)
            y = conv_bn(y, width, width, 3, s)
            y = conv_bn(y, width, width * 4, 1, 1, relu=False)
            short = conv_bn(x, cin, width * 4, 1, s, relu=False) if b == 0 else x
            x = g.op("Relu", [g.op("Add", [y, short])])
            cin = width * 4
    x = g.op("GlobalAveragePool", [x], "gap")
    x = g.op("Flatten", [x], "flat", axis=1)
    w = g.weight("fc_w", (1000, 2048), 1 / np.sqrt(2048))
    fb = g.const("fc_b", np.zeros(1000, np.float32))
    g.op("Gemm", [x, w, fb], "logits", transB=1)
    g.nodes[-1].output[0] = "logits"
    graph = helper.make_graph(g.nodes, "resnet50",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["batch", 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])], g.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tgc bench/onnx/gen.py")


def bert_base(layers=12, hidden=768, heads=12, ffn=3072):
    g = Graph()
    head = hidden // heads
    zero = g.const("zero", np.array([0], np.int64))
    one = g.const("one", np.array([1], np.int64))
    x = "hidden"

    def dense(x, cin, cout):
        w = g.weight("w", (cin, cout), 0.02)
        b = g.const("b", (0.02 * rng.standard_normal(cout)).astype(np.float32))
        return g.op("Add", [g.op("MatMul", [x, w]), b])

    def layer_norm(x):
        s = g.const("ln_s", np.ones(hidden, np.float32))
        b = g.const("ln_b", np.zeros(hidden, np.float32))
        return g.op("LayerNormalization", [x, s, b], "ln", axis=-1, epsilon=1e-12)

    def batch_seq(x):  # Shape(x)[0:2], as exporters compute reshape targets
        shape = g.op("Shape", [x])
        b = g.op("Gather", [shape, zero], axis=0)
        s = g.op("Gather", [shape, one], axis=0)
        return b, s

    for _ in range(layers):
        b, s = batch_seq(x)
        split = g.op("Concat", [b, s, g.const("heads", np.array([heads, head], np.int64))], axis=0)
        def heads_of(t, perm):
            return g.op("Transpose", [g.op("Reshape", [t, split])], perm=perm)
        q = heads_of(dense(x, hidden, hidden), [0, 2, 1, 3])
        k = heads_of(dense(x, hidden, hidden), [0, 2, 3, 1])
        v = heads_of(dense(x, hidden, hidden), [0, 2, 1, 3])
        scores = g.op("Div", [g.op("MatMul", [q, k]), g.const("sqrt_d", np.array(np.sqrt(head), np.float32))])
        probs = g.op("Softmax", [g.op("Add", [scores, "mask"])], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        merge = g.op("Concat", [b, s, g.const("hidden", np.array([hidden], np.int64))], axis=0)
        attn = dense(g.op("Reshape", [ctx, merge]), hidden, hidden)
        x = layer_norm(g.op("Add", [attn, x]))
        h = dense(x, hidden, ffn)
        gelu = g.op("Mul", [g.op("Mul", [h, g.op("Add", [g.op("Erf", [g.op("Div", [h, g.const("sqrt2", np.array(np.sqrt(2), np.float32))])]),
                                                        g.const("c1", np.array(1, np.float32))])]),
                            g.const("half", np.array(0.5, np.float32))])
        x = layer_norm(g.op("Add", [dense(gelu, ffn, hidden), x]))
    g.nodes[-1].output[0] = "output"
    graph = helper.make_graph(g.nodes, "bert_base",
                              [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", hidden]),
                               helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", 1, 1, "seq"])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", "seq", hidden])], g.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tgc bench/onnx/gen.py")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
    os.makedirs(out, exist_ok=True)
    for name, build in [("resnet50", resnet50), ("bert_base", bert_base)]:
        m = build()
        m.ir_version = 8
        onnx.checker.check_model(m)
        path = os.path.join(out, name + ".onnx")
        onnx.save(m, path)
        print("wrote", path, "%.0f MB" % (os.path.getsize(path) / 1e6))


if __name__ == "__main__":
    main()
