#!/usr/bin/env bash
# On the GPU machine (16 cores; it also runs the CPU interpreter): export real
# models with PyTorch and check `run --test-data` on each against ONNX
# Runtime's outputs. Needs bundle/ (tools/bundle.sh) carried along:
#   tools/device/check_models.sh [OUTDIR] [MODEL ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/tgr-models}; shift || true
models=("$@"); ((${#models[@]})) || models=(resnet50 resnext50_32x4d inception_v3 densenet121 bert_base)
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}"
python3 tools/device/export_models.py "$out" "${models[@]}" || exit 1
status=0
for m in "${models[@]}"; do
  echo "== $m"
  bundle/bin/run --model "$out/$m.onnx" --test-data "$out/$m-testdata" || status=1
done
exit $status
