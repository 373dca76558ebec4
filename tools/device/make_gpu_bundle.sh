#!/usr/bin/env bash
# Here (no GPU needed): build the GPU programs and pack everything the GPU
# machine needs into one folder, to carry there with the `run` tool:
#   tools/device/make_gpu_bundle.sh bundle/gpu
# DEST gets bin/ and lib/ (tools/bundle.sh), the device scripts (tools/device/)
# and the bundled test models (tests/data/models, and the ONNX cases gpu_tests
# reads), the Python package with the GPU session built for the GPU machine's
# Python (python/tgr; PYTHON_FOR_GPU, default python3.12) and the C++ example
# built against an installed tgr (bin/run_on_gpu). On the GPU machine:
#   bash DEST/tools/device/gpu_bench.sh          (tests, export, calibrate, bench, peers)
#   bash DEST/tools/device/session_bench.sh      (tgr.Session against bench: tests, export, bench)
# WITH_PYTHON=0 leaves the Python package out (its build is a second full
# build; gpu_bench.sh and lanes.sh do not need it, session_bench.sh does).
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
# A backtrace on a crash there (no debugger on the GPU machine): tools/device/segv_trace.c.
cc -shared -fPIC -O1 -o "$dest/lib/segv_trace.so" tools/device/segv_trace.c
cp tools/device/*.sh tools/device/*.py "$dest/tools/device/"
cp tools/bench_ort.py tools/ort_timing.py tools/measure_ort.py tools/shape_models.py "$dest/tools/"
cp -r tests/data/models "$dest/tests/data/"
# The ONNX cases gpu_tests runs (GpuOnnxCases: operators lowered at import).
mkdir -p "$dest/tests/data/onnx_ops"
cp -r tests/data/onnx_ops/resize_* tests/data/onnx_ops/einsum_* tests/data/onnx_ops/cumsum_* "$dest/tests/data/onnx_ops/"
# The C++ library as a user installs it, and the example built against that
# prefix alone (as ctest library.* does).
cmake --build build -j2 --target tgr_session
rm -rf build/bundle-prefix build/bundle-example
cmake --install build --prefix build/bundle-prefix --component library > /dev/null
cmake -S examples/session_cpp -B build/bundle-example -DCMAKE_PREFIX_PATH="$PWD/build/bundle-prefix" \
  -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build/bundle-example > /dev/null
tools/bundle.sh "$dest" build/bundle-example/run_on_gpu > /dev/null
if [[ ${WITH_PYTHON:-1} == 0 ]]; then
  du -sh "$dest"
  exit 0
fi
# The Python package (tgr.Session) for the GPU machine's Python: its own
# position-independent build of the module (build/py-gpu).
# (the GPU machine's is 3.12: docs/gpu.md); a pyenv one where no python3.12 runs.
python_for_gpu=${PYTHON_FOR_GPU:-}
if [[ -z $python_for_gpu ]]; then
  for p in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
    "$p" -c '' 2> /dev/null && { python_for_gpu=$p; break; }
  done
fi
python_for_gpu=$("${python_for_gpu:?no python3.12 here: set PYTHON_FOR_GPU}" -c 'import sys; print(sys.executable)')
cmake -S . -B build/py-gpu -DCMAKE_BUILD_TYPE=Release -DTGR_WITH_PYTHON=ON -DTGR_BUILD_TESTS=OFF \
  -DPython3_EXECUTABLE="$python_for_gpu" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache > /dev/null
cmake --build build/py-gpu -j2 --target _tgr
mkdir -p "$dest/python"
cp -r build/py-gpu/python/tgr "$dest/python/"
module=$(ls "$dest"/python/tgr/_tgr*.so)
tools/bundle.sh "$dest" "$module" > /dev/null  # the libraries it needs, into lib/
rm "$dest/bin/$(basename "$module")"
mkdir -p "$dest/examples" "$dest/tests/python"
cp examples/run_on_gpu.py "$dest/examples/"
cp tests/python/test_session.py "$dest/tests/python/"
du -sh "$dest"
