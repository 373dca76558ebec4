#!/usr/bin/env python3
"""Checks that an optimized model kept the element types of the model it came
from, and its size (docs/onnx.md, "Precision").

Usage: python3 tests/half_model_check.py ORIGINAL.onnx OPTIMIZED.onnx TYPE
           [--onnxruntime TEST_DATA_DIR]

TYPE (float16 or bfloat16) is the type every float initializer, graph input
and graph output of OPTIMIZED must have wherever ORIGINAL's has it (no float32
tensor may appear). OPTIMIZED's file must be at most 1 % larger than
ORIGINAL's plus two bytes for each initializer element it holds beyond
ORIGINAL's (what rewrites add). With --onnxruntime, OPTIMIZED runs in ONNX
Runtime on TEST_DATA_DIR's inputs and its outputs must be within the type's
relative L2 tolerance of output_K.pb (float16 1e-2). Prints "HALF OK: ..." and
exits 0, or names the problem and exits 1.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

ELEM = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16}
TOLERANCE = {"float16": 1e-2, "bfloat16": 5e-2}


def elements(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def main(argv):
    if len(argv) not in (4, 6) or argv[3] not in ELEM or (len(argv) == 6 and argv[4] != "--onnxruntime"):
        print(__doc__.strip(), file=sys.stderr)
        return 1
    original_path, optimized_path, kind = argv[1], argv[2], argv[3]
    original, optimized = onnx.load(original_path), onnx.load(optimized_path)
    problems = []
    for what, values in (("initializer", optimized.graph.initializer),):
        for t in values:
            if t.data_type == TensorProto.FLOAT:
                problems.append(f"{what} {t.name} is float32")
    for what, a, b in (("input", original.graph.input, optimized.graph.input),
                       ("output", original.graph.output, optimized.graph.output)):
        types = {v.name: v.type.tensor_type.elem_type for v in a}
        for v in b:
            if v.name in types and v.type.tensor_type.elem_type != types[v.name]:
                problems.append(f"graph {what} {v.name} has element type {v.type.tensor_type.elem_type}, "
                                f"the original {types[v.name]}")
    added = max(0, sum(map(elements, optimized.graph.initializer)) - sum(map(elements, original.graph.initializer)))
    size, limit = os.path.getsize(optimized_path), 1.01 * os.path.getsize(original_path) + 2 * added
    if size > limit:
        problems.append(f"{size} bytes, more than {limit:.0f} (1 % over the original's "
                        f"{os.path.getsize(original_path)} plus {added} added elements)")
    if len(argv) == 6:
        import onnxruntime as ort
        data = argv[5]
        session = ort.InferenceSession(optimized_path, providers=["CPUExecutionProvider"])
        feeds, k = {}, 0
        names = [i.name for i in session.get_inputs()]
        while os.path.exists(os.path.join(data, f"input_{k}.pb")):
            t = onnx.load_tensor(os.path.join(data, f"input_{k}.pb"))
            feeds[t.name if t.name in names else names[k]] = numpy_helper.to_array(t)
            k += 1
        for k, y in enumerate(session.run(None, feeds)):
            ref = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"output_{k}.pb"))).astype(np.float64)
            y = np.asarray(y).astype(np.float64)
            rel = np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-30)
            if not rel <= TOLERANCE[kind]:
                problems.append(f"ONNX Runtime output {k}: relative L2 error {rel:.3e} above {TOLERANCE[kind]:.0e}")
            else:
                print(f"ONNX Runtime output {k}: relative L2 error {rel:.3e}")
    if problems:
        for p in problems:
            print(f"{optimized_path}: {p}", file=sys.stderr)
        return 1
    print(f"HALF OK: {optimized_path} ({kind}, {os.path.getsize(optimized_path)} bytes, the original "
          f"{os.path.getsize(original_path)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
