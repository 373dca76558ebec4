#!/usr/bin/env python3
"""Checks an optimized model in ONNX Runtime (CPU, all graph optimizations on).

Usage: python3 tests/ort_outputs_check.py MODEL.onnx TEST_DATA_DIR

The model's outputs on TEST_DATA_DIR's input_K.pb must equal output_K.pb
(relative L2 error below 1e-4, as `run --test-data`). A model tgr exported
(producer "tgr ...") must also be in the forms runtimes fuse
(onnx/export_fusions.h): no Add whose operands are a Conv's output read only
there and a per-channel initializer (that is a Conv's B), no Add of a rank-2
MatMul's output read only there (a Gemm), no Pad read only as a Conv's or
Pool's data input (their pads). Prints "ORT OK: MODEL ..." and exits 0, or
names the problem and exits 1.
"""

import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import ort_timing  # noqa: E402


def unfused_forms(model):
    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    readers = {}
    for n in g.node:
        for i in n.input:
            readers[i] = readers.get(i, 0) + 1
    for o in g.output:
        readers[o.name] = readers.get(o.name, 0) + 1
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    ranks = {}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        if v.type.tensor_type.HasField("shape"):
            ranks[v.name] = len(v.type.tensor_type.shape.dim)
    for t in g.initializer:
        ranks[t.name] = len(t.dims)
    problems = []
    for n in g.node:
        if n.op_type == "Add":
            for a, b in (n.input, reversed(n.input)):
                p = producer.get(a)
                if p is None or readers.get(a) != 1:
                    continue
                if p.op_type == "Conv" and len(p.input) == 2 and b in inits:
                    s = inits[b].shape
                    full = (1,) * (4 - len(s)) + tuple(s)
                    if len(s) <= 4 and full[0] == 1 and full[2] == 1 and full[3] == 1:
                        problems.append("Add %s is the bias of Conv %s" % (n.name, p.name))
                if p.op_type == "MatMul" and all(ranks.get(i) == 2 for i in p.input) and ranks.get(b, 3) <= 2:
                    problems.append("Add %s after MatMul %s is a Gemm" % (n.name, p.name))
        if n.op_type in ("Conv", "AveragePool", "MaxPool"):
            p = producer.get(n.input[0])
            if p is not None and p.op_type == "Pad" and readers.get(n.input[0]) == 1:
                pads = inits.get(p.input[1]) if len(p.input) > 1 else None
                if pads is not None and len(pads) == 8 and not any(pads[[0, 1, 4, 5]]):
                    value = inits.get(p.input[2]) if len(p.input) > 2 and p.input[2] else np.float32(0)
                    if n.op_type != "MaxPool" and value is not None and float(value) == 0:
                        problems.append("Pad %s is %s %s's pads" % (p.name, n.op_type, n.name))
    return problems


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    path, data = argv[1], argv[2]
    model = onnx.load(path)
    if model.producer_name.startswith("tgr"):
        problems = unfused_forms(model)
        if problems:
            print("UNFUSED: %s\n  %s" % (path, "\n  ".join(problems)), file=sys.stderr)
            return 1
    sess = ort_timing.session(path)
    got = sess.run(None, ort_timing.test_data_feeds(sess, data))
    worst = 0.0
    for k, value in enumerate(got):
        t = onnx.TensorProto()
        with open(os.path.join(data, "output_%d.pb" % k), "rb") as f:
            t.ParseFromString(f.read())
        want = numpy_helper.to_array(t).astype(np.float64)
        err = np.linalg.norm(value.astype(np.float64) - want) / max(np.linalg.norm(want), 1e-30)
        worst = max(worst, err)
    if not worst < 1e-4:
        print("WRONG: %s: relative L2 error %.3g on ONNX Runtime" % (path, worst), file=sys.stderr)
        return 1
    print("ORT OK: %s (%d nodes, relative L2 error %.1e)" % (path, len(model.graph.node), worst))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
