#!/usr/bin/env python3
"""Benchmark of the search spaces (issue 17): for each space, the rules
`generate --space NAME` finds and `verify` proves, and which of them
`optimize` applies on the models the space was written for.

usage: python3 tools/bench_spaces.py [--spaces transformer,mobile,layout]
                                     [--max-ops 3] [--models DIR ...]
                                     [--targets roofline,onnxruntime-cpu]
                                     [--out DIR]

Each space gets its own database (build/bench_spaces/SPACE.db by default),
so "found" and "proved" count that space alone. Every model of the space's
family (MODEL_FAMILIES below; the models found in the --models folders) is
then optimized with `--min-gain 0`, once per target, twice: with the space's
rules alone (`--rules SPACE.db --no-default-rules`: what the space finds by
itself) and with the shipped default rules added (`--rules SPACE.db`, what a
user gets; a rule both hold is reported as the default rules' own). From the
JSON reports: the predicted ratios, and the rules applied that come from the
space's database, with how often each was applied. The last lines are a
table.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")

# The models each space was written for (spaces/*.space say why).
MODEL_FAMILIES = {
    "transformer": ["bert_tiny", "gpt2_tiny", "t5_encoder_tiny", "vit_tiny", "bert_base", "gpt2_small", "vit_b_16"],
    "mobile": ["mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "shufflenet_v2", "regnet_y_400mf"],
    "layout": ["bert_tiny", "gpt2_tiny", "t5_encoder_tiny", "vit_tiny", "convnext_tiny"],
    "default": ["squeezenet1_1", "resnet50", "inception_v3", "googlenet", "densenet121"],
    "taso": ["squeezenet1_1", "resnet50", "inception_v3", "googlenet", "densenet121"],
}


def run(cmd):
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout, time.monotonic() - start


def report_value(text, label):
    """The number after `label` in a generate/verify report line."""
    for line in text.splitlines():
        parts = line.split()
        if parts and " ".join(parts[:len(label.split())]) == label:
            return parts[len(label.split())]
    return "?"


def build_space_db(space, max_ops, db):
    if os.path.exists(db):
        os.remove(db)
    rc, gen, gen_s = run([os.path.join(BIN, "generate"), "--db", db, "--space", space, "--max-ops", str(max_ops)])
    if rc != 0:
        sys.exit(f"bench_spaces: generate --space {space} failed (exit {rc}):\n{gen}")
    rc, ver, ver_s = run([os.path.join(BIN, "verify"), "--db", db])
    if rc != 0:
        sys.exit(f"bench_spaces: verify of {db} failed (exit {rc}):\n{ver}")
    return {
        "stored": report_value(gen, "stored"),
        "proved": report_value(ver, "proved"),
        "unknown": report_value(ver, "unknown"),
        "generate_s": gen_s,
        "verify_s": ver_s,
    }


def find_model(dirs, name):
    for d in dirs:
        path = os.path.join(d, name + ".onnx")
        if os.path.exists(path):
            return path
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spaces", default="transformer,mobile,layout")
    ap.add_argument("--max-ops", type=int, default=3)
    ap.add_argument("--models", nargs="*", default=[os.path.join(ROOT, "tests", "data", "models")])
    ap.add_argument("--targets", default="roofline,onnxruntime-cpu")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench_spaces"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    space_rows, model_rows = [], []
    for space in args.spaces.split(","):
        if space not in MODEL_FAMILIES:
            sys.exit(f"bench_spaces: no model family for space '{space}' (known: {', '.join(MODEL_FAMILIES)})")
        db = os.path.abspath(os.path.join(args.out, space + ".db"))
        counts = build_space_db(space, args.max_ops, db)
        space_rows.append((space, counts))
        print(f"{space}: {counts['stored']} rules stored, {counts['proved']} proved, {counts['unknown']} unknown "
              f"(generate {counts['generate_s']:.1f} s, verify {counts['verify_s']:.1f} s)", flush=True)
        for name in MODEL_FAMILIES[space]:
            path = find_model(args.models, name)
            if not path:
                continue
            for target in args.targets.split(","):
                ratios, from_space = {}, {}
                for rule_set, flags in (("alone", ["--no-default-rules"]), ("with_default", [])):
                    out = os.path.join(args.out, f"{name}.{space}.{target}.{rule_set}.onnx")
                    report = out[:-5] + ".json"
                    rc, text, wall = run([os.path.join(BIN, "optimize"), path, "-o", out, "-q", "--rules", db] +
                                         flags + ["--target", target, "--min-gain", "0", "--report", report])
                    if rc != 0:
                        sys.exit(f"bench_spaces: optimize {name} failed (exit {rc}):\n{text}")
                    with open(report) as f:
                        r = json.load(f)
                    ratios[rule_set] = r["cost_ratio"]
                    from_space[rule_set] = [(a["id"], a["count"], a["rule"]) for a in r["rules_applied"]
                                            if os.path.abspath(a.get("rules_db", "")) == db]
                model_rows.append((space, name, target, ratios, from_space))
                print(f"  {name} ({target}): space alone x{ratios['alone']:.3f}, with the default rules "
                      f"x{ratios['with_default']:.3f}; rules of the space applied: "
                      f"{len(from_space['alone'])} alone, {len(from_space['with_default'])} with the default rules",
                      flush=True)

    print("\n| space | rules stored | proved | unknown | generate (s) | verify (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for space, c in space_rows:
        print(f"| {space} | {c['stored']} | {c['proved']} | {c['unknown']} | {c['generate_s']:.1f} | {c['verify_s']:.1f} |")
    print("\n| space | model | target | ratio, space alone | ratio, with default rules | "
          "rules of the space applied alone (id x count) | ... with the default rules |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for space, name, target, ratios, from_space in model_rows:
        applied = {k: "; ".join(f"#{i} x{c}: `{rule}`" for i, c, rule in v) or "none" for k, v in from_space.items()}
        print(f"| {space} | {name} | {target} | x{ratios['alone']:.3f} | x{ratios['with_default']:.3f} | "
              f"{applied['alone']} | {applied['with_default']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
