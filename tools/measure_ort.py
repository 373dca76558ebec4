#!/usr/bin/env python3
"""Times an original ONNX model against a rewritten one in ONNX Runtime,
interleaved, for `optimize`'s check before it writes a rewrite
(optimizer/measured_check.h; docs/optimizing.md, "Measured before writing").

Usage:
  tools/measure_ort.py ORIGINAL.onnx REWRITTEN.onnx [--threads 1] [--rounds 20]
      [--runs 5] [--time-limit 60] [--input-shape NAME=2x3 ...]

Both models get one CPU session each (all graph optimizations on, --threads
intra-op threads: tools/ort_timing.py) and the same random inputs (a
symbolic dimension is 1 unless --input-shape gives it). After a warm-up run
of each, each round times --runs runs of each model (more for a fast model:
as many as fill 20 ms, at most 1000), in an order that
alternates from round to round; a round's sample is the median of its runs.
Rounds stop at --rounds, or before the first round that would start after
--time-limit seconds (loads included). Prints one JSON object: the runtime, the samples
per round (microseconds) and whether the time limit stopped it. Exit 3:
onnxruntime cannot be imported (nothing measured); 1: a model failed.
"""

import argparse
import json
import os
import statistics
import sys
import time

MIN_SAMPLE_S = 0.02


def parse_shape(text):
    name, _, dims = text.partition("=")
    if not name or not dims:
        raise argparse.ArgumentTypeError("--input-shape takes NAME=D1xD2..., not '%s'" % text)
    try:
        return name, [int(d) for d in dims.split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError("--input-shape takes NAME=D1xD2..., not '%s'" % text)


def feeds_for(sess, shapes, ort_timing, np):
    feeds = ort_timing.random_feeds(sess)
    rng = np.random.default_rng(1)
    for name, dims in shapes.items():
        if name in feeds:
            t = feeds[name].dtype
            feeds[name] = (rng.uniform(-1, 1, dims) if t.kind == "f" else np.zeros(dims)).astype(t)
    return feeds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("original")
    p.add_argument("rewritten")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--input-shape", type=parse_shape, action="append", default=[])
    a = p.parse_args()
    start = time.perf_counter()
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import numpy as np
        import ort_timing
    except ImportError as e:
        print("measure_ort.py: cannot import onnxruntime (%s)" % e, file=sys.stderr)
        return 3
    sessions = [ort_timing.session(path, a.threads) for path in (a.original, a.rewritten)]
    feeds = feeds_for(sessions[0], dict(a.input_shape), ort_timing, np)
    for s in sessions:  # warm-up: first-run allocations are not timed
        s.run(None, feeds)
    # A round's sample spans at least MIN_SAMPLE_S of each model, so that a
    # model of microseconds is not timed on a handful of runs.
    one_run_s = max(1e-6, min(ort_timing.wall_us(sessions[0], feeds, 1)[0], ort_timing.wall_us(sessions[1], feeds, 1)[0])
                    / 1e6)
    runs = max(a.runs, min(1000, int(MIN_SAMPLE_S / one_run_s)))
    samples = ([], [])
    stopped = False
    for r in range(a.rounds):
        if time.perf_counter() - start >= a.time_limit:
            stopped = True
            break
        for k in (0, 1) if r % 2 == 0 else (1, 0):
            samples[k].append(statistics.median(ort_timing.wall_us(sessions[k], feeds, runs)))
    print(json.dumps({
        "runtime": "ONNX Runtime %s, CPU, %d thread%s" % (ort_timing.ort.__version__, a.threads,
                                                         "" if a.threads == 1 else "s"),
        "runs_per_round": runs,
        "original_us": samples[0],
        "rewritten_us": samples[1],
        "stopped_at_limit": stopped,
        "seconds": time.perf_counter() - start,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
