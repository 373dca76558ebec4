#!/usr/bin/env bash
# The sanitizer and fuzzing build (docs/reliability.md): builds, with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer, the unit tests of the code
# that reads untrusted input (text parsers, ONNX import, rules database) and
# the libFuzzer targets of fuzz/, runs those tests, then fuzzes each target
# for FUZZ_SECONDS (default 60) from its seed corpus (fuzz/corpus/TARGET).
# .ci/run calls it; a long run: FUZZ_SECONDS=3600 tools/fuzz.sh. The fuzzing
# itself is tools/fuzz_run.sh (FUZZ_RUNS, FUZZ_JOBS: see there).
#
#   tools/fuzz.sh                 # build into build-fuzz/, test, fuzz 60 s per target
#   FUZZ_SECONDS=0 tools/fuzz.sh  # build and test only
#   FUZZ_JOBS=8 tools/fuzz.sh     # the targets at once, 8 processes each (-fork=8)
#   tools/fuzz.sh --bundle DEST   # build the targets and pack them to run elsewhere:
#                                 # DEST/bin, DEST/lib (tools/bundle.sh), DEST/corpus,
#                                 # DEST/run.sh; there: FUZZ_JOBS=20 DEST/run.sh DEST/bin DEST/corpus OUT
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
JOBS=${JOBS:-$(nproc)}
BUILD=${FUZZ_BUILD:-build-fuzz}
BUNDLE=
if [[ ${1:-} == --bundle ]]; then
  BUNDLE=${2:?usage: tools/fuzz.sh --bundle DEST}
elif (($#)); then
  sed -n '2,18p' "$0" >&2
  exit 2
fi

if ! command -v clang++ >/dev/null || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "fuzz: installing clang and its sanitizer runtimes"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang libclang-rt-dev 2>/dev/null ||
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang "libclang-rt-$(clang++ --version | sed -n 's/.*version \([0-9]*\).*/\1/p')-dev"
fi

# Packs the fuzz programs of BIN, with the shared libraries they need
# (tools/bundle.sh), the seed corpora and tools/fuzz_run.sh (as run.sh,
# which finds lib/ beside it) into DEST: what a machine without this
# repository needs to fuzz.
pack_bundle() {
  local bin=$1 dest=$2
  rm -rf "$dest"
  tools/bundle.sh "$dest" "$bin/fuzz_onnx_import" "$bin/fuzz_rule_text" "$bin/fuzz_rules_db" >/dev/null
  strip --strip-debug "$dest"/bin/*  # under the 64 MiB a carried folder may take; crashes are replayed here
  cp -r fuzz/corpus "$dest/corpus"
  cp tools/fuzz_run.sh "$dest/run.sh"
  git rev-parse HEAD >"$dest/COMMIT" 2>/dev/null || true
  du -sh "$dest"
}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DTGR_FUZZ=ON \
  -DTGR_WERROR=OFF -DTGR_WITH_CUDA=OFF "${launcher[@]}" >/dev/null
TESTS=(unit_tests onnx_proto_tests onnx_import_tests rules_db_tests axioms_tests)
if [[ -n $BUNDLE ]]; then
  cmake --build "$BUILD" -j "$JOBS" --target fuzz_targets
  pack_bundle "$BUILD/bin" "$BUNDLE"
  exit 0
fi
cmake --build "$BUILD" -j "$JOBS" --target "${TESTS[@]}" fuzz_targets

# The sanitizer run of the unit tests: any report fails it (halt_on_error).
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${TESTS[@]}"; do
  echo "fuzz: $t under ASan+UBSan"
  "$BUILD/bin/$t" --gtest_brief=1 || { echo "fuzz: $t failed under the sanitizers" >&2; exit 1; }
done

((SECONDS_PER_TARGET > 0)) || exit 0
# What the targets find goes to $BUILD/fuzz-out/TARGET/ (crash-*, leak-*,
# timeout-*, oom-*), their logs to $BUILD/fuzz-out/TARGET.log.
rm -rf "$BUILD/fuzz-out"
FUZZ_SECONDS=$SECONDS_PER_TARGET tools/fuzz_run.sh "$BUILD/bin" fuzz/corpus "$BUILD/fuzz-out"
