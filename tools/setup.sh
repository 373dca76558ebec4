#!/usr/bin/env bash
# Installs the Debian packages the build needs, then configures and builds.
# Idempotent: re-running only rebuilds what changed.
#
#   tools/setup.sh              # Release build into build/, executables in build/bin/
#   BUILD_TYPE=Debug tools/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config
  libz3-dev libtbb-dev libsqlite3-dev libcli11-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev nlohmann-json3-dev
  coinor-libcbc-dev
  graphviz chromium
  python3-dev python3-venv pybind11-dev
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

BUILD_TYPE=${BUILD_TYPE:-Release}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B build -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
cmake --build build -j "$JOBS"
