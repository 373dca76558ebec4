#!/usr/bin/env python3
"""Writes real-size ONNX models with random weights, built with onnx.helper
in the form PyTorch's exporter gives them (batch normalization folded into
the convolutions, opset 17), for timing `optimize`'s output in ONNX Runtime
where torch is not installed (docs/benchmarks.md, "ONNX Runtime CPU").

Usage:
  tools/shape_models.py OUT_DIR [NAME ...]

Names: resnet50, googlenet, inception_v3, mobilenet_v2, densenet121 (batch 1,
3x224x224; inception_v3 3x299x299) and bert_base (batch 1, 128 tokens).
Their layers, channels, kernels and strides are the torchvision and Hugging
Face models'; the weights are random (seeded), which changes no operator's
time.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed=1):
        self.nodes, self.inits, self.n = [], [], 0
        self.rng = np.random.default_rng(seed)

    def name(self, prefix):
        self.n += 1
        return "%s_%d" % (prefix, self.n)

    def weight(self, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        w = (self.rng.standard_normal(shape) * (scale or (1.0 / np.sqrt(max(fan_in, 1))))).astype(np.float32)
        name = self.name("w")
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def const(self, values, dtype=np.int64):
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def op(self, kind, inputs, **attrs):
        out = self.name(kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, pad=None, group=1, relu=True, relu6=False):
        kh, kw = (k, k) if isinstance(k, int) else k
        ph, pw = (kh // 2, kw // 2) if pad is None else ((pad, pad) if isinstance(pad, int) else pad)
        y = self.op("Conv", [x, self.weight([cout, cin // group, kh, kw]), self.weight([cout], 0.1)],
                    kernel_shape=[kh, kw], strides=[stride, stride], pads=[ph, pw, ph, pw], group=group)
        if relu6:
            return self.op("Clip", [y, self.const(0.0, np.float32), self.const(6.0, np.float32)])
        return self.op("Relu", [y]) if relu else y

    def maxpool(self, x, k, s, p=0, ceil=0):
        return self.op("MaxPool", [x], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4, ceil_mode=ceil)

    def avgpool(self, x, k, s, p=0):
        return self.op("AveragePool", [x], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)

    def head(self, x, c, classes=1000):
        x = self.op("Flatten", [self.op("GlobalAveragePool", [x])], axis=1)
        return self.op("Gemm", [x, self.weight([classes, c]), self.weight([classes], 0.1)], transB=1)

    def model(self, inputs, output, out_shape):
        graph = helper.make_graph(self.nodes, "model", inputs,
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, out_shape)], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def image(size=224):
    return [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])]


def resnet50():
    b = Builder()
    x = b.maxpool(b.conv("input", 3, 64, 7, 2), 3, 2, 1)
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            s = stride if i == 0 else 1
            y = b.conv(b.conv(b.conv(x, cin, width, 1), width, width, 3, s), width, width * 4, 1, relu=False)
            short = b.conv(x, cin, width * 4, 1, s, relu=False) if i == 0 else x
            x, cin = b.op("Relu", [b.op("Add", [y, short])]), width * 4
    return b.model(image(), b.head(x, 2048), [1, 1000])


def mobilenet_v2():
    b = Builder()
    x, cin = b.conv("input", 3, 32, 3, 2, relu6=True), 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            hidden = cin * t
            y = b.conv(x, cin, hidden, 1, relu6=True) if t != 1 else x
            y = b.conv(y, hidden, hidden, 3, s if i == 0 else 1, group=hidden, relu6=True)
            y = b.conv(y, hidden, c, 1, relu=False)
            x = b.op("Add", [x, y]) if (i > 0 or s == 1) and cin == c else y
            cin = c
    x = b.conv(x, 320, 1280, 1, relu6=True)
    return b.model(image(), b.head(x, 1280), [1, 1000])


def googlenet():
    b = Builder()
    x = b.maxpool(b.conv("input", 3, 64, 7, 2), 3, 2, 0, 1)
    x = b.maxpool(b.conv(b.conv(x, 64, 64, 1), 64, 192, 3), 3, 2, 0, 1)
    cin = 192
    cfg = [(64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "pool", (192, 96, 208, 16, 48, 64),
           (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64), (112, 144, 288, 32, 64, 64),
           (256, 160, 320, 32, 128, 128), "pool", (256, 160, 320, 32, 128, 128), (384, 192, 384, 48, 128, 128)]
    for c in cfg:
        if c == "pool":
            x = b.maxpool(x, 3, 2, 0, 1)
            continue
        c1, c3r, c3, c5r, c5, pp = c
        branches = [b.conv(x, cin, c1, 1), b.conv(b.conv(x, cin, c3r, 1), c3r, c3, 3),
                    b.conv(b.conv(x, cin, c5r, 1), c5r, c5, 3), b.conv(b.maxpool(x, 3, 1, 1, 1), cin, pp, 1)]
        x, cin = b.op("Concat", branches, axis=1), c1 + c3 + c5 + pp
    return b.model(image(), b.head(x, 1024), [1, 1000])


def densenet121():
    b = Builder()
    x = b.maxpool(b.conv("input", 3, 64, 7, 2), 3, 2, 1)
    cin = 64
    for i, layers in enumerate((6, 12, 24, 16)):
        for _ in range(layers):
            # BN + ReLU before each convolution: the first BN stays a Mul and an Add (it follows a concatenation).
            y = b.op("Relu", [b.op("Add", [b.op("Mul", [x, b.weight([1, cin, 1, 1], 1.0)]),
                                            b.weight([1, cin, 1, 1], 0.1)])])
            y = b.conv(b.conv(y, cin, 128, 1), 128, 32, 3, relu=False)
            x, cin = b.op("Concat", [x, y], axis=1), cin + 32
        if i < 3:
            y = b.op("Relu", [b.op("Add", [b.op("Mul", [x, b.weight([1, cin, 1, 1], 1.0)]),
                                            b.weight([1, cin, 1, 1], 0.1)])])
            x, cin = b.avgpool(b.conv(y, cin, cin // 2, 1, relu=False), 2, 2), cin // 2
    x = b.op("Relu", [b.op("Add", [b.op("Mul", [x, b.weight([1, cin, 1, 1], 1.0)]), b.weight([1, cin, 1, 1], 0.1)])])
    return b.model(image(), b.head(x, cin), [1, 1000])


def inception_v3():
    b = Builder()
    x = b.conv(b.conv(b.conv("input", 3, 32, 3, 2, 0), 32, 32, 3, 1, 0), 32, 64, 3)
    x = b.maxpool(x, 3, 2)
    x = b.maxpool(b.conv(b.conv(x, 64, 80, 1), 80, 192, 3, 1, 0), 3, 2)
    cin = 192
    for pool in (32, 64, 64):  # InceptionA
        br = [b.conv(x, cin, 64, 1), b.conv(b.conv(x, cin, 48, 1), 48, 64, 5),
              b.conv(b.conv(b.conv(x, cin, 64, 1), 64, 96, 3), 96, 96, 3),
              b.conv(b.avgpool(x, 3, 1, 1), cin, pool, 1)]
        x, cin = b.op("Concat", br, axis=1), 224 + pool
    br = [b.conv(x, cin, 384, 3, 2, 0), b.conv(b.conv(b.conv(x, cin, 64, 1), 64, 96, 3), 96, 96, 3, 2, 0),
          b.maxpool(x, 3, 2)]  # InceptionB
    x, cin = b.op("Concat", br, axis=1), 384 + 96 + cin
    for c7 in (128, 160, 160, 192):  # InceptionC
        br = [b.conv(x, cin, 192, 1),
              b.conv(b.conv(b.conv(x, cin, c7, 1), c7, c7, (1, 7)), c7, 192, (7, 1)),
              b.conv(b.conv(b.conv(b.conv(b.conv(x, cin, c7, 1), c7, c7, (7, 1)), c7, c7, (1, 7)), c7, c7, (7, 1)),
                     c7, 192, (1, 7)),
              b.conv(b.avgpool(x, 3, 1, 1), cin, 192, 1)]
        x, cin = b.op("Concat", br, axis=1), 768
    br = [b.conv(b.conv(x, cin, 192, 1), 192, 320, 3, 2, 0),  # InceptionD
          b.conv(b.conv(b.conv(b.conv(x, cin, 192, 1), 192, 192, (1, 7)), 192, 192, (7, 1)), 192, 192, 3, 2, 0),
          b.maxpool(x, 3, 2)]
    x, cin = b.op("Concat", br, axis=1), 320 + 192 + cin
    for _ in range(2):  # InceptionE
        a = b.conv(x, cin, 384, 1)
        d = b.conv(b.conv(x, cin, 448, 1), 448, 384, 3)
        br = [b.conv(x, cin, 320, 1), b.conv(a, 384, 384, (1, 3)), b.conv(a, 384, 384, (3, 1)),
              b.conv(d, 384, 384, (1, 3)), b.conv(d, 384, 384, (3, 1)), b.conv(b.avgpool(x, 3, 1, 1), cin, 192, 1)]
        x, cin = b.op("Concat", br, axis=1), 2048
    return b.model(image(299), b.head(x, 2048), [1, 1000])


def bert_base(tokens=128, hidden=768, heads=12, layers=12, ffn=3072):
    b = Builder()
    ids = "input_ids"
    x = b.op("Gather", [b.weight([30522, hidden], 0.02), ids])
    x = b.op("Add", [x, b.weight([1, tokens, hidden], 0.02)])

    def layer_norm(t):
        return b.op("LayerNormalization", [t, b.weight([hidden], 1.0), b.weight([hidden], 0.1)], axis=-1,
                    epsilon=1e-12)

    def dense(t, cin, cout):
        return b.op("Add", [b.op("MatMul", [t, b.weight([cin, cout])]), b.weight([cout], 0.1)])

    x = layer_norm(x)
    split = b.const([1, tokens, heads, hidden // heads])
    merge = b.const([1, tokens, hidden])
    for _ in range(layers):
        q, k, v = (b.op("Transpose", [b.op("Reshape", [dense(x, hidden, hidden), split])], perm=p)
                   for p in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]))
        s = b.op("Div", [b.op("MatMul", [q, k]), b.const(8.0, np.float32)])
        a = b.op("MatMul", [b.op("Softmax", [s], axis=-1), v])
        a = b.op("Reshape", [b.op("Transpose", [a], perm=[0, 2, 1, 3]), merge])
        x = layer_norm(b.op("Add", [dense(a, hidden, hidden), x]))
        h = dense(x, hidden, ffn)
        g = b.op("Mul", [b.op("Mul", [h, b.op("Add", [b.op("Erf", [b.op("Div", [h, b.const(1.4142135, np.float32)])]),
                                                      b.const(1.0, np.float32)])]), b.const(0.5, np.float32)])
        x = layer_norm(b.op("Add", [dense(g, ffn, hidden), x]))
    inputs = [helper.make_tensor_value_info(ids, TensorProto.INT64, [1, tokens])]
    return b.model(inputs, x, [1, tokens, hidden])


MODELS = {"resnet50": resnet50, "googlenet": googlenet, "inception_v3": inception_v3, "mobilenet_v2": mobilenet_v2,
          "densenet121": densenet121, "bert_base": bert_base}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, names = sys.argv[1], sys.argv[2:] or list(MODELS)
    os.makedirs(out, exist_ok=True)
    for name in names:
        if name not in MODELS:
            sys.exit("shape_models.py: error: no model '%s' (%s)" % (name, ", ".join(MODELS)))
        model = MODELS[name]()
        onnx.checker.check_model(model)
        path = os.path.join(out, name + ".onnx")
        onnx.save(model, path)
        print("%s: %d nodes, %.1f MB" % (path, len(model.graph.node), model.ByteSize() / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
