#!/usr/bin/env python3
"""ONNX Runtime CPU time of original models against `optimize --target
onnxruntime-cpu` output (a benchmark program, not a test: docs/benchmarks.md).

Usage:
  tools/bench_ort.py [--bin build/bin] [--rounds 40] [--runs 10] [--threads 1]
      [--target onnxruntime-cpu] [--optimize-arg=ARG ...] [--no-bundled] [MODEL.onnx ...]

Models: the bundled ones (tests/data/models/*.onnx, fed their test data;
not with --no-bundled) and any given. Each is optimized (`optimize --target onnxruntime-cpu`, the shipped
ONNX Runtime cost table; --target roofline shows what the analytic model's
choices cost in ONNX Runtime) and both models are loaded into ONNX Runtime (CPU
provider, all graph optimizations on), with a second session of the original
as a control. Each round times --runs runs of each of the three sessions, in
an order that alternates from round to round (interleaved: a load change on
the shared machine hits all three alike). Printed per model: the median run
time of original and optimized, their ratio (median of the rounds' ratios,
with the 25th-75th percentile of those ratios) and the control's ratio
(original against itself: the measurement's noise). Outputs of the optimized
model are compared with the original's first. optimize measures its rewrite
against the model before writing it (unless --optimize-arg=--no-measure);
where it did, the last column says what it measured and decided.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_timing  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quartiles(values):
    v = sorted(values)
    return v[len(v) // 4], statistics.median(v), v[(3 * len(v)) // 4]


def bench(model, optimized, feeds_for, a):
    original, control, opt = (ort_timing.session(p, a.threads) for p in (model, model, optimized))
    feeds = feeds_for(original)
    expected = original.run(None, feeds)
    for want, got in zip(expected, opt.run(None, feeds)):
        if not np.allclose(want, got, rtol=1e-3, atol=1e-4):
            raise RuntimeError("the optimized model's outputs differ from the original's")
    sessions = {"original": original, "control": control, "optimized": opt}
    times = {k: [] for k in sessions}
    ratios, noise = [], []
    order = list(sessions)
    for r in range(a.rounds):
        block = {}
        for k in order if r % 2 == 0 else reversed(order):
            block[k] = statistics.median(ort_timing.wall_us(sessions[k], feeds, a.runs))
            times[k].append(block[k])
        ratios.append(block["optimized"] / block["original"])
        noise.append(block["control"] / block["original"])
    return {k: statistics.median(v) for k, v in times.items()}, quartiles(ratios), quartiles(noise)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", help="exported ONNX models besides the bundled ones")
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--runs", type=int, default=10, help="runs per session per round (their median is the sample)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--target", default="onnxruntime-cpu", help="optimize's --target (default onnxruntime-cpu)")
    p.add_argument("--optimize-arg", action="append", default=[], help="passed to optimize")
    p.add_argument("--no-bundled", action="store_true", help="only the models given, not the bundled ones")
    a = p.parse_args()
    bundled = [] if a.no_bundled else sorted(glob.glob(os.path.join(ROOT, "tests", "data", "models", "*.onnx")))
    print("optimize --target %s; ONNX Runtime %s, CPU, all graph optimizations, %d thread(s); %d rounds x %d runs, "
          "interleaved" % (a.target, ort_timing.ort.__version__, a.threads, a.rounds, a.runs))
    print("%-22s %12s %12s %22s %22s  %s" % ("model", "original ms", "optimized ms", "ratio (25-75%)",
                                              "control (25-75%)", "optimize"))
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="bench_ort.") as tmp:
        for model in bundled + a.models:
            name = os.path.splitext(os.path.basename(model))[0]
            out, report = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".json")
            subprocess.run([os.path.join(a.bin, "optimize"), model, "-o", out, "-q", "--target", a.target,
                            "--report", report] + a.optimize_arg, check=True)
            with open(report) as f:
                r = json.load(f)
            applied = sum(u["count"] for u in r["rules_applied"])
            what = "%d rewrites, %d -> %d ops" % (applied, r["operators_before"], r["operators_after"])
            m = r.get("measured")
            if m and m.get("ratio"):  # optimize's own check before writing (optimizer/measured_check.h)
                what += "; optimize measured %d rewrites x%.3f: %s" % (m["rewrites"], m["ratio"], m["outcome"])
            data = os.path.join(os.path.dirname(model), name + "-testdata")
            feeds_for = ((lambda s, d=data: ort_timing.test_data_feeds(s, d)) if os.path.isdir(data)
                         else ort_timing.random_feeds)
            medians, ratio, noise = bench(model, out, feeds_for, a)
            worst = max(worst, ratio[1])
            print("%-22s %12.3f %12.3f %8.3f (%.3f-%.3f) %8.3f (%.3f-%.3f)  %s"
                  % (name, medians["original"] / 1e3, medians["optimized"] / 1e3, ratio[1], ratio[0], ratio[2],
                     noise[1], noise[0], noise[2], what), flush=True)
    print("largest ratio (optimized / original): %.3f" % worst)
    return 0


if __name__ == "__main__":
    ort_timing.run_program(main, __file__)
