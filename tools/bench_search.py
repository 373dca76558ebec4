#!/usr/bin/env python3
"""Benchmark of optimize's searches (issue 14): predicted cost, wall time and
peak memory of `optimize` per model and configuration, and a check of every
optimized model.

usage: python3 tools/bench_search.py [--models DIR ...] [--db3 R3.DB] [--db4 R4.DB]
                                     [--configs a,b,c,d] [--out DIR] [--no-check]
                                     [--check-configs a,b,c,d] [--extra "OPTIMIZE FLAGS"]
                                     [--target roofline|onnxruntime-cpu|tgr-gpu]

Configurations (the rows of README's table):
  a  default rules (the shipped database), backtracking search
  b  the --max-ops 3 database, backtracking search
  c  the --max-ops 3 database, equality saturation
  d  the --max-ops 4 database, equality saturation
  s  default rules, equality saturation (against a: which search is the default)
A configuration whose database is not given is skipped (and says so).

A model is NAME.onnx in a models folder, with reference data in
NAME-testdata/ (input_K.pb / output_K.pb, as tools/device/export_models.py
writes them). Default models folder: tests/data/models.

Each optimized model is checked three ways: onnx.checker (full check),
ONNX Runtime's outputs against the reference outputs, and
`run --test-data` (tgr's interpreter). The last lines are a table.
"""
import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")

CONFIGS = {
    "a": ("default rules, backtrack", None, "backtrack"),
    "b": ("max-ops 3, backtrack", "db3", "backtrack"),
    "c": ("max-ops 3, saturate", "db3", "saturate"),
    "d": ("max-ops 4, saturate", "db4", "saturate"),
    "s": ("default rules, saturate", None, "saturate"),
}


def run_measured(cmd):
    """Runs cmd; returns (exit code, output, wall seconds, peak RSS in MB).

    The peak is GNU time's (%M) of the command itself: the rusage of a child
    forked from this Python process would count this process's own memory
    (the child's image before exec) as a floor."""
    import tempfile
    with tempfile.NamedTemporaryFile("r") as rss:
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", "-o", rss.name] + cmd,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall = time.monotonic() - start
        kb = rss.read().strip().splitlines()
    return proc.returncode, proc.stdout, wall, float(kb[-1]) / 1024.0 if kb else float("nan")


def check_with_onnxruntime(model_path, testdata, rtol=1e-3):
    """Relative L2 error of ONNX Runtime's outputs against the reference."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    def load(path):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)

    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    inputs = sorted(glob.glob(os.path.join(testdata, "input_*.pb")))
    feeds = {i.name: load(p) for i, p in zip(sess.get_inputs(), inputs)}
    outs = sess.run(None, feeds)
    worst = 0.0
    for k, got in enumerate(outs):
        ref = load(os.path.join(testdata, f"output_{k}.pb"))
        err = float(np.linalg.norm(got.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-30))
        worst = max(worst, err)
    return worst <= rtol, worst


def check_model(path, testdata):
    """The three checks; returns a short verdict string ('ok' or what failed)."""
    failed = []
    rc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_onnx.py"), path],
                        capture_output=True, text=True).returncode
    if rc != 0:
        failed.append("onnx.checker")
    try:
        ok, err = check_with_onnxruntime(path, testdata)
        if not ok:
            failed.append(f"onnxruntime (rel. L2 {err:.1e})")
    except Exception as e:  # an import error or a model ONNX Runtime rejects: reported, not fatal
        failed.append(f"onnxruntime ({type(e).__name__})")
    rc = subprocess.run([os.path.join(BIN, "run"), "--model", path, "--test-data", testdata],
                        capture_output=True, text=True).returncode
    if rc != 0:
        failed.append("run --test-data")
    return "ok" if not failed else "FAILED: " + ", ".join(failed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*", default=[os.path.join(ROOT, "tests", "data", "models")])
    ap.add_argument("--db3")
    ap.add_argument("--db4")
    ap.add_argument("--configs", default="a,b,c,d")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench_search"))
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--check-configs", default="a,b,c,d", help="configurations whose outputs are checked")
    ap.add_argument("--extra", default="", help="more optimize flags, as a shell would split them")
    ap.add_argument("--target", default="roofline", help="optimize's --target (default roofline: the analytic model)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    models = []
    for d in args.models:
        for path in sorted(glob.glob(os.path.join(d, "*.onnx"))):
            name = os.path.basename(path)[:-5]
            models.append((name, path, os.path.join(d, name + "-testdata")))
    rows = []
    for name, path, testdata in models:
        for key in args.configs.split(","):
            label, db_arg, search = CONFIGS[key]
            db = getattr(args, db_arg) if db_arg else None
            if db_arg and not db:
                print(f"{name} ({key}): skipped, no --{db_arg} given", flush=True)
                continue
            out = os.path.join(args.out, f"{name}.{key}.onnx")
            report = os.path.join(args.out, f"{name}.{key}.json")
            cmd = [os.path.join(BIN, "optimize"), path, "-o", out, "--report", report, "--search", search, "--target", args.target]
            if db:
                cmd += ["--rules", db]
            cmd += shlex.split(args.extra)
            rc, text, wall, rss = run_measured(cmd)
            if rc != 0:
                print(f"{name} ({key}): optimize failed (exit {rc})\n{text}", flush=True)
                rows.append((name, key, None, None, wall, rss, "optimize failed", ""))
                continue
            with open(report) as f:
                r = json.load(f)
            checked = not args.no_check and key in args.check_configs.split(",")
            verdict = check_model(out, testdata) if checked else "not checked"
            stop = r.get("search", {}).get("stop_reason", "timed out" if r.get("search", {}).get("timed_out") else "")
            rows.append((name, key, r["cost_before_us"], r["cost_after_us"], wall, rss, verdict, stop))
            print(f"{name} ({key}: {label}): x{r['cost_after_us'] / r['cost_before_us']:.3f} predicted, "
                  f"{wall:.1f} s, {rss:.0f} MB, {stop}, {verdict}", flush=True)

    print("\n| model | config | predicted before (us) | after (us) | ratio | optimize wall (s) | peak RSS (MB) | stopped | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, key, before, after, wall, rss, verdict, stop in rows:
        ratio = f"x{after / before:.3f}" if before else "-"
        b = f"{before:.1f}" if before else "-"
        a = f"{after:.1f}" if after else "-"
        print(f"| {name} | {key} | {b} | {a} | {ratio} | {wall:.1f} | {rss:.0f} | {stop} | {verdict} |")
    return 0 if all(r[6] in ("ok", "not checked") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
