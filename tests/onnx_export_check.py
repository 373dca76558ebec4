#!/usr/bin/env python3
"""Checks the ONNX exporter against onnxruntime.

Usage: python3 tests/onnx_export_check.py DIR [-v]

DIR holds what build/bin/export_samples writes: one folder per case with
model.onnx and test_data_set_0/{input_K.pb, output_K.pb}, the outputs computed
by tgr's reference interpreter in float32. For every case this runs
onnx.checker.check_model(full_check=True) and onnxruntime (CPU), and compares
onnxruntime's outputs (without graph optimizations, and with all of them)
with tgr's: same names, element types and shapes; float
outputs within a relative L2 error of 1e-5 (NaN where the other is NaN),
integer and bool outputs exactly. Prints one line per case with -v, a summary
always, and exits 1 listing the failures (or when DIR holds no case).

Needs the Python packages onnx and onnxruntime: pip install onnx onnxruntime
"""

import glob
import os
import sys

TOLERANCE = 1e-5
# Each model runs twice: as written, and after onnxruntime's graph rewrites.
LEVELS = [("no optimizations", "ORT_DISABLE_ALL"), ("all optimizations", "ORT_ENABLE_ALL")]


def load_tensor(path, numpy_helper, onnx):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def numbered(folder, prefix):
    files = glob.glob(os.path.join(folder, prefix + "_*.pb"))
    return sorted(files, key=lambda p: int(os.path.basename(p)[len(prefix) + 1:-3]))


def compare(name, got, want, np):
    """An error message, or None when `got` (onnxruntime) matches `want` (tgr)."""
    if got.dtype != want.dtype:
        return "%s: element type %s, expected %s" % (name, got.dtype, want.dtype)
    if got.shape != want.shape:
        return "%s: shape %s, expected %s" % (name, got.shape, want.shape)
    if want.dtype.kind != "f":
        bad = int(np.count_nonzero(got != want))
        return None if bad == 0 else "%s: %d of %d elements differ" % (name, bad, want.size)
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    if not np.array_equal(gn, wn):
        return "%s: NaN at %d positions, expected %d" % (name, int(gn.sum()), int(wn.sum()))
    g, w = g[~wn], w[~wn]
    if not np.array_equal(np.isinf(g), np.isinf(w)) or not np.array_equal(g[np.isinf(g)], w[np.isinf(w)]):
        return "%s: infinities differ" % name
    finite = ~np.isinf(w)
    diff = np.linalg.norm(g[finite] - w[finite])
    norm = np.linalg.norm(w[finite])
    err = diff / norm if norm > 0 else diff
    return None if err <= TOLERANCE else "%s: relative L2 error %.3g > %g" % (name, err, TOLERANCE)


def check_case(case_dir, modules):
    onnx, ort, numpy_helper, np = modules
    model_path = os.path.join(case_dir, "model.onnx")
    try:
        onnx.checker.check_model(model_path, full_check=True)
    except Exception as e:  # ValidationError, InferenceError, ...
        return ["onnx.checker: %s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")]
    data = os.path.join(case_dir, "test_data_set_0")
    inputs = dict(load_tensor(p, numpy_helper, onnx) for p in numbered(data, "input"))
    expected = [load_tensor(p, numpy_helper, onnx) for p in numbered(data, "output")]
    problems = []
    for label, level in LEVELS:
        try:
            options = ort.SessionOptions()
            options.log_severity_level = 3
            options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
            session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
            names = [o.name for o in session.get_outputs()]
            if names != [n for n, _ in expected]:
                return ["outputs %s, expected %s" % (names, [n for n, _ in expected])]
            results = session.run(names, inputs)
        except Exception as e:
            problems.append("onnxruntime (%s): %s: %s" % (label, type(e).__name__, str(e).strip()))
            continue
        for (name, want), got in zip(expected, results):
            msg = compare(name, np.asarray(got), want, np)
            if msg:
                problems.append("%s (%s)" % (msg, label))
    return problems


def main(argv):
    args = [a for a in argv[1:] if a != "-v"]
    verbose = "-v" in argv[1:]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(args) != 1 else sys.stdout)
        return 0 if args and args[0] in ("-h", "--help") else 1
    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
        from onnx import numpy_helper
    except ImportError as e:
        print("onnx_export_check: FAILED: the Python packages onnx and onnxruntime are needed (%s); "
              "install them with: pip install onnx onnxruntime" % e, file=sys.stderr)
        return 1
    root = args[0]
    cases = sorted(d for d in glob.glob(os.path.join(root, "*")) if os.path.isfile(os.path.join(d, "model.onnx")))
    if not cases:
        print("onnx_export_check: FAILED: no cases (folders with model.onnx) in %s" % root, file=sys.stderr)
        return 1
    failures = []
    for case in cases:
        problems = check_case(case, (onnx, ort, numpy_helper, np))
        name = os.path.basename(case)
        if problems:
            failures.append((name, problems))
        if verbose or problems:
            print("%-40s %s" % (name, "ok" if not problems else "FAIL: " + "; ".join(problems)))
    print("onnx_export_check: %d of %d cases match onnxruntime %s (onnx %s)" %
          (len(cases) - len(failures), len(cases), ort.__version__, onnx.__version__))
    if failures:
        print("onnx_export_check: FAILED: " + ", ".join(n for n, _ in failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
