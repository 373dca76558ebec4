#!/usr/bin/env bash
# Here (no GPU needed): build the GPU programs and pack everything the GPU
# machine needs into one folder, to carry there with the `run` tool:
#   tools/device/make_gpu_bundle.sh bundle/gpu
# DEST gets bin/ and lib/ (tools/bundle.sh), the device scripts (tools/device/)
# and the bundled test models (tests/data/models, and the ONNX cases gpu_tests
# reads). On the GPU machine:
#   bash DEST/tools/device/gpu_bench.sh          (tests, export, calibrate, bench, peers)
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:?usage: make_gpu_bundle.sh DEST}
programs=(gpu_tests bench calibrate bench_seams run optimize generate verify)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 --target "${programs[@]}" default_rules
rm -rf "$dest"
tools/bundle.sh "$dest" "${programs[@]/#/build/bin/}" > /dev/null
# optimize's inputs: the default rules (proved here) and the axioms its
# instance proofs read.
cp build/default_rules.db "$dest/rules.db"
cp -r specs "$dest/specs"
# Laid out as an install (PREFIX/share/tgr, tools/data_paths.h), so that the
# programs find their default rules and axioms without --specs or paths of
# this machine.
mkdir -p "$dest/share/tgr"
cp build/default_rules.db "$dest/share/tgr/default_rules.db"
cp -r specs "$dest/share/tgr/specs"
# optimize times a rewrite in ONNX Runtime before writing it with these
# (optimizer/measured_check.h); bench_ort.py times optimize's output there.
cp tools/measure_ort.py tools/ort_timing.py "$dest/share/tgr/"
mkdir -p "$dest/tools/device" "$dest/tests/data"
cp tools/device/*.sh tools/device/*.py "$dest/tools/device/"
cp tools/bench_ort.py tools/ort_timing.py tools/measure_ort.py tools/shape_models.py "$dest/tools/"
cp -r tests/data/models "$dest/tests/data/"
# The ONNX cases gpu_tests runs (GpuOnnxCases: operators lowered at import).
mkdir -p "$dest/tests/data/onnx_ops"
cp -r tests/data/onnx_ops/resize_* tests/data/onnx_ops/einsum_* tests/data/onnx_ops/cumsum_* "$dest/tests/data/onnx_ops/"
du -sh "$dest"
