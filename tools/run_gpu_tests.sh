#!/usr/bin/env bash
# Runs the GPU tests. Here (with a GPU): builds, then runs build/bin/gpu_tests.
# On the GPU machine, which cannot build: runs the bundle made by
#   tools/setup.sh && tools/bundle.sh bundle build/bin/gpu_tests build/bin/run build/bin/bench_interpreter
# and carried there as `bundle/`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -x bundle/bin/gpu_tests ]]; then
  export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}"
  exec bundle/bin/gpu_tests "$@"
fi
tools/setup.sh
exec build/bin/gpu_tests "$@"
