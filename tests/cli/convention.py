#!/usr/bin/env python3
"""The command-line convention (docs/cli.md), one rule per ctest, each checked
on every program of build/bin (tests/CMakeLists.txt, `ctest -R cli`):

    convention.py --bin DIR --version V --db RULES.db --programs "run generate ..." RULE

Rules:
  version          PROG --version exits 0 and prints "PROG V" first, V the one
                   version CMake configured
  help_defaults    PROG --help exits 0 on stdout and shows the defaults
  usage_exit       a mistake in the command line (unknown option, missing or bad
                   value) exits 2 with "PROG: error: ..." on stderr, never
                   CLI11's own codes (105, 106, 109, ...)
  error_prefix     a failure (bad input file) exits 1 with "PROG: error: ..."
  subcommand_options  options of the program are accepted before or after its
                   subcommand
  bounds_in_words  --help and the errors state bounds in words: no number of 16
                   digits or more (CLI11 prints the largest double in 309)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# A mistake in each program's command line, besides an unknown option:
# (arguments, what the message must name).
USAGE_MISTAKES = {
    "run": [([], "nothing to do"), (["--domain", "bogus"], "--domain"), (["--expr", "relu(x0)", "--seed", "x"], "--seed")],
    "generate": [([], "--db"), (["--db", "{tmp}/g.db", "--max-ops", "0"], "--max-ops")],
    "verify": [([], "give --db"), (["--db", "{tmp}/v.db", "--timeout-ms", "0"], "--timeout-ms")],
    "rules": [([], "subcommand"), (["--db", "{db}", "list", "--status", "proven"], "--status"),
              (["--db", "{db}", "stats", "extra"], "extra"), (["stats"], "--db")],
    "optimize": [([], "model"), (["{tmp}/m.onnx", "-o", "{tmp}/o.onnx", "--budget", "0"], "--budget"),
                 (["{tmp}/m.onnx", "-o", "{tmp}/o.onnx", "--timeout", "-1"], "--timeout")],
    "bench": [([], "models"), (["{tmp}/not-onnx.onnx", "--iters", "0"], "--iters")],
    "calibrate": [([], "--db"), (["--db", "{tmp}/c.db", "{tmp}/not-onnx.onnx", "--iters", "0"], "--iters")],
    "bench_seams": [(["--kernel", "4"], "--kernel"), (["--sizes", "7,2"], "--sizes")],
    "bench_interpreter": [(["--batch", "many"], "--batch")],
    "bench_region_check": [(["--runs", "0"], "--runs")],
}

# A failure of each program on bad input (exit 1). The bench programs take
# no input files but bench's and calibrate's models.
FAILURES = {
    "run": ["--expr", "frob(x0)", "--shapes", "x0=2"],
    "generate": ["--db", "{tmp}/no-such-dir/g.db", "--max-ops", "1", "--no-progress"],
    "verify": ["--db", "{tmp}/no-such.db", "--no-progress"],
    "rules": ["--db", "{tmp}/no-such.db", "stats"],
    "optimize": ["{tmp}/not-onnx.onnx", "-o", "{tmp}/o.onnx"],
    "bench": ["{tmp}/not-onnx.onnx"],
    "calibrate": ["--db", "{tmp}/c.db", "{tmp}/not-onnx.onnx"],
}

# An option with a default whose --help line must show it: (help arguments, option, default).
DEFAULTS = {
    "run": (["--help"], "--domain", "all"),
    "generate": (["--help"], "--max-ops", "3"),
    "verify": (["--help"], "--timeout-ms", None),
    "rules": (["list", "--help"], "--format", "text"),
    "optimize": (["--help"], "--budget", "100"),
    "bench": (["--help"], "--iters", "100"),
    "calibrate": (["--help"], "--iters", "50"),
    "bench_seams": (["--help"], "--rounds", "5"),
    "bench_interpreter": (["--help"], "--reps", None),
    "bench_region_check": (["--help"], "--runs", None),
}

# Programs with subcommands: (database option, subcommand).
SUBCOMMANDS = {"rules": [("--db", "stats"), ("--db", "list")]}

LONG_NUMBER = re.compile(r"\d{16,}")


def run(args, bin_dir):
    p = subprocess.run([os.path.join(bin_dir, args[0])] + args[1:], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


class Checker:
    def __init__(self):
        self.failures = []

    def check(self, ok, what):
        print(("ok: " if ok else "FAIL: ") + what)
        if not ok:
            self.failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--db", required=True, help="a rules database to read")
    ap.add_argument("--programs", required=True)
    ap.add_argument("rule")
    a = ap.parse_args()
    programs = a.programs.split()
    c = Checker()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "not-onnx.onnx"), "w") as f:
            f.write("this is not an ONNX model\n")
        fill = lambda args: [x.replace("{tmp}", tmp).replace("{db}", a.db) for x in args]

        for prog in programs:
            if a.rule == "version":
                rc, out, err = run([prog, "--version"], a.bin)
                first = out.splitlines()[0] if out else ""
                c.check(rc == 0 and first == f"{prog} {a.version}",
                        f"{prog} --version: exit {rc}, first line {first!r} (want {prog} {a.version!r})")
            elif a.rule == "help_defaults":
                help_args, option, default = DEFAULTS[prog]
                rc, out, err = run([prog] + help_args, a.bin)
                line = next((l for l in out.splitlines() if l.strip().startswith(option + " ")), "")
                shown = re.search(r"=(\S+)", line)
                c.check(rc == 0 and err == "" and shown is not None and (default is None or shown.group(1) == default),
                        f"{prog} {' '.join(help_args)}: exit {rc}, {option} line {line.strip()!r} shows default {default}")
            elif a.rule == "usage_exit":
                for args, names in [(["--no-such-option"], "--no-such-option")] + USAGE_MISTAKES[prog]:
                    rc, out, err = run([prog] + fill(args), a.bin)
                    c.check(rc == 2 and err.startswith(f"{prog}: error: ") and names in err,
                            f"{prog} {' '.join(args)}: exit {rc} (want 2), stderr {err.strip()[:200]!r} names {names!r}")
            elif a.rule == "error_prefix":
                if prog not in FAILURES:
                    print(f"{prog}: reads no input that can be bad (its usage errors: usage_exit)")
                    continue
                rc, out, err = run([prog] + fill(FAILURES[prog]), a.bin)
                c.check(rc == 1 and err.startswith(f"{prog}: error: "),
                        f"{prog} {' '.join(FAILURES[prog])}: exit {rc} (want 1), stderr {err.strip()[:200]!r}")
            elif a.rule == "subcommand_options":
                for option, sub in SUBCOMMANDS.get(prog, []):
                    before = run([prog, option, a.db, sub], a.bin)
                    after = run([prog, sub, option, a.db], a.bin)
                    c.check(before[0] == 0 and before == after,
                            f"{prog} {option} F {sub} (exit {before[0]}) == {prog} {sub} {option} F (exit {after[0]})")
            elif a.rule == "bounds_in_words":
                texts = [run([prog, "--help"], a.bin)[1]]
                texts += [run([prog] + fill(args), a.bin)[2] for args, _ in USAGE_MISTAKES[prog]]
                long = [m.group(0)[:30] + "..." for t in texts for m in LONG_NUMBER.finditer(t)]
                c.check(not long, f"{prog}: --help and usage errors print no number of 16+ digits {long[:2]}")
            else:
                sys.exit(f"unknown rule {a.rule}")
        if a.rule == "subcommand_options":
            c.check(any(p in SUBCOMMANDS for p in programs), "a program with subcommands was checked")
        if a.rule == "bounds_in_words" and "optimize" in programs:
            rc, out, err = run(["optimize", fill(["{tmp}/m.onnx"])[0], "-o", "x.onnx", "--budget", "0"], a.bin)
            c.check(rc == 2 and "no upper limit" in err, f"optimize --budget 0 says there is no upper limit: {err!r}")
    if c.failures:
        print(f"{len(c.failures)} failed")
        sys.exit(1)
    print(f"rule {a.rule}: all {len(programs)} programs follow it")


if __name__ == "__main__":
    main()
