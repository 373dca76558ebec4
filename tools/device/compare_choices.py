#!/usr/bin/env python3
"""Which convolutions one process ran otherwise than another.

The GPU runtime chooses each convolution's implementation by timing at load
(runtime/cuda/lower_conv.cpp): a cuDNN algorithm, then cuDNN against cuBLAS
(1 x 1) or its own depthwise kernel. With TGR_GPU_LOG_CHOICES=1 every process
logs those choices on stderr:

    conv KEY:  algo 1 12.3 us; algo 6 10.1 us; chosen algo 6
    conv KEY: cuBLAS 9.0 us against cuDNN's 10.1 us

or, for a choice read from the database's kernel_choices (timed by an
earlier process, runtime/kernel_choices.h):

    conv KEY: stored algo 6
    conv KEY: stored cuBLAS

`calibrate` timed each step with its own choices, `bench` ran the model with
its own; where they differ, a step's prediction is not what ran. Usage:

    compare_choices.py BENCH_LOG CALIBRATE_LOG...

prints each convolution (KEY) whose choice in BENCH_LOG differs from the one
in the calibrate logs (the last one logged there), with both choices and
their timings, then a count; exit 0 either way (1 when a log is missing).
"""
import re
import sys

ALGO = re.compile(r"^conv (\S+): (.*) chosen algo (\d+)$")
OTHER = re.compile(r"^conv (\S+): (cuBLAS|depthwise kernel) ([0-9.]+) us against cuDNN's ([0-9.]+) us$")
STORED_ALGO = re.compile(r"^conv (\S+): stored algo (\d+)$")
STORED_OTHER = re.compile(r"^conv (\S+): stored (cuBLAS|depthwise kernel|cuDNN)$")


def choices(path):
    """KEY -> (choice, detail): 'algo N' then, where timed, the other implementation or 'cuDNN'."""
    algo, other = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if m := ALGO.match(line):
                algo[m.group(1)] = ("algo " + m.group(3), m.group(2).strip().rstrip(";"))
            elif m := OTHER.match(line):
                wins = float(m.group(3)) < float(m.group(4))
                other[m.group(1)] = (m.group(2) if wins else "cuDNN", f"{m.group(2)} {m.group(3)} us, cuDNN {m.group(4)} us")
            elif m := STORED_ALGO.match(line):
                algo[m.group(1)] = ("algo " + m.group(2), "stored")
            elif m := STORED_OTHER.match(line):
                other[m.group(1)] = (m.group(2), "stored")
    out = {}
    for key in set(algo) | set(other):
        a, ad = algo.get(key, ("", ""))
        o, od = other.get(key, ("", ""))
        out[key] = ((o if o and o != "cuDNN" else a) or o, "; ".join(x for x in (ad, od) if x))
    return out


def main(argv):
    if len(argv) < 3:
        print("usage: compare_choices.py BENCH_LOG CALIBRATE_LOG...", file=sys.stderr)
        return 2
    try:
        ran = choices(argv[1])
        timed = {}
        for path in argv[2:]:
            timed.update(choices(path))
    except OSError as e:
        print(f"compare_choices.py: error: {e}", file=sys.stderr)
        return 1
    differ = 0
    for key in sorted(ran):
        if key in timed and timed[key][0] != ran[key][0]:
            differ += 1
            print(f"conv {key}: calibrate {timed[key][0]} ({timed[key][1]}); bench {ran[key][0]} ({ran[key][1]})")
    print(f"{differ} of {len(ran)} convolutions ran otherwise in {argv[1]} than calibrate timed them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
