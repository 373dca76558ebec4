#!/usr/bin/env bash
# On the GPU machine, in one call: the GPU session's tests (the GPU parts of
# tests/python/test_session.py, the C++ example bin/run_on_gpu built against
# an installed tgr, examples/run_on_gpu.py), then for each model: export it
# (export_models.py), `bench` it for its replay time, and time tgr.Session on
# it against that (session_bench.py); prints one table.
#
#   bash bundle/gpu/tools/device/session_bench.sh [MODEL ...]    (default: resnet50 bert_base)
#   STAGES="tests" bash ...     (any of: tests export bench)
# The bundle comes from tools/device/make_gpu_bundle.sh (it carries the Python
# package, built for the GPU machine's Python, in python/). Logs go to $OUT
# when set (the `run` tool's folder), else /tmp/tgr-gpu-out.
set -uo pipefail
B=$(cd "$(dirname "$0")/../.." && pwd)
export LD_LIBRARY_PATH="$B/lib:${LD_LIBRARY_PATH:-}"
export PYTHONPATH="$B/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/tgr-gpu-out}
work=${WORK:-/tmp/tgr-gpu-work}
mkdir -p "$out" "$work"
models=("$@")
((${#models[@]})) || models=(resnet50 bert_base)
stages=" ${STAGES:-tests export bench} "
has() { [[ $stages == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true

if has tests; then
  echo "== session tests"
  python3 -m pytest -q -p no:cacheprovider "$B/tests/python/test_session.py" 2>&1 | tee "$out/session_tests.log" | tail -15
  echo "== examples"
  "$B/bin/run_on_gpu" "$B/tests/data/models/squeezenet1_1.onnx"; echo "run_on_gpu: exit $?"
  python3 "$B/examples/run_on_gpu.py" "$B/tests/data/models/squeezenet1_1.onnx"; echo "run_on_gpu.py: exit $?"
fi
if has export; then
  echo "== export (${models[*]})"
  python3 "$B/tools/device/export_models.py" "$work" "${models[@]}" 2>&1 | grep -v Warning | tail -4
fi
if has bench; then
  for m in "${models[@]}"; do
    [[ -f $work/$m.onnx ]] || { echo "$m: not exported"; continue; }
    echo "== bench and tgr.Session: $m"
    "$B/bin/bench" "$work/$m.onnx" --test-data "$work/$m-testdata" --iters 200 --name "$m" > "$out/session_bench_$m.log" 2>&1
    grep -E "^(  check|  time|RESULT)|error" "$out/session_bench_$m.log"
    bench_ms=$(awk '/^RESULT /{print $3}' "$out/session_bench_$m.log")
    [[ -n $bench_ms ]] || { echo "$m: bench gave no RESULT"; continue; }
    python3 "$B/tools/device/session_bench.py" "$work/$m.onnx" "$work/$m-testdata" "$bench_ms" --name "$m" 2>&1 |
      tee -a "$out/session_bench_$m.log"
  done
  echo
  printf '%-10s | %9s | %10s | %9s | %9s | %15s | %10s | %12s | %s\n' model "bench ms" "replay ms" "run ms" \
    "copies ms" "run/(bench+cp)" "dlpack ms" "dlpack/bench" check
  cat "$out"/session_bench_*.log | awk '/^SESSION /{printf "%-10s | %9s | %10s | %9s | %9s | %15s | %10s | %12s | %s\n", $2, $3, $4, $5, $6, $7, $8, $9, $10}'
fi
