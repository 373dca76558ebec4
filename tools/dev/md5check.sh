#!/usr/bin/env bash
# Behaviour check for refactorings (issue 44): the md5s of what a build
# produces, to compare two builds (before and after) line by line.
#
#   tools/dev/md5check.sh BUILD_DIR OUT_DIR [MODEL...]
#
# Prints "NAME  MD5" lines: the listing of a fresh `generate --max-ops 3`
# database (`rules list`), the same after `verify`, and the optimized ONNX
# file of each model (default: squeezenet1_1, bert_tiny, vit_tiny from
# tests/data/models) for --target roofline and onnxruntime-cpu, each with
# --search saturate and backtrack; onnxruntime-cpu also with --min-gain 0
# (its rewrites of these models gain less than the default 2 %, and the
# input would be written). NAME.report: the --report JSON without its
# timings and file paths (what the searches did, step by step). The time limits are set far above what
# the runs take (--timeout, --proof-timeout-ms), so that no limit of time
# decides and the outputs depend on the code alone; saturation extracts
# greedily (--ilp-timeout 0): the ILP solver's branch and bound on these
# e-graphs runs for many minutes, and stopped at a time limit its answer
# depends on the machine's load. A search that still stops at its time
# limit is named on stderr. Rerun the same build to tell a difference from
# nondeterminism.
set -euo pipefail
build=$(cd "${1:?build dir}" && pwd)
out=${2:?output dir}
shift 2
src=$(cd "$(dirname "$0")/../.." && pwd)
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(squeezenet1_1 bert_tiny vit_tiny)
mkdir -p "$out"
bin=$build/bin
# A build with the measured check (optimize --no-measure) times a rewrite in
# ONNX Runtime before writing it: a decision by the clock, turned off here.
no_measure=()
"$bin/optimize" --help | grep -q -- --no-measure && no_measure=(--no-measure)
# The report without what differs from run to run or build to build: times,
# paths, and the proof counts, which depend on which thread proves an
# instance first (the same binary gives different counts, the same graphs),
# and the pricing in context (context_costs, the candidates *_in_context),
# which stops at a share of the extraction's one second without the ILP
# (saturation.cpp, kContextPricingShare): under load it is a time limit
# that decides, so an output that differs in a run whose report says
# "complete": false there is to be rerun, not a difference.
untimed='
import json, sys
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items()
                if k not in ("seconds", "ms", "model", "output", "rules_db", "path", "proofs", "renamed_proof_hits",
                             "context_costs")
                and not k.endswith("_s") and not k.endswith("_in_context")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
print(json.dumps(strip(json.load(open(sys.argv[1]))), sort_keys=True))'

db=$out/rules.db
rm -f "$db"
"$bin/generate" --db "$db" --max-ops 3 --no-progress >"$out/generate.log" 2>&1
echo "generate_list  $("$bin/rules" --db "$db" list | md5sum | cut -d' ' -f1)"
"$bin/verify" --db "$db" >"$out/verify.log" 2>&1
echo "verify_list  $("$bin/rules" --db "$db" list | md5sum | cut -d' ' -f1)"

for m in "${models[@]}"; do
  for target in roofline onnxruntime-cpu; do
    gains=(default)
    [ "$target" = onnxruntime-cpu ] && gains+=(0)
    for gain in "${gains[@]}"; do
      for search in saturate backtrack; do
        name=$m.$target.$search
        extra=()
        if [ "$gain" != default ]; then
          name+=.min_gain_$gain
          extra=(--min-gain "$gain")
        fi
        "$bin/optimize" "$src/tests/data/models/$m.onnx" -o "$out/$name.onnx" --target "$target" --search "$search" \
          --timeout 3000 --ilp-timeout 0 --proof-timeout-ms 600000 "${extra[@]}" "${no_measure[@]}" --report "$out/$name.json" \
          >"$out/$name.log" 2>&1
        if grep -q '"time_limit"' "$out/$name.json"; then echo "md5check: $name stopped at a time limit" >&2; fi
        echo "$name  $(md5sum <"$out/$name.onnx" | cut -d' ' -f1)"
        echo "$name.report  $(python3 -c "$untimed" "$out/$name.json" | md5sum | cut -d' ' -f1)"
      done
    done
  done
done
