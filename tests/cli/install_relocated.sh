#!/bin/sh
# `cmake --install` into a temporary prefix, the prefix moved elsewhere, and
# the programs run from there: they find the axioms and the default rules in
# PREFIX/share/tgr relative to themselves (tools/data_paths.h), not in the
# build tree.
#   install_relocated.sh BUILD_DIR WORK_DIR MODEL TEST_DATA PYTHON
set -eu
build=$1 work=$2 model=$3 data=$4 python=$5
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/first" > "$work/install.log"
mv "$work/first" "$work/moved"
moved=$work/moved
test -f "$moved/share/tgr/default_rules.db"
ls "$moved"/share/tgr/specs/*.axioms > /dev/null
"$moved/bin/optimize" --version
"$moved/bin/optimize" "$model" -o "$work/out.onnx" --report "$work/report.json" -q
"$python" - "$work/report.json" "$moved/share/tgr/default_rules.db" <<'PY'
import json, os, sys
report = json.load(open(sys.argv[1]))
want = os.path.realpath(sys.argv[2])
assert os.path.realpath(report["rules_db"]) == want, (report["rules_db"], want)
assert report["rule_sets"][0]["proved"] > 0, report["rule_sets"]
print("optimize used", report["rules_db"], "with", report["rule_sets"][0]["proved"], "proved rules")
PY
# The axioms: the default --specs of optimize and verify is the moved prefix's.
"$moved/bin/optimize" --help | grep -q "=$moved/share/tgr/specs"
"$moved/bin/verify" --help | grep -q "=$moved/share/tgr/specs"
"$moved/bin/verify" --check-axioms --max-instances 2 > "$work/axioms.txt"
grep -q "from $moved/share/tgr/specs" "$work/axioms.txt"
"$moved/bin/run" --model "$work/out.onnx" --test-data "$data"
# optimize times a rewrite in ONNX Runtime with the prefix's timing script
# (optimizer/measured_check.h): GPT-2-tiny, which the default rules rewrite.
test -f "$moved/share/tgr/measure_ort.py"
test -f "$moved/share/tgr/ort_timing.py"
"$moved/bin/optimize" "$(dirname "$model")/gpt2_tiny.onnx" -o "$work/gpt2.onnx" --measure-threshold 0.5 \
  | grep -q "measured: *ONNX Runtime"
echo "relocated install works"
