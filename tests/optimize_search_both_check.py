#!/usr/bin/env python3
"""Checks `optimize --search both` (saturation, then backtracking from its
graph, and backtracking from the input; the cheapest kept).

Usage: optimize_search_both_check.py OPTIMIZE RUN MODEL TESTDATA WORKDIR

Optimizes MODEL on the roofline target with --search saturate, backtrack
and both, and checks that
  - both's summary has the saturation line ("search:"), the backtracking
    line after it ("then:"), the line of backtracking from the input
    ("and:") and which graph it kept ("kept:");
  - both's JSON report holds the three searches' reports (search.saturation,
    search.backtracking, search.backtracking_from_input), their stop
    reasons, and search.kept;
  - both's predicted cost is at most saturation's alone and backtracking's
    alone (it keeps the cheapest graph), and below the model's;
  - the model both wrote passes onnx.checker and `run --test-data`.
Prints "search both: ..." and exits 0, or names the first failure and exits 1.
"""

import json
import os
import sys

import onnx

from check_util import fail, run


optimize, run_tool, model, testdata, work = sys.argv[1:6]
os.makedirs(work, exist_ok=True)
reports = {}
summaries = {}
for search in ("saturate", "backtrack", "both"):
    out = os.path.join(work, f"{search}.onnx")
    report = os.path.join(work, f"{search}.json")
    summaries[search] = run([optimize, model, "-o", out, "--target", "roofline", "--search", search,
                             "--report", report])
    with open(report) as f:
        reports[search] = json.load(f)

lines = summaries["both"].splitlines()
search_line = [i for i, l in enumerate(lines) if l.strip().startswith("search:")]
then_line = [i for i, l in enumerate(lines) if l.strip().startswith("then:")]
if not search_line or "saturation" not in lines[search_line[0]]:
    fail("no saturation search line in the summary:\n" + summaries["both"])
if not then_line or "backtracking" not in lines[then_line[0]] or then_line[0] != search_line[0] + 1:
    fail("no backtracking line right after the saturation line:\n" + summaries["both"])
and_line = [i for i, l in enumerate(lines) if l.strip().startswith("and:")]
if not and_line or "backtracking from the input" not in lines[and_line[0]] or and_line[0] != then_line[0] + 1:
    fail("no line of backtracking from the input after the then: line:\n" + summaries["both"])
if not any(l.strip().startswith("kept:") for l in lines):
    fail("no kept: line in the summary:\n" + summaries["both"])
both = reports["both"]
expected_keys = {"saturation", "backtracking", "backtracking_from_input", "kept"}
if set(both["search"].keys()) != expected_keys:
    fail(f"report's search holds {sorted(both['search'].keys())}, not {sorted(expected_keys)}")
for key in ("backtracking", "backtracking_from_input"):
    if both["search"][key].get("stop_reason") is None:
        fail(f"the {key} report has no stop_reason")
if both["search"]["kept"] not in ("saturation", "saturation, then backtracking", "backtracking from the input"):
    fail(f"search.kept is {both['search']['kept']!r}")
saturate_cost = reports["saturate"]["cost_after_us"]
backtrack_cost = reports["backtrack"]["cost_after_us"]
if not both["cost_after_us"] <= saturate_cost * (1 + 1e-9):
    fail(f"both ended at {both['cost_after_us']} us, above saturation alone ({saturate_cost} us)")
# Backtracking stopped by its time limit (a loaded machine) finds less; the
# two runs are comparable where neither was.
timed_out = reports["backtrack"]["search"]["timed_out"] or both["search"]["backtracking_from_input"]["timed_out"]
if not timed_out and not both["cost_after_us"] <= backtrack_cost * (1 + 1e-9):
    fail(f"both ended at {both['cost_after_us']} us, above backtracking alone ({backtrack_cost} us)")
if not both["cost_after_us"] < both["cost_before_us"]:
    fail(f"both did not improve the model ({both['cost_before_us']} -> {both['cost_after_us']} us)")
optimized = os.path.join(work, "both.onnx")
onnx.checker.check_model(onnx.load(optimized), full_check=True)
run([run_tool, "--model", optimized, "--test-data", testdata])
print(f"search both: {both['cost_before_us']} -> {both['cost_after_us']} us, kept {both['search']['kept']} "
      f"(saturation alone {saturate_cost} us, backtracking alone {backtrack_cost} us); checker and test data ok")
