"""`optimize` passes an operator it has no mapping for through untouched.

Writes a model in which two MatMuls share an input (the optimizer merges
them under the roofline target) and an operator tgr does not map (Det) reads
one of the products, runs
`optimize` on it, and checks with onnx.checker and onnxruntime that the
optimized model still has the Det node, has one MatMul, and computes what
the original computes.

usage: optimize_opaque_check.py OPTIMIZE WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def build(path):
    rng = np.random.default_rng(1)
    w0 = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w0")
    w1 = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w1")
    nodes = [
        helper.make_node("MatMul", ["x", "w0"], ["a"], name="proj_a"),
        helper.make_node("MatMul", ["x", "w1"], ["b"], name="proj_b"),
        helper.make_node("Det", ["a"], ["det"], name="my_det"),
    ]
    graph = helper.make_graph(
        nodes, "opaque_between",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info("det", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 4])],
        initializer=[w0, w1],
        value_info=[helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def run(path, x):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def main():
    optimize, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    original = os.path.join(workdir, "opaque_between.onnx")
    optimized = os.path.join(workdir, "opaque_between.optimized.onnx")
    build(original)
    subprocess.run([optimize, original, "-o", optimized, "--target", "roofline"], check=True)
    model = onnx.load(optimized)
    onnx.checker.check_model(model, full_check=True)
    types = [n.op_type for n in model.graph.node]
    assert types.count("Det") == 1, types
    assert [n.name for n in model.graph.node if n.op_type == "Det"] == ["my_det"], types
    assert types.count("MatMul") == 1, f"the two products were not merged: {types}"
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    for want, got in zip(run(original, x), run(optimized, x)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # Without a static shape for the opaque node's output, optimize refuses
    # the model with a message naming the node.
    unknown = onnx.load(original)
    unknown.graph.node.append(helper.make_node("Relu", ["det"], ["r"], name="after_det"))
    del unknown.graph.output[0]
    unknown.graph.output.insert(0, helper.make_tensor_value_info("r", TensorProto.FLOAT, []))
    unknown.graph.node[2].output[0] = "det"
    unknown_path = os.path.join(workdir, "opaque_unknown_shape.onnx")
    onnx.save(unknown, unknown_path)
    result = subprocess.run([optimize, unknown_path, "-o", optimized + ".x"], capture_output=True, text=True)
    assert result.returncode == 1, result
    assert "node 'my_det' (Det, opset 13): operator not supported" in result.stderr, result.stderr
    assert "does not state the static shape of its output 'det'" in result.stderr, result.stderr
    print("opaque node kept; outputs equal")


if __name__ == "__main__":
    main()
