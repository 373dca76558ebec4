#!/usr/bin/env bash
# Installs what the build needs, builds, and runs every test (README command 2;
# .ci/run calls this). GPU tests report "Skipped" where no GPU is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
