#!/bin/sh
# The steps of ctest's library.* tests (tests/library/CMakeLists.txt).
#   check_library.sh install BUILD PREFIX HAVE_CUDA   install the component `library` into a fresh PREFIX
#   check_library.sh build SOURCE PREFIX BUILD CXX     configure and build SOURCE with find_package(tgr) from PREFIX
#   check_library.sh run PROGRAM MODEL HAVE_CUDA       run it: on the GPU, or the clean refusal without one
set -eu
step=$1; shift
case $step in
install)
  build=$1 prefix=$2 cuda=$3
  rm -rf "$prefix"
  cmake --install "$build" --prefix "$prefix" --component library > /dev/null
  cd "$prefix"
  headers=$(find include -type f | sort | tr '\n' ' ')
  [ "$headers" = "include/tgr/session.h " ] || { echo "headers installed: $headers"; exit 1; }
  for f in lib/cmake/tgr/tgrConfig.cmake lib/cmake/tgr/tgrConfigVersion.cmake lib/cmake/tgr/tgrTargets.cmake \
           lib/libtgr_session.a lib/libtgr_onnx.a lib/libtgr_ir.a; do
    [ -f "$f" ] || { echo "missing: $f"; exit 1; }
  done
  if [ "$cuda" = ON ]; then [ -f lib/libtgr_gpu.a ] || { echo "missing: lib/libtgr_gpu.a"; exit 1; }; fi
  # Nothing else: no programs, no data (those are the default component's).
  others=$(find . -type f ! -path './include/*' ! -path './lib/*' | tr '\n' ' ')
  [ -z "$others" ] || { echo "installed besides the library: $others"; exit 1; }
  echo "installed: include/tgr/session.h alone, lib/cmake/tgr/tgrConfig.cmake, $(ls lib/*.a | wc -l) static libraries"
  ;;
build)
  source=$1 prefix=$2 build=$3 cxx=$4
  rm -rf "$build"
  # Only the prefix: nothing of the project's source or build tree.
  cmake -S "$source" -B "$build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
        -DCMAKE_BUILD_TYPE=Release > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
  cmake --build "$build" > "$build.build.log" 2>&1 || { cat "$build.build.log"; exit 1; }
  echo "built: $build/run_on_gpu"
  ;;
run)
  program=$1 model=$2 cuda=$3
  status=0
  out=$("$program" "$model" 2>&1) || status=$?
  if [ "$cuda" = ON ] && nvidia-smi -L > /dev/null 2>&1; then
    [ $status = 0 ] || { echo "exit $status: $out"; exit 1; }
    echo "ran on the GPU: $out"
  else
    echo "no GPU: $out, exit $status"
  fi
  ;;
*) echo "check_library.sh: unknown step '$step'" >&2; exit 2 ;;
esac
