#!/usr/bin/env python3
"""Writes the per-operator ONNX reference test cases under tests/data/onnx_ops/.

Layout (the one of ONNX's own backend test data):

    tests/data/onnx_ops/<case>/model.onnx
    tests/data/onnx_ops/<case>/test_data_set_0/input_<i>.pb   (graph inputs, in order)
    tests/data/onnx_ops/<case>/test_data_set_0/output_<i>.pb  (ONNX Runtime CPU outputs)
    tests/data/onnx_ops/cases.txt                              ("<case> <opset>", sorted)

and a handful of malformed or unsupported models under tests/data/onnx_bad/
(described in tests/data/onnx_bad/README.md).

Conventions the C++ importer relies on:
  * every shape is static;
  * shape-like operands (Reshape shape, Slice starts/ends/axes/steps, Expand
    shape, Split split, Squeeze/Unsqueeze axes, Reduce* axes, Clip min/max,
    Pad pads/value, ConstantOfShape input, Range inputs) are initializers or
    are computed from initializers and static shapes only;
  * the computed data operands are graph inputs.

Reproducible: each case draws its data from a generator seeded by a fixed base
seed and the case name, ONNX Runtime runs single-threaded with graph
optimizations off, and the output folders are rewritten from scratch. Running
the script twice gives byte-identical files.

Usage: python3 tools/make_onnx_cases.py [--out-root DIR]   (write everything)
       python3 tools/make_onnx_cases.py --verify            (rerun what is on disk)
Requires: numpy, onnx, onnxruntime.
"""

import argparse
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

BASE_SEED = 20240611
IR_VERSION = 8  # ONNX 1.13: enough for opset 18, loadable by any recent onnxruntime

F = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

NP_TO_ONNX = {
    np.dtype(np.float32): F,
    np.dtype(np.int64): I64,
    np.dtype(np.bool_): BOOL,
}


# ----------------------------------------------------------------------------
# Case registry and writer
# ----------------------------------------------------------------------------

CASES = []  # list of dicts, filled by add()


def rng_for(name):
    return np.random.default_rng([BASE_SEED, zlib.crc32(name.encode())])


def add(name, opset, nodes, inputs, outputs, inits=(), check=True,
        shuffle_nodes=False, external_data=False, extra_opsets=()):
    """Registers one case.

    inputs:  list of (name, numpy array); graph inputs, in order.
    outputs: list of names (float32) or (name, onnx elem type).
    inits:   list of (name, numpy array); initializers (not graph inputs).
    check:   run onnx.checker.check_model(full_check=True) on the model.
    """
    assert name not in {c["name"] for c in CASES}, name
    outs = [(o, F) if isinstance(o, str) else o for o in outputs]
    for i, n in enumerate(nodes):
        if not n.name:
            n.name = "%s_%d" % (n.op_type.lower(), i)
    assert len({n.name for n in nodes}) == len(nodes), name
    CASES.append(dict(name=name, opset=opset, nodes=nodes, inputs=list(inputs),
                      outputs=outs, inits=list(inits), check=check,
                      shuffle_nodes=shuffle_nodes, external_data=external_data,
                      extra_opsets=list(extra_opsets)))


def make_model(c, out_shapes):
    g_inputs = [helper.make_tensor_value_info(n, NP_TO_ONNX[a.dtype], list(a.shape))
                for n, a in c["inputs"]]
    g_outputs = [helper.make_tensor_value_info(n, t, out_shapes[i] if out_shapes else None)
                 for i, (n, t) in enumerate(c["outputs"])]
    g_inits = [numpy_helper.from_array(a, n) for n, a in c["inits"]]
    nodes = list(c["nodes"])
    if c["shuffle_nodes"]:
        # A fixed permutation (reverse order) so that the result is certainly
        # not topologically sorted; the nodes keep their names.
        nodes = nodes[::-1]
    graph = helper.make_graph(nodes, c["name"], g_inputs, g_outputs, g_inits)
    opsets = [helper.make_opsetid("", c["opset"])]
    opsets += [helper.make_opsetid(d, v) for d, v in c["extra_opsets"]]
    model = helper.make_model(graph, opset_imports=opsets,
                              producer_name="tgr-make_onnx_cases",
                              producer_version="1")
    model.ir_version = IR_VERSION
    return model


def ort_run(model_or_path, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    src = model_or_path if isinstance(model_or_path, str) else model_or_path.SerializeToString()
    sess = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def write_case(c, root):
    d = os.path.join(root, c["name"])
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds)
    feeds = {n: a for n, a in c["inputs"]}

    # Pass 1: outputs declared without shapes; ONNX Runtime tells the shapes.
    probe = ort_run(make_model(c, None), feeds)
    model = make_model(c, [list(r.shape) for r in probe])
    path = os.path.join(d, "model.onnx")
    if c["external_data"]:
        onnx.save_model(model, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.bin",
                        size_threshold=0, convert_attribute=False)
    else:
        onnx.save_model(model, path)
    if c["check"]:
        onnx.checker.check_model(path, full_check=True)

    # Pass 2: the reference outputs come from the model file as written.
    results = ort_run(path, feeds)
    for i, (n, t) in enumerate(c["outputs"]):
        r = results[i]
        assert NP_TO_ONNX[r.dtype] == t, (c["name"], n, r.dtype, t)
        assert np.array_equal(r, probe[i], equal_nan=r.dtype.kind == "f"), c["name"]
    for i, (n, a) in enumerate(c["inputs"]):
        with open(os.path.join(ds, "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for i, (n, _) in enumerate(c["outputs"]):
        with open(os.path.join(ds, "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(results[i], n).SerializeToString())


# ----------------------------------------------------------------------------
# Data helpers
# ----------------------------------------------------------------------------

def randn(r, *shape):
    return r.standard_normal(shape).astype(np.float32)


def positive(r, *shape):
    """float32 random normal folded to > 0 (|x| + 0.1)."""
    return (np.abs(r.standard_normal(shape)) + 0.1).astype(np.float32)


def f32(x):
    return np.array(x, dtype=np.float32)


def i64(x):
    return np.array(x, dtype=np.int64)


def node(op, ins, outs, name=None, domain=None, **attrs):
    """A node; unnamed nodes are named "<op>_<index in graph>" by add()."""
    return helper.make_node(op, ins, outs, name=name, domain=domain, **attrs)


def unary(name, opset, op, x, **attrs):
    add(name, opset, [node(op, ["x"], ["y"], **attrs)], [("x", x)], ["y"])


def binary(name, opset, op, a, b, out_type=F, **attrs):
    add(name, opset, [node(op, ["a", "b"], ["y"], **attrs)], [("a", a), ("b", b)],
        [("y", out_type)])


# ----------------------------------------------------------------------------
# The cases
# ----------------------------------------------------------------------------

def elementwise():
    r = rng_for("add")
    binary("add_bcast_op13", 13, "Add", randn(r, 2, 3, 4), randn(r, 4))
    r = rng_for("add_bcast_both")
    binary("add_bcast_both_op14", 14, "Add", randn(r, 2, 1, 4), randn(r, 3, 1))
    r = rng_for("add_scalar")
    binary("add_scalar_op13", 13, "Add", randn(r, 3, 4), randn(r))
    r = rng_for("sub")
    binary("sub_bcast_op13", 13, "Sub", randn(r, 2, 3, 4), randn(r, 3, 1))
    r = rng_for("mul")
    binary("mul_bcast_op13", 13, "Mul", randn(r, 2, 3, 4), randn(r, 1, 3, 1))
    r = rng_for("div")
    den = (np.sign(r.standard_normal(4)) * r.uniform(0.5, 2.0, 4)).astype(np.float32)
    binary("div_bcast_op13", 13, "Div", randn(r, 2, 3, 4), den)
    r = rng_for("div_same")
    den = (np.sign(r.standard_normal((2, 3))) * r.uniform(0.5, 2.0, (2, 3))).astype(np.float32)
    binary("div_same_shape_op11", 11, "Div", randn(r, 2, 3), den)

    # int64, both operands graph inputs
    r = rng_for("int64")
    binary("add_int64_op13", 13, "Add", r.integers(-50, 50, (2, 3, 4)),
           r.integers(-50, 50, (4,)), out_type=I64)
    binary("sub_int64_op13", 13, "Sub", r.integers(-50, 50, (2, 3, 4)),
           r.integers(-50, 50, (3, 1)), out_type=I64)
    binary("mul_int64_op13", 13, "Mul", r.integers(-50, 50, (2, 3, 4)),
           r.integers(-50, 50, (1, 3, 4)), out_type=I64)
    # Positive divisors; the numerators include negatives, so this also pins
    # integer division rounding (onnxruntime truncates toward zero like C++,
    # numpy's // floors).
    binary("div_int64_op13", 13, "Div", r.integers(-100, 100, (2, 3, 4)),
           r.integers(1, 10, (4,)), out_type=I64)

    r = rng_for("pow")
    binary("pow_bcast_op13", 13, "Pow", positive(r, 2, 3, 4), randn(r, 4))
    r = rng_for("pow_sq")
    add("pow_const_exp_op15", 15, [node("Pow", ["x", "e"], ["y"])],
        [("x", positive(r, 3, 4))], ["y"], inits=[("e", f32(2.0))])

    r = rng_for("unary")
    unary("sqrt_op13", 13, "Sqrt", positive(r, 2, 3, 4))
    unary("exp_op13", 13, "Exp", randn(r, 2, 3, 4))
    unary("log_op13", 13, "Log", positive(r, 2, 3, 4))
    unary("neg_op13", 13, "Neg", randn(r, 2, 3, 4))
    unary("abs_op13", 13, "Abs", randn(r, 2, 3, 4))
    unary("erf_op13", 13, "Erf", randn(r, 2, 3, 4))
    unary("tanh_op13", 13, "Tanh", randn(r, 2, 3, 4))
    unary("sigmoid_op13", 13, "Sigmoid", randn(r, 2, 3, 4))
    unary("relu_op13", 13, "Relu", randn(r, 2, 3, 4))
    unary("relu_op14", 14, "Relu", randn(r, 3, 5))
    unary("leakyrelu_alpha01_op13", 13, "LeakyRelu", randn(r, 2, 3, 4), alpha=0.1)
    unary("leakyrelu_alpha01_op16", 16, "LeakyRelu", randn(r, 3, 5), alpha=0.1)
    unary("hardsigmoid_default_op13", 13, "HardSigmoid", 3 * randn(r, 2, 3, 4))
    unary("hardsigmoid_alpha03_beta04_op13", 13, "HardSigmoid", 3 * randn(r, 2, 3, 4),
          alpha=0.3, beta=0.4)
    unary("hardswish_op14", 14, "HardSwish", 4 * randn(r, 2, 3, 4))

    r = rng_for("clip")
    add("clip_minmax_op11", 11, [node("Clip", ["x", "lo", "hi"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("lo", f32(-0.5)), ("hi", f32(0.8))])
    add("clip_minmax_op13", 13, [node("Clip", ["x", "lo", "hi"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("lo", f32(-1.0)), ("hi", f32(0.25))])
    add("clip_max_only_op13", 13, [node("Clip", ["x", "", "hi"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("hi", f32(0.3))])
    add("clip_min_only_op11", 11, [node("Clip", ["x", "lo"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("lo", f32(0.0))])


def softmax():
    r = rng_for("softmax")
    unary("softmax_axis_last_op13", 13, "Softmax", randn(r, 2, 3, 4), axis=-1)
    unary("softmax_axis1_3d_op13", 13, "Softmax", randn(r, 2, 3, 4), axis=1)
    # Before opset 13 Softmax coerces the input to 2-D at `axis`; on a 2-D
    # input with axis=1 both semantics agree.
    unary("softmax_axis1_2d_op11", 11, "Softmax", randn(r, 3, 5), axis=1)


def normalization():
    r = rng_for("layernorm")
    add("layernorm_axis_last_op17", 17,
        [node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1, epsilon=1e-5)],
        [("x", randn(r, 2, 3, 4))], ["y"],
        inits=[("scale", randn(r, 4)), ("bias", randn(r, 4))])
    add("layernorm_axis1_op17", 17,
        [node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=1, epsilon=1e-5)],
        [("x", randn(r, 2, 3, 4))], ["y"],
        inits=[("scale", randn(r, 3, 4)), ("bias", randn(r, 3, 4))])

    for opset in (11, 15):
        r = rng_for("batchnorm%d" % opset)
        c = 3
        add("batchnorm_inference_op%d" % opset, opset,
            [node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"],
                  epsilon=1e-5)],
            [("x", randn(r, 2, c, 4, 4))], ["y"],
            inits=[("scale", randn(r, c)), ("bias", randn(r, c)),
                   ("mean", randn(r, c)), ("var", positive(r, c))])


def conv():
    def conv_case(name, opset, x_shape, w_shape, bias=True, **attrs):
        r = rng_for(name)
        ins = ["x", "w"] + (["b"] if bias else [])
        inits = [("w", randn(r, *w_shape))]
        if bias:
            inits.append(("b", randn(r, w_shape[0])))
        add(name, opset, [node("Conv", ins, ["y"], **attrs)],
            [("x", randn(r, *x_shape))], ["y"], inits=inits)

    conv_case("conv_bias_pads1_op11", 11, (1, 3, 6, 6), (4, 3, 3, 3), pads=[1, 1, 1, 1])
    conv_case("conv_nobias_op11", 11, (2, 3, 5, 5), (4, 3, 3, 3))
    conv_case("conv_kernel_shape_attr_op13", 13, (1, 2, 5, 6), (3, 2, 2, 3),
              kernel_shape=[2, 3])
    conv_case("conv_1x1_op13", 13, (1, 4, 3, 3), (5, 4, 1, 1))
    conv_case("conv_groups_dilation_op11", 11, (1, 4, 7, 7), (6, 2, 3, 3),
              group=2, dilations=[2, 2])
    conv_case("conv_depthwise_op13", 13, (1, 4, 5, 5), (4, 1, 3, 3), bias=False,
              group=4, pads=[1, 1, 1, 1])
    conv_case("conv_strides_op11", 11, (1, 3, 7, 7), (4, 3, 3, 3), strides=[2, 2])
    conv_case("conv_asym_pads_strides_op11", 11, (1, 2, 6, 5), (3, 2, 3, 3), bias=False,
              pads=[0, 1, 2, 1], strides=[2, 1])
    conv_case("conv_dilation_asym_op13", 13, (1, 2, 8, 7), (2, 2, 2, 3),
              dilations=[3, 1], strides=[1, 2], pads=[1, 0, 0, 2])
    # 6x6 input, kernel 3, stride 2: output 3, total padding 1 (odd), so
    # SAME_UPPER pads at the end and SAME_LOWER at the beginning.
    conv_case("conv_same_upper_op11", 11, (1, 2, 6, 6), (3, 2, 3, 3),
              auto_pad="SAME_UPPER", strides=[2, 2])
    conv_case("conv_same_lower_op11", 11, (1, 2, 6, 6), (3, 2, 3, 3), bias=False,
              auto_pad="SAME_LOWER", strides=[2, 2])
    conv_case("conv_same_upper_stride1_op13", 13, (1, 2, 5, 5), (2, 2, 2, 2),
              auto_pad="SAME_UPPER")
    conv_case("conv_valid_op11", 11, (1, 2, 6, 7), (3, 2, 3, 2), auto_pad="VALID",
              strides=[2, 2])


def gemm():
    def gemm_case(name, opset, a_shape, b_shape, c_shape, **attrs):
        r = rng_for(name)
        ins = ["a", "b"] + (["c"] if c_shape is not None else [])
        inits = [("b", randn(r, *b_shape))]
        if c_shape is not None:
            inits.append(("c", randn(r, *c_shape)))
        add(name, opset, [node("Gemm", ins, ["y"], **attrs)],
            [("a", randn(r, *a_shape))], ["y"], inits=inits)

    gemm_case("gemm_c_vector_op13", 13, (3, 4), (4, 5), (5,))
    gemm_case("gemm_c_row_op11", 11, (3, 4), (4, 5), (1, 5))
    gemm_case("gemm_c_full_op13", 13, (3, 4), (4, 5), (3, 5))
    gemm_case("gemm_transa_c_row_op13", 13, (4, 3), (4, 5), (1, 5), transA=1)
    gemm_case("gemm_transb_alpha_beta_op11", 11, (3, 4), (5, 4), (5,), transB=1,
              alpha=0.5, beta=2.0)
    gemm_case("gemm_transab_alpha_beta_op13", 13, (4, 3), (5, 4), (1, 5), transA=1,
              transB=1, alpha=1.5, beta=-0.75)
    gemm_case("gemm_noc_op11", 11, (3, 4), (4, 5), None)
    gemm_case("gemm_noc_transb_op13", 13, (3, 4), (5, 4), None, transB=1, alpha=2.0)
    # Both matrices computed (graph inputs).
    r = rng_for("gemm_inputs")
    add("gemm_ab_inputs_op13", 13, [node("Gemm", ["a", "b", "c"], ["y"], transB=1)],
        [("a", randn(r, 2, 3)), ("b", randn(r, 4, 3))], ["y"], inits=[("c", randn(r, 4))])


def matmul():
    def mm(name, a, b, opset=13):
        r = rng_for(name)
        binary(name, opset, "MatMul", randn(r, *a), randn(r, *b))

    mm("matmul_2d_op13", (3, 4), (4, 5))
    mm("matmul_3d_2d_op13", (2, 3, 4), (4, 5))
    mm("matmul_4d_attention_op13", (1, 2, 4, 8), (1, 2, 8, 4))
    mm("matmul_bcast_batch_op13", (2, 1, 3, 4), (1, 5, 4, 6))
    mm("matmul_1d_2d_op13", (4,), (4, 5))
    mm("matmul_2d_1d_op13", (3, 4), (4,))
    mm("matmul_2d_3d_op11", (3, 4), (2, 4, 5), opset=11)
    r = rng_for("matmul_weight")
    add("matmul_weight_init_op13", 13, [node("MatMul", ["x", "w"], ["y"])],
        [("x", randn(r, 2, 3, 6))], ["y"], inits=[("w", randn(r, 6, 4))])


def pooling():
    def pool(name, opset, op, x_shape, **attrs):
        r = rng_for(name)
        unary(name, opset, op, randn(r, *x_shape), **attrs)

    pool("maxpool_k2s2_op11", 11, "MaxPool", (1, 2, 6, 6), kernel_shape=[2, 2],
         strides=[2, 2])
    pool("maxpool_pads_strides_op11", 11, "MaxPool", (1, 2, 7, 7), kernel_shape=[3, 3],
         strides=[2, 2], pads=[1, 1, 1, 1])
    pool("maxpool_asym_pads_op13", 13, "MaxPool", (1, 2, 5, 6), kernel_shape=[3, 2],
         pads=[1, 0, 0, 1])
    # 6 wide, kernel 3, stride 2: floor gives 2, ceil gives 3.
    pool("maxpool_ceil_changes_op11", 11, "MaxPool", (1, 2, 6, 6), kernel_shape=[3, 3],
         strides=[2, 2], ceil_mode=1)
    # 7 wide, kernel 3, stride 2: (7-3)/2 is exact, 3 either way.
    pool("maxpool_ceil_same_op11", 11, "MaxPool", (1, 2, 7, 7), kernel_shape=[3, 3],
         strides=[2, 2], ceil_mode=1)
    # Deliberately absent: ceil_mode=1 where the last window would start in the
    # right padding (5 wide, kernel 2, stride 2, pads 1). onnxruntime drops that
    # window (output 3, as PyTorch does), but ONNX shape inference before
    # opset 22 says 4 (opset 22 says 3), so no opset <= 18 model of it passes
    # check_model(full_check=True): the two references disagree.
    pool("maxpool_dilation_op13", 13, "MaxPool", (1, 2, 7, 7), kernel_shape=[2, 2],
         dilations=[2, 2])

    pool("avgpool_k2s2_op13", 13, "AveragePool", (1, 2, 6, 6), kernel_shape=[2, 2],
         strides=[2, 2])
    pool("avgpool_pads_exclude_op11", 11, "AveragePool", (1, 2, 5, 5), kernel_shape=[3, 3],
         strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0)
    pool("avgpool_pads_include_op11", 11, "AveragePool", (1, 2, 5, 5), kernel_shape=[3, 3],
         strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)
    pool("avgpool_asym_pads_include_op13", 13, "AveragePool", (1, 1, 4, 5),
         kernel_shape=[2, 3], pads=[0, 1, 1, 0], count_include_pad=1)
    pool("avgpool_ceil_exclude_op11", 11, "AveragePool", (1, 2, 6, 6), kernel_shape=[3, 3],
         strides=[2, 2], ceil_mode=1, count_include_pad=0)

    pool("globalavgpool_op13", 13, "GlobalAveragePool", (2, 3, 4, 5))


def reductions():
    r = rng_for("reduce")
    x = randn(r, 2, 3, 4)
    unary("reducemean_axes_attr_keepdims1_op13", 13, "ReduceMean", x, axes=[1])
    unary("reducemean_axes_attr_keepdims0_op13", 13, "ReduceMean", randn(r, 2, 3, 4),
          axes=[-1, 0], keepdims=0)
    unary("reducemean_all_op13", 13, "ReduceMean", randn(r, 2, 3, 4))
    add("reducemean_axes_input_keepdims1_op18", 18,
        [node("ReduceMean", ["x", "axes"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("axes", i64([-1]))])
    add("reducemean_axes_input_keepdims0_op18", 18,
        [node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("axes", i64([0, 2]))])
    unary("reducesum_axes_attr_keepdims1_op11", 11, "ReduceSum", randn(r, 2, 3, 4),
          axes=[2])
    unary("reducesum_axes_attr_keepdims0_op11", 11, "ReduceSum", randn(r, 2, 3, 4),
          axes=[0, 1], keepdims=0)
    add("reducesum_axes_input_keepdims1_op13", 13,
        [node("ReduceSum", ["x", "axes"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("axes", i64([1]))])
    add("reducesum_axes_input_keepdims0_op13", 13,
        [node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("axes", i64([-2, -1]))])


def shape_ops():
    r = rng_for("shape_ops")
    unary("flatten_axis1_op13", 13, "Flatten", randn(r, 2, 3, 4), axis=1)
    unary("flatten_axis2_op13", 13, "Flatten", randn(r, 2, 3, 2, 2), axis=2)
    unary("flatten_axis0_op11", 11, "Flatten", randn(r, 2, 3), axis=0)

    add("reshape_zero_minus1_op13", 13, [node("Reshape", ["x", "shape"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("shape", i64([0, -1]))])
    add("reshape_minus1_zero_op14", 14, [node("Reshape", ["x", "shape"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("shape", i64([-1, 0, 2, 2]))])

    unary("transpose_default_op13", 13, "Transpose", randn(r, 2, 3, 4))
    unary("transpose_perm_op13", 13, "Transpose", randn(r, 2, 3, 4), perm=[1, 2, 0])
    unary("transpose_perm_4d_op11", 11, "Transpose", randn(r, 1, 2, 3, 4), perm=[0, 2, 1, 3])

    add("concat_axis_last_op13", 13, [node("Concat", ["a", "b", "c"], ["y"], axis=-1)],
        [("a", randn(r, 2, 3, 1)), ("b", randn(r, 2, 3, 4)), ("c", randn(r, 2, 3, 2))], ["y"])
    add("concat_axis0_op11", 11, [node("Concat", ["a", "b"], ["y"], axis=0)],
        [("a", randn(r, 1, 4)), ("b", randn(r, 3, 4))], ["y"])
    add("concat_int64_op13", 13, [node("Concat", ["a", "b"], ["y"], axis=0)],
        [("a", r.integers(-9, 9, (2,))), ("b", r.integers(-9, 9, (3,)))], [("y", I64)])

    # Split
    add("split_equal_op11", 11, [node("Split", ["x"], ["y0", "y1", "y2"], axis=1)],
        [("x", randn(r, 2, 6, 2))], ["y0", "y1", "y2"])
    add("split_attr_op11", 11, [node("Split", ["x"], ["y0", "y1"], axis=-1, split=[1, 3])],
        [("x", randn(r, 3, 4))], ["y0", "y1"])
    add("split_input_op13", 13, [node("Split", ["x", "split"], ["y0", "y1", "y2"], axis=0)],
        [("x", randn(r, 6, 2))], ["y0", "y1", "y2"], inits=[("split", i64([2, 1, 3]))])
    add("split_equal_op13", 13, [node("Split", ["x"], ["y0", "y1"], axis=2)],
        [("x", randn(r, 2, 3, 4))], ["y0", "y1"])
    add("split_num_outputs_op18", 18,
        [node("Split", ["x"], ["y0", "y1", "y2"], axis=1, num_outputs=3)],
        [("x", randn(r, 2, 6))], ["y0", "y1", "y2"])
    # 7 does not divide by 3: chunks of ceil(7/3)=3, the last one smaller.
    add("split_num_outputs_uneven_op18", 18,
        [node("Split", ["x"], ["y0", "y1", "y2"], axis=0, num_outputs=3)],
        [("x", randn(r, 7, 2))], ["y0", "y1", "y2"])

    # Slice
    def slice_case(name, opset, x_shape, starts, ends, axes=None, steps=None):
        ins = ["x", "starts", "ends"]
        inits = [("starts", i64(starts)), ("ends", i64(ends))]
        if axes is not None:
            ins.append("axes")
            inits.append(("axes", i64(axes)))
        if steps is not None:
            if axes is None:
                ins.append("")
            ins.append("steps")
            inits.append(("steps", i64(steps)))
        rr = rng_for(name)
        add(name, opset, [node("Slice", ins, ["y"])], [("x", randn(rr, *x_shape))], ["y"],
            inits=inits)

    slice_case("slice_basic_op13", 13, (3, 4, 5), [0, 1, 1], [2, 3, 5])
    slice_case("slice_neg_starts_op13", 13, (3, 4, 5), [-3], [INT64_MAX], axes=[2])
    slice_case("slice_neg_starts_ends_op11", 11, (4, 6), [-3, 1], [-1, -1], axes=[0, 1])
    slice_case("slice_step2_op13", 13, (3, 7), [1], [7], axes=[1], steps=[2])
    slice_case("slice_step_neg1_op11", 11, (3, 5), [-1], [INT64_MIN], axes=[1], steps=[-1])
    slice_case("slice_step_neg1_op13", 13, (4, 3), [2], [0], axes=[0], steps=[-1])
    slice_case("slice_axes_subset_op11", 11, (3, 4, 5), [1, 0], [3, 4], axes=[0, 2])
    slice_case("slice_neg_axes_steps_op13", 13, (2, 3, 8), [0, 7], [2, 0], axes=[-3, -1],
               steps=[1, -3])
    slice_case("slice_clamp_ends_op13", 13, (3, 4), [1, -100], [1000, 2], axes=[0, 1])

    # Squeeze / Unsqueeze
    add("squeeze_axes_attr_op11", 11, [node("Squeeze", ["x"], ["y"], axes=[0, 2])],
        [("x", randn(r, 1, 3, 1, 4))], ["y"])
    add("squeeze_axes_input_op13", 13, [node("Squeeze", ["x", "axes"], ["y"])],
        [("x", randn(r, 3, 1, 4, 1))], ["y"], inits=[("axes", i64([-1, 1]))])
    add("squeeze_no_axes_op13", 13, [node("Squeeze", ["x"], ["y"])],
        [("x", randn(r, 1, 3, 1, 4))], ["y"])
    add("unsqueeze_axes_attr_op11", 11, [node("Unsqueeze", ["x"], ["y"], axes=[0, 3])],
        [("x", randn(r, 3, 4))], ["y"])
    add("unsqueeze_axes_input_op13", 13, [node("Unsqueeze", ["x", "axes"], ["y"])],
        [("x", randn(r, 3, 4))], ["y"], inits=[("axes", i64([1, -1]))])

    # Expand
    add("expand_op13", 13, [node("Expand", ["x", "shape"], ["y"])],
        [("x", randn(r, 3, 1))], ["y"], inits=[("shape", i64([2, 3, 4]))])
    add("expand_lower_rank_shape_op13", 13, [node("Expand", ["x", "shape"], ["y"])],
        [("x", randn(r, 2, 1, 4))], ["y"], inits=[("shape", i64([3, 1]))])

    # Identity, Dropout
    unary("identity_op13", 13, "Identity", randn(r, 2, 3))
    unary("identity_op14", 14, "Identity", randn(r, 4))
    unary("dropout_inference_op13", 13, "Dropout", randn(r, 2, 3, 4))

    # Pad (constant)
    add("pad_constant_value_op11", 11,
        [node("Pad", ["x", "pads", "value"], ["y"], mode="constant")],
        [("x", randn(r, 2, 3))], ["y"],
        inits=[("pads", i64([0, 1, 1, 2])), ("value", f32(1.5))])
    add("pad_constant_value_op13", 13,
        [node("Pad", ["x", "pads", "value"], ["y"], mode="constant")],
        [("x", randn(r, 1, 2, 3, 3))], ["y"],
        inits=[("pads", i64([0, 0, 1, 2, 0, 0, 2, 1])), ("value", f32(-2.0))])
    add("pad_constant_default_op13", 13, [node("Pad", ["x", "pads"], ["y"])],
        [("x", randn(r, 3, 4))], ["y"], inits=[("pads", i64([1, 0, 0, 2]))])


def gather():
    r = rng_for("gather_embed")
    add("gather_embedding_op13", 13, [node("Gather", ["table", "ids"], ["y"], axis=0)],
        [("ids", r.integers(0, 10, (2, 3)))], ["y"], inits=[("table", randn(r, 10, 4))])
    r = rng_for("gather_axis1")
    add("gather_axis1_op13", 13, [node("Gather", ["x", "idx"], ["y"], axis=1)],
        [("x", randn(r, 2, 5, 3)), ("idx", r.integers(0, 5, (4,)))], ["y"])
    r = rng_for("gather_neg")
    add("gather_neg_indices_op13", 13, [node("Gather", ["x", "idx"], ["y"], axis=0)],
        [("x", randn(r, 5, 3)), ("idx", i64([[-1, 0], [-5, 2], [3, -2]]))], ["y"])
    r = rng_for("gather_scalar")
    add("gather_scalar_index_op11", 11, [node("Gather", ["x", "idx"], ["y"], axis=-1)],
        [("x", randn(r, 3, 4)), ("idx", i64(2))], ["y"])

    r = rng_for("gather_elements")
    add("gatherelements_axis1_op13", 13,
        [node("GatherElements", ["x", "idx"], ["y"], axis=1)],
        [("x", randn(r, 3, 4)), ("idx", r.integers(0, 4, (3, 5)))], ["y"])
    r = rng_for("gather_elements_neg")
    add("gatherelements_axis0_neg_op11", 11,
        [node("GatherElements", ["x", "idx"], ["y"], axis=0)],
        [("x", randn(r, 3, 4)), ("idx", r.integers(-3, 3, (2, 4)))], ["y"])


def logic():
    r = rng_for("where")
    add("where_bcast_op13", 13, [node("Where", ["c", "x", "y"], ["z"])],
        [("c", r.random((2, 1, 4)) < 0.5), ("x", randn(r, 2, 3, 4)), ("y", randn(r, 4))],
        ["z"])
    r = rng_for("where16")
    add("where_same_shape_op16", 16, [node("Where", ["c", "x", "y"], ["z"])],
        [("c", r.random((3, 4)) < 0.5), ("x", randn(r, 3, 4)), ("y", randn(r, 3, 4))], ["z"])

    for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
        r = rng_for("cmp_" + op)
        # small integer-valued floats so that ties occur
        a = r.integers(-2, 3, (2, 3, 4)).astype(np.float32)
        b = r.integers(-2, 3, (4,)).astype(np.float32)
        binary("%s_float_op13" % op.lower(), 13, op, a, b, out_type=BOOL)
        binary("%s_int64_op13" % op.lower(), 13, op, r.integers(-3, 4, (3, 4)),
               r.integers(-3, 4, (3, 1)), out_type=BOOL)

    r = rng_for("isnan")
    x = randn(r, 3, 4)
    x[0, 1] = np.nan
    x[2, 3] = np.nan
    x[1, 2] = np.inf
    x[1, 0] = -np.inf
    add("isnan_op13", 13, [node("IsNaN", ["x"], ["y"])], [("x", x)], [("y", BOOL)])

    r = rng_for("not")
    add("not_op13", 13, [node("Not", ["x"], ["y"])], [("x", r.random((2, 3, 4)) < 0.5)],
        [("y", BOOL)])

    # GatherND with constant indices (the dynamo exporter's mask indexing):
    # whole rows (k = 1, a negative index), elements (k = 2), one slice.
    r = rng_for("gather_nd")
    x = randn(r, 3, 4, 5)
    add("gathernd_rows_op13", 13, [node("GatherND", ["x", "i"], ["y"])], [("x", x)], ["y"],
        inits=[("i", i64([[[2], [0]], [[-1], [1]]]))])
    add("gathernd_elements_op13", 13, [node("GatherND", ["x", "i"], ["y"])], [("x", x)], ["y"],
        inits=[("i", i64([[0, 3], [2, 1], [1, -4]]))])
    add("gathernd_one_slice_op13", 13, [node("GatherND", ["x", "i"], ["y"])], [("x", x)], ["y"],
        inits=[("i", i64([1, 2]))])

    # And, Or, Xor (causal-mask chains of transformers' decoders), with broadcasting.
    r = rng_for("logic")
    a, b = r.random((2, 3, 4)) < 0.5, r.random((3, 1)) < 0.5
    for op in ("And", "Or", "Xor"):
        add(op.lower() + "_bcast_op13", 13, [node(op, ["a", "b"], ["y"])], [("a", a), ("b", b)], [("y", BOOL)])


def cast():
    r = rng_for("cast")
    x = (3 * randn(r, 3, 4)).astype(np.float32)
    x[0, 0] = 2.5
    x[0, 1] = -2.5
    x[0, 2] = -0.7
    add("cast_float_to_int64_op13", 13, [node("Cast", ["x"], ["y"], to=I64)], [("x", x)],
        [("y", I64)])
    add("cast_int64_to_float_op13", 13, [node("Cast", ["x"], ["y"], to=F)],
        [("x", r.integers(-1000, 1000, (3, 4)))], ["y"])
    x = randn(r, 3, 4)
    x[0, :2] = 0.0
    x[2, 3] = -0.0
    add("cast_float_to_bool_op13", 13, [node("Cast", ["x"], ["y"], to=BOOL)], [("x", x)],
        [("y", BOOL)])
    add("cast_bool_to_float_op13", 13, [node("Cast", ["x"], ["y"], to=F)],
        [("x", r.random((3, 4)) < 0.5)], ["y"])
    add("cast_float_to_int64_op11", 11, [node("Cast", ["x"], ["y"], to=I64)],
        [("x", (4 * randn(r, 5)).astype(np.float32))], [("y", I64)])


def constants():
    r = rng_for("constant")
    cval = randn(r, 2, 3)
    add("constant_add_op13", 13,
        [node("Constant", [], ["c"], value=numpy_helper.from_array(cval, "c_value")),
         node("Add", ["x", "c"], ["y"])],
        [("x", randn(r, 2, 3))], ["y"])
    add("constant_value_float_add_op13", 13,
        [node("Constant", [], ["c"], value_float=0.5), node("Add", ["x", "c"], ["y"])],
        [("x", randn(r, 4))], ["y"])

    r = rng_for("constantofshape")
    add("shape_constantofshape_add_op13", 13,
        [node("Shape", ["x"], ["s"]),
         node("ConstantOfShape", ["s"], ["c"],
              value=numpy_helper.from_array(f32([1.5]), "value")),
         node("Add", ["x", "c"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"])
    add("constantofshape_init_op11", 11,
        [node("ConstantOfShape", ["shape"], ["c"],
              value=numpy_helper.from_array(f32([-0.25]), "value")),
         node("Mul", ["x", "c"], ["y"])],
        [("x", randn(r, 3, 4))], ["y"], inits=[("shape", i64([3, 4]))])
    add("constantofshape_default_op13", 13,
        [node("ConstantOfShape", ["shape"], ["c"]),
         node("Add", ["x", "c"], ["y"])],
        [("x", randn(r, 2, 2))], ["y"], inits=[("shape", i64([2, 2]))])
    add("shape_op15_start_end", 15,
        [node("Shape", ["x"], ["s"], start=1, end=-1),
         node("ConstantOfShape", ["s"], ["c"],
              value=numpy_helper.from_array(f32([2.0]), "value")),
         node("Mul", ["x", "c"], ["y"])],
        [("x", randn(r, 2, 3, 3))], ["y"])  # Shape(x)[1:-1] = [3] broadcasts with x

    r = rng_for("range")
    add("range_float_add_op11", 11,
        [node("Range", ["start", "limit", "delta"], ["rg"]), node("Add", ["x", "rg"], ["y"])],
        [("x", randn(r, 2, 5))], ["y"],
        inits=[("start", f32(1.0)), ("limit", f32(3.5)), ("delta", f32(0.5))])
    add("range_int64_add_op13", 13,
        [node("Range", ["start", "limit", "delta"], ["rg"]), node("Add", ["x", "rg"], ["y"])],
        [("x", r.integers(-10, 10, (3, 4)))], [("y", I64)],
        inits=[("start", i64(10)), ("limit", i64(2)), ("delta", i64(-2))])


def folding():
    # (1) Reshape whose target shape is computed from Shape(x), as exporters emit:
    #     y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]))
    r = rng_for("fold_reshape")
    add("fold_shape_gather_reshape_op13", 13,
        [node("Shape", ["x"], ["s"]),
         node("Gather", ["s", "i0"], ["d0"], axis=0),
         node("Unsqueeze", ["d0", "ax0"], ["d0u"]),
         node("Concat", ["d0u", "minus1"], ["newshape"], axis=0),
         node("Reshape", ["x", "newshape"], ["y"])],
        [("x", randn(r, 2, 3, 4))], ["y"],
        inits=[("i0", i64(0)), ("ax0", i64([0])), ("minus1", i64([-1]))])
    # Same with opset 11 (Unsqueeze axes as attribute) and two gathered dims.
    add("fold_shape_gather_reshape_op11", 11,
        [node("Shape", ["x"], ["s"]),
         node("Gather", ["s", "i0"], ["d0"], axis=0, name="gather_0"),
         node("Gather", ["s", "i1"], ["d1"], axis=0, name="gather_1"),
         node("Unsqueeze", ["d0"], ["d0u"], axes=[0], name="unsqueeze_0"),
         node("Unsqueeze", ["d1"], ["d1u"], axes=[0], name="unsqueeze_1"),
         node("Concat", ["d0u", "d1u", "minus1"], ["newshape"], axis=0),
         node("Reshape", ["x", "newshape"], ["y"])],
        [("x", randn(r, 2, 3, 2, 2))], ["y"],
        inits=[("i0", i64(0)), ("i1", i64(1)), ("minus1", i64([-1]))])

    # (2) Attention-mask chain on initializers, added to float scores.
    r = rng_for("fold_mask")
    mask = i64([[1, 1, 1, 0]]).reshape(1, 1, 1, 4)
    add("fold_attention_mask_op13", 13,
        [node("Cast", ["mask"], ["maskf"], to=F),
         node("Equal", ["maskf", "zero"], ["is_pad"]),
         node("Where", ["is_pad", "neg_big", "zero"], ["bias"]),
         node("Expand", ["bias", "bshape"], ["bias_e"]),
         node("Add", ["scores", "bias_e"], ["y"])],
        [("scores", randn(r, 2, 2, 4, 4))], ["y"],
        inits=[("mask", mask), ("zero", f32(0.0)), ("neg_big", f32(-10000.0)),
               ("bshape", i64([2, 1, 4, 4]))])
    # The BERT form: (1 - Cast(mask)) * -10000, Unsqueezed and added.
    add("fold_attention_mask_bert_op11", 11,
        [node("Unsqueeze", ["mask"], ["m1"], axes=[1, 2]),
         node("Cast", ["m1"], ["m2"], to=F),
         node("Sub", ["one", "m2"], ["m3"]),
         node("Mul", ["m3", "neg_big"], ["bias"]),
         node("Add", ["scores", "bias"], ["y"])],
        [("scores", randn(r, 2, 2, 3, 3))], ["y"],
        inits=[("mask", i64([[1, 1, 0], [1, 0, 0]])), ("one", f32(1.0)),
               ("neg_big", f32(-10000.0))])


def exporter_ops():
    """Operators that torch.onnx exports of torchvision and Hugging Face models
    emit (issue 16): Mod, Min, Max, Sum, Mean, Gelu, Trilu, the composite
    reductions, and the Cast of -inf to int64 that a T5 encoder folds."""
    r = rng_for("mod")
    # Mixed signs on both sides and broadcasting; no zero divisors.
    den = r.integers(1, 6, (4,)) * np.where(r.random(4) < 0.5, -1, 1)
    binary("mod_int64_op13", 13, "Mod", r.integers(-20, 20, (3, 4)), den, out_type=I64)
    binary("mod_int64_fmod_op13", 13, "Mod", r.integers(-20, 20, (3, 4)), den, out_type=I64,
           fmod=1)
    # Float Mod on constants only (the shape arithmetic of exports).
    add("mod_float_constants_op13", 13,
        [node("Mod", ["p", "q"], ["m"], fmod=1), node("Add", ["x", "m"], ["y"])],
        [("x", randn(r, 2, 3))], ["y"],
        inits=[("p", f32([[5.5, -5.5, 7.0]])), ("q", f32([2.0, 2.0, -3.0]))])

    r = rng_for("sum_mean")
    add("sum_three_bcast_op13", 13, [node("Sum", ["a", "b", "c"], ["y"])],
        [("a", randn(r, 2, 3, 4)), ("b", randn(r, 4)), ("c", randn(r, 3, 1))], ["y"])
    add("sum_one_op13", 13, [node("Sum", ["a"], ["y"])], [("a", randn(r, 3, 4))], ["y"])
    add("mean_three_bcast_op13", 13, [node("Mean", ["a", "b", "c"], ["y"])],
        [("a", randn(r, 2, 3, 4)), ("b", randn(r, 3, 4)), ("c", randn(r, 1))], ["y"])

    r = rng_for("min_max")
    add("min_two_bcast_op13", 13, [node("Min", ["a", "b"], ["y"])],
        [("a", randn(r, 2, 3, 4)), ("b", randn(r, 4))], ["y"])
    add("max_three_op13", 13, [node("Max", ["a", "b", "c"], ["y"])],
        [("a", randn(r, 3, 4)), ("b", randn(r, 3, 4)), ("c", randn(r, 1, 4))], ["y"])
    add("min_int64_op13", 13, [node("Min", ["a", "b"], ["y"])],
        [("a", r.integers(-5, 5, (3, 4))), ("b", r.integers(-5, 5, (3, 1)))], [("y", I64)])
    add("max_int64_op13", 13, [node("Max", ["a", "b"], ["y"])],
        [("a", r.integers(-5, 5, (3, 4))), ("b", r.integers(-5, 5, (4,)))], [("y", I64)])

    r = rng_for("gelu")
    unary("gelu_op20", 20, "Gelu", 3 * randn(r, 2, 3, 4))
    unary("gelu_tanh_op20", 20, "Gelu", 3 * randn(r, 2, 3, 4), approximate="tanh")

    r = rng_for("trilu")
    unary("trilu_upper_op14", 14, "Trilu", randn(r, 2, 4, 5))
    add("trilu_lower_k_op14", 14, [node("Trilu", ["x", "k"], ["y"], upper=0)],
        [("x", randn(r, 5, 4))], ["y"], inits=[("k", i64(-1))])
    add("trilu_int64_k_op14", 14, [node("Trilu", ["x", "k"], ["y"])],
        [("x", r.integers(-9, 9, (3, 3, 4)))], [("y", I64)], inits=[("k", i64(1))])

    r = rng_for("reduce_composite")
    unary("reducel2_axes_attr_op13", 13, "ReduceL2", randn(r, 2, 3, 4), axes=[1])
    add("reducel2_axes_input_keepdims0_op18", 18,
        [node("ReduceL2", ["x", "axes"], ["y"], keepdims=0)],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("axes", i64([-1, 0]))])
    unary("reducel1_all_op13", 13, "ReduceL1", randn(r, 2, 3, 4))
    unary("reducesumsquare_keepdims0_op13", 13, "ReduceSumSquare", randn(r, 2, 3, 4),
          axes=[2], keepdims=0)
    add("reducelogsum_axes_input_op18", 18, [node("ReduceLogSum", ["x", "axes"], ["y"])],
        [("x", positive(r, 2, 3, 4))], ["y"], inits=[("axes", i64([1]))])

    r = rng_for("softplus_rounding")
    x = 12 * randn(r, 3, 8)
    x[0, :4] = [40.0, -40.0, 0.0, -0.0]
    unary("softplus_op13", 13, "Softplus", x)
    x = 4 * randn(r, 3, 8)
    x[0, :4] = [2.5, -2.5, -0.5, 7.0]
    unary("floor_op13", 13, "Floor", x)
    unary("ceil_op13", 13, "Ceil", x)

    r = rng_for("trigonometric")  # rotary embeddings' Cos and Sin (Llama, Qwen2, Gemma, Mistral)
    x = 8 * randn(r, 3, 8)
    x[0, :4] = [0.0, -0.0, 100.0, -100.0]
    unary("cos_op13", 13, "Cos", x)
    unary("sin_op13", 13, "Sin", x)

    r = rng_for("reduce_max_min")
    unary("reducemax_axes_attr_op13", 13, "ReduceMax", randn(r, 2, 3, 4), axes=[1])
    add("reducemax_axes_input_keepdims0_op18", 18,
        [node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("axes", i64([0, -1]))])
    unary("reducemin_all_keepdims0_op13", 13, "ReduceMin", randn(r, 2, 3, 4), keepdims=0)
    add("reducemax_int64_op13", 13, [node("ReduceMax", ["x"], ["y"], axes=[0])],
        [("x", r.integers(-50, 50, (3, 4)))], [("y", I64)])
    # Large values, where exp alone overflows float32.
    unary("reducelogsumexp_large_op13", 13, "ReduceLogSumExp", 100 * randn(r, 2, 3, 4),
          axes=[2])
    add("reducelogsumexp_axes_input_keepdims0_op18", 18,
        [node("ReduceLogSumExp", ["x", "axes"], ["y"], keepdims=0)],
        [("x", randn(r, 2, 3, 4))], ["y"], inits=[("axes", i64([1]))])

    # A T5 encoder's relative-position buckets: log(0) = -inf cast to int64 on
    # constants. ONNX leaves it to the implementation; ONNX Runtime (x86-64)
    # gives the smallest int64, for NaN and the infinities alike.
    r = rng_for("cast_inf")
    add("cast_inf_to_int64_folded_op13", 13,
        [node("Cast", ["c"], ["ci"], to=I64), node("Add", ["x", "ci"], ["y"])],
        [("x", r.integers(0, 10, (2, 5)))], [("y", I64)],
        inits=[("c", f32([-np.inf, np.inf, np.nan, -2.7, 3.9]))])


def einsum():
    """Einsum equations that are products (issue 16)."""
    def case(name, equation, *shapes):
        r = rng_for(name)
        names = ["x%d" % i for i in range(len(shapes))]
        add(name, 12 if "op12" in name else 13, [node("Einsum", names, ["y"], equation=equation)],
            [(n, randn(r, *s)) for n, s in zip(names, shapes)], ["y"])

    case("einsum_batch_matmul_op13", "bij,bjk->bik", (2, 3, 4), (2, 4, 5))
    case("einsum_attention_op13", "bhqd,bhkd->bhqk", (1, 2, 3, 4), (1, 2, 5, 4))
    case("einsum_implicit_matmul_op12", "ij,jk", (3, 4), (4, 2))
    case("einsum_dot_op13", "i,i->", (6,), (6,))
    case("einsum_transpose_sum_op13", "ijk->ki", (2, 3, 4))
    case("einsum_ellipsis_op13", "...ij,...jk->...ik", (2, 3, 4, 5), (2, 3, 5, 2))
    case("einsum_outer_op13", "ij,kl->ljik", (2, 3), (4, 2))
    case("einsum_three_operands_op13", "bn,anm,bm->ba", (2, 3), (4, 3, 5), (2, 5))
    # Diagonals (a letter repeated within an operand), a trace, broadcasting.
    case("einsum_diagonal_op13", "ii->i", (4, 4))
    case("einsum_trace_op13", "ii", (3, 3))
    case("einsum_batch_diagonal_product_op13", "bii,bij->bj", (2, 3, 3), (2, 3, 4))
    case("einsum_triple_diagonal_op13", "jiii->ij", (2, 3, 3, 3))
    case("einsum_broadcast_op13", "...ij,...jk->...ik", (2, 1, 3, 4), (1, 5, 4, 2))


def scatter_nd():
    """ScatterND with constant indices (Swin's attention mask), data and updates computed."""
    r = rng_for("scatter_nd")
    add("scatter_nd_slices_op13", 13, [node("ScatterND", ["x", "idx", "u"], ["y"])],
        [("x", randn(r, 4, 3, 2)), ("u", randn(r, 2, 3, 2))], ["y"], inits=[("idx", i64([[2], [0]]))])
    r = rng_for("scatter_nd_elements")
    add("scatter_nd_elements_op16", 16, [node("ScatterND", ["x", "idx", "u"], ["y"])],
        [("x", randn(r, 3, 4)), ("u", randn(r, 3))], ["y"], inits=[("idx", i64([[0, 1], [2, -1], [1, 0]]))])
    r = rng_for("scatter_nd_int")
    add("scatter_nd_int64_op18", 18, [node("ScatterND", ["x", "idx", "u"], ["y"])],
        [("x", r.integers(0, 9, (2, 2, 3))), ("u", r.integers(0, 9, (1, 3)))], [("y", I64)],
        inits=[("idx", i64([[1, 0]]))])


def reciprocal():
    r = rng_for("reciprocal")
    unary("reciprocal_op13", 13, "Reciprocal", positive(r, 3, 4) * np.sign(randn(r, 3, 4)))


def cumsum():
    """CumSum (RoBERTa's position ids: a cumulative sum of the token mask)."""
    def case(name, opset, x, axis, out_type=F, **attrs):
        add(name, opset, [node("CumSum", ["x", "axis"], ["y"], **attrs)], [("x", x)], [("y", out_type)],
            inits=[("axis", i64(axis))])

    r = rng_for("cumsum")
    case("cumsum_float_op13", 13, randn(r, 2, 7, 3), 1)
    case("cumsum_int64_last_axis_op14", 14, r.integers(-5, 6, (2, 13)), -1, out_type=I64)
    case("cumsum_exclusive_reverse_op13", 13, randn(r, 5, 4), 0, exclusive=1, reverse=1)
    case("cumsum_reverse_op13", 13, randn(r, 3, 9), 1, reverse=1)


def resize():
    """Resize in the forms exporters write (issue 16): nearest with each
    rounding, linear and cubic with each coordinate transformation, scales or
    sizes, opset 18's axes, 1-D (N x C x L). (ONNX Runtime has no int64 Resize.)"""
    def case(name, opset, x_shape, scales=None, sizes=None, **attrs):
        r = rng_for(name)
        x = randn(r, *x_shape)
        inits = [("roi", np.zeros(0, np.float32))]
        ins = ["x", "roi"]
        inits.append(("scales", f32(scales if scales is not None else [])))
        ins.append("scales")
        if sizes is not None:
            inits.append(("sizes", i64(sizes)))
            ins.append("sizes")
        add(name, opset, [node("Resize", ins, ["y"], **attrs)], [("x", x)], ["y"], inits=inits)

    # PyTorch's nearest (legacy exporter: asymmetric, floor) and nearest-exact (half_pixel, round_prefer_floor).
    case("resize_nearest_asymmetric_floor_op13", 13, (1, 2, 3, 4), scales=[1, 1, 2, 2], mode="nearest",
         coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    case("resize_nearest_half_pixel_op13", 13, (1, 2, 5, 4), sizes=[1, 2, 7, 9])
    case("resize_nearest_round_prefer_ceil_op18", 18, (2, 1, 6, 5), scales=[1, 1, 0.5, 1.7],
         nearest_mode="round_prefer_ceil")
    case("resize_nearest_ceil_align_corners_op13", 13, (1, 3, 4, 4), sizes=[1, 3, 7, 3],
         coordinate_transformation_mode="align_corners", nearest_mode="ceil")
    # PyTorch's bilinear: pytorch_half_pixel (legacy) or half_pixel (dynamo); align_corners=True.
    case("resize_linear_pytorch_half_pixel_op13", 13, (1, 2, 4, 5), scales=[1, 1, 2, 2], mode="linear",
         coordinate_transformation_mode="pytorch_half_pixel")
    case("resize_linear_pytorch_half_pixel_to_one_op13", 13, (1, 2, 4, 5), sizes=[1, 2, 1, 3], mode="linear",
         coordinate_transformation_mode="pytorch_half_pixel")
    case("resize_linear_half_pixel_down_op18", 18, (1, 2, 9, 7), sizes=[1, 2, 4, 5], mode="linear")
    case("resize_linear_align_corners_op13", 13, (2, 3, 4, 3), sizes=[2, 3, 7, 8], mode="linear",
         coordinate_transformation_mode="align_corners")
    case("resize_linear_asymmetric_op13", 13, (1, 1, 5, 6), scales=[1, 1, 1.5, 0.6], mode="linear",
         coordinate_transformation_mode="asymmetric")
    case("resize_linear_1d_op13", 13, (1, 3, 7), scales=[1, 1, 2.5], mode="linear")
    case("resize_linear_axes_op18", 18, (1, 2, 5, 6), sizes=[9, 4], mode="linear", axes=[2, 3])
    case("resize_linear_half_pixel_symmetric_op19", 19, (1, 1, 4, 6), scales=[1, 1, 1.7, 0.6], mode="linear",
         coordinate_transformation_mode="half_pixel_symmetric")
    # PyTorch's bicubic (a = -0.75), and exclude_outside with a = -0.5.
    case("resize_cubic_align_corners_op13", 13, (1, 2, 4, 5), sizes=[1, 2, 8, 7], mode="cubic",
         coordinate_transformation_mode="align_corners", cubic_coeff_a=-0.75)
    case("resize_cubic_pytorch_half_pixel_op13", 13, (1, 1, 6, 6), scales=[1, 1, 1.5, 0.5], mode="cubic",
         coordinate_transformation_mode="pytorch_half_pixel", cubic_coeff_a=-0.75)
    case("resize_cubic_exclude_outside_op18", 18, (1, 2, 5, 5), scales=[1, 1, 2, 2], mode="cubic",
         exclude_outside=1, cubic_coeff_a=-0.5)


def windows():
    """1-D convolution and pooling, global max pooling, ConvTranspose (issue 16)."""
    def conv_case(name, opset, op, x_shape, w_shape, bias=True, **attrs):
        r = rng_for(name)
        ins = ["x", "w"] + (["b"] if bias else [])
        inits = [("w", randn(r, *w_shape))]
        if bias:
            out_channels = w_shape[0] if op == "Conv" else w_shape[1] * attrs.get("group", 1)
            inits.append(("b", randn(r, out_channels)))
        add(name, opset, [node(op, ins, ["y"], **attrs)],
            [("x", randn(r, *x_shape))], ["y"], inits=inits)

    conv_case("conv1d_pads_strides_op13", 13, "Conv", (2, 3, 11), (4, 3, 3), pads=[1, 2],
              strides=[2])
    conv_case("conv1d_groups_dilation_op11", 11, "Conv", (1, 4, 9), (6, 2, 2), bias=False,
              group=2, dilations=[3])
    conv_case("conv1d_same_lower_op13", 13, "Conv", (1, 2, 6), (3, 2, 4), auto_pad="SAME_LOWER",
              strides=[2])

    conv_case("convtranspose_op11", 11, "ConvTranspose", (1, 3, 4, 5), (3, 2, 3, 3))
    conv_case("convtranspose_strides_pads_outpad_op13", 13, "ConvTranspose", (2, 2, 4, 3),
              (2, 3, 3, 2), strides=[2, 3], pads=[1, 0, 1, 1], output_padding=[1, 2])
    conv_case("convtranspose_groups_dilation_op11", 11, "ConvTranspose", (1, 4, 3, 3),
              (4, 1, 2, 3), bias=False, group=2, dilations=[2, 1], strides=[2, 2])
    # pads beyond the kernel's extent: the result is cropped.
    conv_case("convtranspose_large_pads_op13", 13, "ConvTranspose", (1, 2, 6, 6), (2, 2, 2, 2),
              strides=[2, 2], pads=[2, 1, 3, 2])
    conv_case("convtranspose_same_upper_op13", 13, "ConvTranspose", (1, 2, 3, 4), (2, 2, 3, 3),
              auto_pad="SAME_UPPER", strides=[2, 2])
    conv_case("convtranspose1d_op13", 13, "ConvTranspose", (1, 3, 5), (3, 2, 4), strides=[2],
              pads=[1, 1])

    def pool(name, opset, op, x_shape, **attrs):
        r = rng_for(name)
        unary(name, opset, op, randn(r, *x_shape), **attrs)

    pool("maxpool1d_pads_strides_op13", 13, "MaxPool", (2, 3, 9), kernel_shape=[3],
         strides=[2], pads=[1, 1])
    pool("maxpool1d_ceil_op11", 11, "MaxPool", (1, 2, 6), kernel_shape=[3], strides=[2],
         ceil_mode=1)
    pool("avgpool1d_include_pad_op13", 13, "AveragePool", (1, 3, 7), kernel_shape=[2],
         strides=[2], pads=[1, 0], count_include_pad=1)
    pool("globalavgpool1d_op13", 13, "GlobalAveragePool", (2, 3, 5))
    pool("globalmaxpool_op13", 13, "GlobalMaxPool", (2, 3, 4, 5))


def special():
    # Nodes not in topological order (graph.node reversed). onnx.checker rejects
    # this ("Nodes in a graph must be topologically sorted"), so the checker is
    # skipped for this case only; onnxruntime sorts the graph itself.
    r = rng_for("unsorted")
    add("unsorted_nodes_op13", 13,
        [node("Relu", ["x"], ["t0"]),
         node("Mul", ["t0", "w"], ["t1"]),
         node("Add", ["t1", "b"], ["t2"]),
         node("Sigmoid", ["t2"], ["t3"]),
         node("Transpose", ["t3"], ["y"], perm=[1, 0])],
        [("x", randn(r, 3, 4))], ["y"], inits=[("w", randn(r, 4)), ("b", randn(r, 3, 1))],
        check=False, shuffle_nodes=True)

    # Initializers stored as external data in weights.bin next to model.onnx.
    r = rng_for("external")
    add("external_data_matmul_add_op13", 13,
        [node("MatMul", ["x", "w"], ["t"]), node("Add", ["t", "b"], ["y"])],
        [("x", randn(r, 3, 8))], ["y"], inits=[("w", randn(r, 8, 4)), ("b", randn(r, 4))],
        external_data=True)


# ----------------------------------------------------------------------------
# Bad models
# ----------------------------------------------------------------------------

BAD_README = """\
# Malformed and unsupported ONNX models

Written by `tools/make_onnx_cases.py`. None has reference outputs; each must
make the importer fail with a clear error (and never crash).

| file | what it is | expected result |
| --- | --- | --- |
| `truncated.onnx` | the first 300 bytes of a valid model (`conv_bias_pads1_op11`'s `model.onnx`) | parse error: the protobuf is cut short |
| `not_onnx.onnx` | a short text file | parse error: not an ONNX protobuf |
| `empty.onnx` | 0 bytes | error: empty file / no graph (protobuf parses it as an empty ModelProto) |
| `unsupported_op.onnx` | a valid opset-13 model (passes `onnx.checker` with `full_check`) whose node `my_det_node` has op_type `Det` | unsupported-operator error naming `Det` and the node `my_det_node` |
| `custom_domain.onnx` | a model whose node `custom_node` is `MyOp` in domain `com.example` (opset imports `""`:13 and `com.example`:1); `onnx.checker` accepts it (it does not check unknown domains), onnxruntime refuses it | unsupported-operator error naming `com.example`, `MyOp` and the node `custom_node` |
"""


def write_bad(root, ops_root):
    os.makedirs(root)
    src = open(os.path.join(ops_root, "conv_bias_pads1_op11", "model.onnx"), "rb").read()
    assert len(src) > 300
    with open(os.path.join(root, "truncated.onnx"), "wb") as f:
        f.write(src[:300])
    with open(os.path.join(root, "not_onnx.onnx"), "w") as f:
        f.write("this is not an ONNX model\n")
    open(os.path.join(root, "empty.onnx"), "wb").close()

    def save(name, nodes, opsets, inp, out, check):
        g = helper.make_graph(nodes, name.split(".")[0], [inp], [out])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                              producer_name="tgr-make_onnx_cases", producer_version="1")
        m.ir_version = IR_VERSION
        if check:
            onnx.checker.check_model(m, full_check=True)
        onnx.save_model(m, os.path.join(root, name))

    save("unsupported_op.onnx",
         [helper.make_node("Det", ["x"], ["y"], name="my_det_node")], [("", 13)],
         helper.make_tensor_value_info("x", F, [3, 3]),
         helper.make_tensor_value_info("y", F, []), check=True)
    save("custom_domain.onnx",
         [helper.make_node("MyOp", ["x"], ["y"], name="custom_node", domain="com.example")],
         [("", 13), ("com.example", 1)],
         helper.make_tensor_value_info("x", F, [2, 3]),
         helper.make_tensor_value_info("y", F, [2, 3]), check=True)
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write(BAD_README)


# ----------------------------------------------------------------------------
# Verification of what is on disk
# ----------------------------------------------------------------------------

def verify(ops_root):
    """Reloads every case listed in cases.txt and runs it with onnxruntime's
    default settings (all graph optimizations, default threads); the outputs
    must match the stored ones closely. Returns the number of failures."""
    failures = 0
    with open(os.path.join(ops_root, "cases.txt")) as f:
        listed = [line.split() for line in f if line.strip()]
    for name, opset in listed:
        d = os.path.join(ops_root, name)
        path = os.path.join(d, "model.onnx")
        try:
            model = onnx.load(path)
            got_opset = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
            assert got_opset == [int(opset)], (got_opset, opset)
            ds = os.path.join(d, "test_data_set_0")
            feeds = {}
            for i, vi in enumerate(model.graph.input):
                t = onnx.load_tensor(os.path.join(ds, "input_%d.pb" % i))
                assert t.name == vi.name, (t.name, vi.name)
                feeds[t.name] = numpy_helper.to_array(t)
            assert not os.path.exists(os.path.join(ds, "input_%d.pb" % len(feeds)))
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            results = sess.run(None, feeds)
            for i, vi in enumerate(model.graph.output):
                t = onnx.load_tensor(os.path.join(ds, "output_%d.pb" % i))
                assert t.name == vi.name, (t.name, vi.name)
                want = numpy_helper.to_array(t)
                got = results[i]
                assert got.dtype == want.dtype and got.shape == want.shape, \
                    (vi.name, got.dtype, got.shape, want.dtype, want.shape)
                if want.dtype.kind == "f":
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
                else:
                    assert np.array_equal(got, want), vi.name
        except Exception as e:
            failures += 1
            print("FAIL %s: %s" % (name, e), file=sys.stderr)
    print("verified %d cases, %d failures" % (len(listed), failures))
    return failures


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-root", default=os.path.join(here, "..", "tests", "data"),
                    help="folder that receives onnx_ops/ and onnx_bad/ (default: tests/data)")
    ap.add_argument("--verify", action="store_true",
                    help="write nothing: reload and rerun the cases already on disk")
    args = ap.parse_args()
    if args.verify:
        sys.exit(1 if verify(os.path.join(args.out_root, "onnx_ops")) else 0)

    for fn in (elementwise, softmax, normalization, conv, gemm, matmul, pooling,
               reductions, shape_ops, gather, logic, cast, constants, folding, exporter_ops,
               windows, einsum, resize, cumsum, reciprocal, scatter_nd, special):
        fn()

    ops_root = os.path.join(args.out_root, "onnx_ops")
    bad_root = os.path.join(args.out_root, "onnx_bad")
    for d in (ops_root, bad_root):
        if os.path.isdir(d):
            shutil.rmtree(d)
    os.makedirs(ops_root)

    for c in CASES:
        try:
            write_case(c, ops_root)
        except Exception as e:  # name the case, then fail
            print("case %s failed: %s" % (c["name"], e), file=sys.stderr)
            raise
    with open(os.path.join(ops_root, "cases.txt"), "w") as f:
        for c in sorted(CASES, key=lambda c: c["name"]):
            f.write("%s %d\n" % (c["name"], c["opset"]))
    write_bad(bad_root, ops_root)

    opsets = sorted({c["opset"] for c in CASES})
    print("wrote %d cases (opsets %s) under %s" % (len(CASES), opsets, ops_root))


if __name__ == "__main__":
    main()
