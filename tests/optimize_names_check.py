#!/usr/bin/env python3
"""Checks that `optimize` keeps the input model's names (docs/optimizing.md, "Names").

Usage: optimize_names_check.py OPTIMIZE RUN MODEL TESTDATA WORKDIR [OPTIMIZE OPTIONS...]

Exports MODEL without optimizing (`run --export`: the names tgr writes for
the model as it is), optimizes it with the options given, and checks, with
the rewrites the JSON report lists:
  - graph inputs and outputs keep their names;
  - every node name of the plain export that is a node name of MODEL
    survives, unless a rewrite removed that node;
  - every node name of the optimized model is a name of MODEL (numbered
    name_K where the importer split a node), or names a rewrite's node:
    "<a node the rewrite removed>/rule<ID>/<op>" with ID a rule applied;
    at least one such node exists;
  - the values of MODEL the plain export keeps keep their names, except the
    outputs of removed nodes (or of parts of them, name_K);
  - the optimized model passes onnx.checker and `run --test-data`.
Prints "names kept: ..." and exits 0, or names the first failure and exits 1.
"""

import json
import os
import re
import sys

import onnx

from check_util import fail, run

RULE_NAME = re.compile(r"^(.*)/(?:default_)?rule(\d+)/[a-z_0-9]+$")


def main(argv):
    if len(argv) < 6:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    optimize, run_tool, model_path, testdata, workdir = argv[1:6]
    options = argv[6:]
    os.makedirs(workdir, exist_ok=True)
    plain_path = os.path.join(workdir, "plain.onnx")
    optimized_path = os.path.join(workdir, "optimized.onnx")
    report_path = os.path.join(workdir, "report.json")
    run([run_tool, "--model", model_path, "--test-data", testdata, "--export", plain_path])
    run([optimize, model_path, "-o", optimized_path, "--report", report_path, "-q"] + options)

    original, plain, optimized = onnx.load(model_path), onnx.load(plain_path), onnx.load(optimized_path)
    report = json.load(open(report_path))
    applied_ids = {r["id"] for r in report["rules_applied"]}
    removed = {name for r in report["rewrites"] for name in r["removed"]}
    if not report["rewrites"]:
        fail("no rule applied to %s: nothing to check" % model_path)

    def io_names(m):
        return [i.name for i in m.graph.input], [o.name for o in m.graph.output]

    if io_names(optimized) != io_names(original):
        fail("graph inputs/outputs renamed: %s -> %s" % (io_names(original), io_names(optimized)))

    model_names = {n.name for n in original.graph.node if n.name}
    optimized_names = {n.name for n in optimized.graph.node}
    surviving = {n.name for n in plain.graph.node if n.name in model_names} - removed
    lost = sorted(surviving - optimized_names)
    if lost:
        fail("%d node names of the model lost, e.g. %s" % (len(lost), lost[:3]))

    rule_made = 0
    for name in sorted(optimized_names):
        if name in model_names or re.sub(r"_\d+$", "", name) in model_names:
            continue
        match = RULE_NAME.match(name)
        if not match:
            fail("node %r has neither a name of the model nor a rule's name" % name)
        base, rule_id = match.group(1), int(match.group(2))
        if rule_id not in applied_ids:
            fail("node %r names rule %d, which the report does not list as applied %s" % (name, rule_id, applied_ids))
        if base not in removed:
            fail("node %r is not named after a node its rewrite removed (%s)" % (name, sorted(removed)[:4]))
        rule_made += 1
    if rule_made == 0:
        fail("no node of the optimized model names the rule that made it")

    model_values = {v for n in original.graph.node for v in n.output}
    # (a node the importer split exports as name, name_1, ...: each part may be removed)
    removed_values = {v for n in plain.graph.node
                      if n.name in removed or re.sub(r"_\d+$", "", n.name) in removed for v in n.output}
    optimized_values = {v for n in optimized.graph.node for v in n.output}
    kept_values = {v for n in plain.graph.node for v in n.output if v in model_values} - removed_values
    lost = sorted(kept_values - optimized_values)
    if lost:
        fail("%d value names of the model lost, e.g. %s" % (len(lost), lost[:3]))

    onnx.checker.check_model(optimized_path, full_check=True)
    out = run([run_tool, "--model", optimized_path, "--test-data", testdata])
    if "PASS" not in out:
        fail("run --test-data on the optimized model:\n" + out)
    print("names kept: %d model node names survive, %d value names, %d nodes named by their rule; checker and "
          "test data pass" % (len(surviving), len(kept_values), rule_made))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
