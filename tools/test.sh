#!/usr/bin/env bash
# Installs what the build needs, builds, and runs every test (README command 2;
# .ci/run calls this). GPU tests report "Skipped" where no GPU is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# The ONNX exporter's onnxruntime comparison (ctest onnx_export_vs_onnxruntime)
# needs the Python packages onnx and onnxruntime.
if ! python3 -c "import onnx, onnxruntime" 2>/dev/null; then
  python3 -m pip install -q onnx onnxruntime ||
    echo "test.sh: could not install onnx and onnxruntime; onnx_export_vs_onnxruntime will fail" >&2
fi
# The Python package: `pip install .` (README.md, "Python") into a virtual
# environment that also sees the packages above, then its tests (pytest).
# build/pip keeps pip's CMake build, so a second run rebuilds only what changed.
python3 -m venv --system-site-packages build/python-venv
build/python-venv/bin/python -m pip install -q pytest onnx onnxruntime numpy .
ctest --test-dir build --output-on-failure -j "$(nproc)"
build/python-venv/bin/python -m pytest -q tests/python
