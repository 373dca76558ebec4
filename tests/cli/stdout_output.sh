#!/bin/sh
# "-o -" writes the file to stdout and everything else to stderr: the
# optimized model (optimize -o -) and the exported graph (run --export -)
# arrive whole on stdout, valid and with the model's outputs.
#   stdout_output.sh BIN_DIR WORK_DIR MODEL TEST_DATA PYTHON CHECK_ONNX
set -eu
bin=$1 work=$2 model=$3 data=$4 python=$5 check_onnx=$6
rm -rf "$work"
mkdir -p "$work"
"$bin/optimize" "$model" -o - --report "$work/report.json" > "$work/optimized.onnx" 2> "$work/optimize.err"
grep -q "^optimize: .* -> -$" "$work/optimize.err"   # the summary went to stderr
grep -q '"output": "-"' "$work/report.json"
"$python" "$check_onnx" "$work/optimized.onnx"
"$bin/run" --model "$work/optimized.onnx" --test-data "$data"
"$bin/run" --model "$model" --test-data "$data" --export - > "$work/exported.onnx" 2> "$work/run.err"
grep -q "^PASS" "$work/run.err"   # run's report went to stderr
"$python" "$check_onnx" "$work/exported.onnx"
"$bin/run" --model "$work/exported.onnx" --test-data "$data"
echo "-o - writes only the model to stdout"
