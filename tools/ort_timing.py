"""ONNX Runtime sessions, inputs and timings shared by tools/calibrate_ort.py
(operator costs for optimize --target onnxruntime-cpu) and tools/bench_ort.py
(original vs optimized models).

Sessions run on the CPU provider with every graph optimization on
(ORT_ENABLE_ALL), one intra-op thread by default: the build machine has two
cores shared with other builds, and one thread keeps the numbers comparable
from run to run (the ratios of original and optimized models are what is
compared).
"""

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

_NUMPY_TYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
}


def session(path, threads=1, profile_prefix=None):
    """A CPU session of the model at `path`, all graph optimizations on."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: no warnings about unused initializers
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def random_feeds(sess, seed=1):
    """Inputs for every graph input: floats uniform in [-1, 1), integers and
    bools zero (always valid indices); a symbolic dimension is 1."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        t = _NUMPY_TYPES.get(i.type)
        if t is None:
            raise ValueError("input %s has type %s, which the timing cannot feed" % (i.name, i.type))
        feeds[i.name] = (rng.uniform(-1, 1, shape) if t in (np.float32, np.float64) else np.zeros(shape)).astype(t)
    return feeds


def test_data_feeds(sess, folder):
    """The input_K.pb tensors of an ONNX test-data folder, by input position."""
    import onnx.numpy_helper

    feeds = {}
    for k, i in enumerate(sess.get_inputs()):
        tensor = onnx.TensorProto()
        with open(os.path.join(folder, "input_%d.pb" % k), "rb") as f:
            tensor.ParseFromString(f.read())
        feeds[i.name] = onnx.numpy_helper.to_array(tensor)
    return feeds


def interquartile_mean(values):
    """Mean of the middle half: robust to the outliers of a shared machine,
    finer than the median for the profiler's whole microseconds."""
    v = sorted(values)
    q = len(v) // 4
    middle = v[q : len(v) - q] or v
    return sum(middle) / len(middle)


def kernel_times_us(sess, feeds, runs, warmup=5):
    """Per run, the summed kernel time of every node (ONNX Runtime's
    profiler), and the number of nodes a run executes. The session must have
    been made with a profile_prefix."""
    for _ in range(warmup):
        sess.run(None, feeds)
    for _ in range(runs):
        sess.run(None, feeds)
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    runs_ev = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"][-runs:]
    kernels = [e for e in events if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")]
    totals, counts = [], []
    for r in runs_ev:
        inside = [k for k in kernels if r["ts"] <= k["ts"] <= r["ts"] + r["dur"]]
        totals.append(sum(k["dur"] for k in inside))
        counts.append(len(inside))
    return totals, (statistics.median(counts) if counts else 0)


def wall_us(sess, feeds, runs):
    """Wall-clock microseconds of `runs` runs, one sample each."""
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, feeds)
        samples.append((time.perf_counter() - t) * 1e6)
    return samples


def run_program(main, program_file):
    """Exits with main()'s status; a tgr program that failed under it
    (subprocess.CalledProcessError) ends the script with `NAME: error: ...`."""
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as e:
        sys.exit("%s: error: %s failed (exit %d)" % (os.path.basename(program_file), " ".join(map(str, e.cmd)),
                                                    e.returncode))
