#!/usr/bin/env python3
"""Measures ONNX Runtime's CPU time of every operator signature that
`optimize --target onnxruntime-cpu` asks about, into the op_costs table.

Usage:
  tools/calibrate_ort.py --db COSTS.db [--bin build/bin] [--rounds 4] [--runs 200]
      [--threads 1] [--write-table FILE] [--optimize-arg=ARG ...] MODEL.onnx...

Each round runs `optimize MODEL --target onnxruntime-cpu --costs COSTS.db
--calibration-dir DIR` on every model: optimize writes a one-node ONNX model
(the operator alone, its weights initializers) for each signature the table
lacks, from the original graph and every graph the search costed. Each is
timed with ONNX Runtime (CPU, all graph optimizations on): the kernel time of
its nodes from ONNX Runtime's profiler (mean of the middle half of --runs
runs), plus the runtime's per-node overhead (measured once: a chain of 101
against a chain of 1 Neg nodes on one element). The times go into the op_costs
table of COSTS.db for device "onnxruntime-cpu" (`rules import-costs`). With
new measurements the search may take other paths and ask about other
signatures: rounds repeat until no signature is new (or --rounds).
--write-table writes the device's whole table as SIGNATURE<TAB>MS lines (the
shipped default: rules/onnxruntime_cpu.costs, imported into the default rules
database at build time).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_timing  # noqa: E402

DEVICE = "onnxruntime-cpu"


def per_node_overhead_us(folder, threads, runs=400):
    """What one more node costs a run beyond its kernel: chains of Neg on one element."""
    def chain(n):
        nodes = [helper.make_node("Neg", ["x" if i == 0 else "t%d" % i], ["y" if i == n - 1 else "t%d" % (i + 1)])
                 for i in range(n)]
        graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        path = os.path.join(folder, "chain%d.onnx" % n)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        return ort_timing.session(path, threads)

    short, long_ = chain(1), chain(101)
    feeds = ort_timing.random_feeds(short)
    a, b = [], []
    for _ in range(5):  # interleaved blocks
        a += ort_timing.wall_us(short, feeds, runs // 5)
        b += ort_timing.wall_us(long_, feeds, runs // 5)
    return max(0.0, (ort_timing.interquartile_mean(b) - ort_timing.interquartile_mean(a)) / 100)


def time_model_ms(path, threads, runs, overhead_us, folder):
    sess = ort_timing.session(path, threads, profile_prefix=os.path.join(folder, "profile"))
    kernels, nodes = ort_timing.kernel_times_us(sess, ort_timing.random_feeds(sess), runs)
    return (ort_timing.interquartile_mean(kernels) + nodes * overhead_us) / 1000.0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+")
    p.add_argument("--db", required=True, help="the database whose op_costs table receives the times")
    p.add_argument("--bin", default="build/bin", help="where optimize and rules are (default build/bin)")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--runs", type=int, default=200, help="timed runs per signature (default 200)")
    p.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads (default 1)")
    p.add_argument("--write-table", help="write the device's table here as SIGNATURE<TAB>MS lines")
    p.add_argument("--optimize-arg", action="append", default=[], help="passed to optimize (e.g. --rules=r.db)")
    a = p.parse_args()
    optimize, rules = os.path.join(a.bin, "optimize"), os.path.join(a.bin, "rules")
    for tool in (optimize, rules):
        if not os.access(tool, os.X_OK):
            sys.exit("calibrate_ort.py: error: %s is not an executable (build first, or give --bin)" % tool)
    for m in a.models:
        if not os.path.isfile(m):
            sys.exit("calibrate_ort.py: error: no model file '%s'" % m)

    with tempfile.TemporaryDirectory(prefix="calibrate_ort.") as tmp:
        if not os.path.exists(a.db):  # an empty table
            empty = os.path.join(tmp, "empty.costs")
            open(empty, "w").close()
            subprocess.run([rules, "--db", a.db, "import-costs", "--device", DEVICE, empty], check=True,
                           stdout=subprocess.DEVNULL)
        overhead = per_node_overhead_us(tmp, a.threads)
        print("per-node overhead: %.2f us (ONNX Runtime %s, %d thread(s))" % (overhead, ort_timing.ort.__version__,
                                                                            a.threads))
        measured = {}
        for round_ in range(1, a.rounds + 1):
            new = {}
            for k, model in enumerate(a.models):
                folder = os.path.join(tmp, "r%d_m%d" % (round_, k))
                # --no-measure: the signatures are wanted, not the model (nor the time timing it takes).
                subprocess.run([optimize, model, "-o", os.path.join(tmp, "out.onnx"), "-q", "--no-measure", "--target",
                                DEVICE, "--costs", a.db, "--calibration-dir", folder] + a.optimize_arg, check=True)
                with open(os.path.join(folder, "signatures.tsv")) as f:
                    for line in f:
                        file, signature = line.rstrip("\n").split("\t", 1)
                        if signature not in measured and signature not in new:
                            new[signature] = os.path.join(folder, file)
            if not new:
                print("round %d: every signature asked about is measured" % round_)
                break
            rows = []
            for signature, path in sorted(new.items()):
                ms = time_model_ms(path, a.threads, a.runs, overhead, tmp)
                measured[signature] = ms
                rows.append("%s\t%.6g\n" % (signature, ms))
                print("  %10.4f ms  %s" % (ms, signature), flush=True)
            table = os.path.join(tmp, "round%d.costs" % round_)
            with open(table, "w") as f:
                f.writelines(rows)
            subprocess.run([rules, "--db", a.db, "import-costs", "--device", DEVICE, table], check=True,
                           stdout=subprocess.DEVNULL)
            print("round %d: %d signatures measured" % (round_, len(new)))
        if a.write_table:
            out = subprocess.run([rules, "--db", a.db, "costs", "--device", DEVICE], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout
            with open(a.write_table, "w") as f:
                f.write("# ONNX Runtime %s CPU operator costs for optimize --target onnxruntime-cpu, %d thread(s):\n"
                        "# SIGNATURE<TAB>MS, measured by tools/calibrate_ort.py (docs/optimizing.md)\n"
                        % (ort_timing.ort.__version__, a.threads))
                f.write(out)
            print("wrote %d signatures to %s" % (out.count("\n"), a.write_table))
    return 0


if __name__ == "__main__":
    ort_timing.run_program(main, __file__)
