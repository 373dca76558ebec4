#!/usr/bin/env python3
"""Checks `optimize --search both` (saturation, then backtracking from its graph).

Usage: optimize_search_both_check.py OPTIMIZE RUN MODEL TESTDATA WORKDIR

Optimizes MODEL on the roofline target with --search saturate and with
--search both, and checks that
  - both's summary has the saturation line ("search:") and the
    backtracking line after it ("then:");
  - both's JSON report holds the two searches' reports (search.saturation,
    search.backtracking) and the backtracking stop reason;
  - both's predicted cost is at most saturation's alone (it keeps the
    better graph), and below the model's;
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
for search in ("saturate", "both"):
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
both = reports["both"]
if set(both["search"].keys()) != {"saturation", "backtracking"}:
    fail(f"report's search holds {sorted(both['search'].keys())}, not saturation and backtracking")
if both["search"]["backtracking"].get("stop_reason") is None:
    fail("the backtracking report has no stop_reason")
saturate_cost = reports["saturate"]["cost_after_us"]
if not both["cost_after_us"] <= saturate_cost * (1 + 1e-9):
    fail(f"both ended at {both['cost_after_us']} us, above saturation alone ({saturate_cost} us)")
if not both["cost_after_us"] < both["cost_before_us"]:
    fail(f"both did not improve the model ({both['cost_before_us']} -> {both['cost_after_us']} us)")
optimized = os.path.join(work, "both.onnx")
onnx.checker.check_model(onnx.load(optimized), full_check=True)
run([run_tool, "--model", optimized, "--test-data", testdata])
print(f"search both: {both['cost_before_us']} -> {both['cost_after_us']} us "
      f"(saturation alone {saturate_cost} us); checker and test data ok")
