#!/usr/bin/env python3
"""Writes a float16 or bfloat16 copy of a float32 ONNX model, and optionally
a test data set for it (the float32 set's inputs rounded to the type, and
reference outputs from ONNX Runtime running the half model).

The reference outputs come from ONNX Runtime running the half model
(--reference half, the default), or, where its CPU kernels lack the type
(bfloat16: ONNX Runtime 1.32's CPU provider runs no bfloat16 arithmetic), from
the float32 model run on the rounded inputs, its outputs rounded to the type
(--reference float32).

Every float32 tensor of the model takes the type: initializers (raw_data,
or int32_data with --int32-data, ONNX's other encoding of 16-bit types),
Constant nodes' values, graph inputs, outputs and value_info, and Cast
nodes' `to`. Written with onnx's numpy helpers (ml_dtypes for bfloat16).

  make_half_model.py MODEL.onnx --type float16 -o OUT.onnx \
      [--test-data DIR --out-test-data OUT_DIR [--reference half|float32]]
"""
import argparse
import os
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

NUMPY = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
ELEM = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16}


def half_tensor(t, kind, int32_data):
    if t.data_type != TensorProto.FLOAT:
        return t
    values = numpy_helper.to_array(t).astype(NUMPY[kind])
    if not int32_data:
        return numpy_helper.from_array(values, t.name)
    out = TensorProto(name=t.name, data_type=ELEM[kind], dims=list(t.dims))
    out.int32_data.extend(values.view(np.uint16).astype(np.int32).ravel().tolist())
    return out


def convert(model, kind, int32_data):
    g = model.graph
    for i, t in enumerate(list(g.initializer)):
        g.initializer[i].CopyFrom(half_tensor(t, kind, int32_data))
    for info in list(g.input) + list(g.output) + list(g.value_info):
        tt = info.type.tensor_type
        if tt.elem_type == TensorProto.FLOAT:
            tt.elem_type = ELEM[kind]
    for node in g.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = ELEM[kind]
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(half_tensor(a.t, kind, int32_data))
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--type", required=True, choices=sorted(NUMPY))
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--int32-data", action="store_true", help="initializers in int32_data instead of raw_data")
    p.add_argument("--test-data", help="a float32 test data set (input_K.pb) to round and run")
    p.add_argument("--out-test-data", help="where the half model's test data set goes")
    p.add_argument("--reference", choices=["half", "float32"], default="half",
                   help="what computes the reference outputs: the half model, or the float32 one (rounded)")
    a = p.parse_args()
    model = convert(onnx.load(a.model), a.type, a.int32_data)
    onnx.checker.check_model(model)
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    onnx.save(model, a.output)
    if not a.test_data:
        return 0
    import onnxruntime as ort
    os.makedirs(a.out_test_data, exist_ok=True)
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    feeds = {}
    k = 0
    while os.path.exists(os.path.join(a.test_data, f"input_{k}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(a.test_data, f"input_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        x = numpy_helper.to_array(t)
        if x.dtype == np.float32:
            x = x.astype(NUMPY[a.type])
        name = t.name if t.name in names else names[k]
        feeds[name] = x
        with open(os.path.join(a.out_test_data, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, name).SerializeToString())
        k += 1
    if a.reference == "half":
        session = ort.InferenceSession(a.output, providers=["CPUExecutionProvider"])
        outputs = session.run(None, feeds)
    else:
        session = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
        wide = {n: x.astype(np.float32) if x.dtype == NUMPY[a.type] else x for n, x in feeds.items()}
        outputs = [y.astype(NUMPY[a.type]) if y.dtype == np.float32 else y for y in session.run(None, wide)]
    for k, (info, y) in enumerate(zip(model.graph.output, outputs)):
        with open(os.path.join(a.out_test_data, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(y), info.name).SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
