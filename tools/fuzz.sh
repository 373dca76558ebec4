#!/usr/bin/env bash
# The sanitizer and fuzzing build (docs/reliability.md): builds, with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer, the unit tests of the code
# that reads untrusted input (text parsers, ONNX import, rules database) and
# the libFuzzer targets of fuzz/, runs those tests, then fuzzes each target
# for FUZZ_SECONDS (default 60) from its seed corpus (fuzz/corpus/TARGET).
# .ci/run calls it; a long run: FUZZ_SECONDS=3600 tools/fuzz.sh.
#
#   tools/fuzz.sh                 # build into build-fuzz/, test, fuzz 60 s per target
#   FUZZ_SECONDS=0 tools/fuzz.sh  # build and test only
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
JOBS=${JOBS:-$(nproc)}
BUILD=${FUZZ_BUILD:-build-fuzz}

if ! command -v clang++ >/dev/null || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "fuzz: installing clang and its sanitizer runtimes"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang libclang-rt-dev 2>/dev/null ||
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang "libclang-rt-$(clang++ --version | sed -n 's/.*version \([0-9]*\).*/\1/p')-dev"
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DTGR_FUZZ=ON \
  -DTGR_WERROR=OFF -DTGR_WITH_CUDA=OFF "${launcher[@]}" >/dev/null
TESTS=(unit_tests onnx_proto_tests onnx_import_tests rules_db_tests axioms_tests)
cmake --build "$BUILD" -j "$JOBS" --target "${TESTS[@]}" fuzz_targets

# The sanitizer run of the unit tests: any report fails it (halt_on_error).
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${TESTS[@]}"; do
  echo "fuzz: $t under ASan+UBSan"
  "$BUILD/bin/$t" --gtest_brief=1 || { echo "fuzz: $t failed under the sanitizers" >&2; exit 1; }
done

((SECONDS_PER_TARGET > 0)) || exit 0
# -rss_limit_mb: a model that asks for gigabytes is a finding too.
for target in onnx_import rule_text rules_db; do
  work=$(mktemp -d)
  cp -r "fuzz/corpus/$target/." "$work/"
  # FUZZ_RUNS (what .ci/run sets): a fixed number of inputs from a fixed
  # seed, the same every run, so CI is reproducible; else a time budget
  # from a random seed, to explore.
  if [[ -n ${FUZZ_RUNS:-} ]]; then
    budget=(-runs="$FUZZ_RUNS" -seed=1)
    echo "fuzz: $target for $FUZZ_RUNS inputs (seed 1)"
  else
    budget=(-max_total_time="$SECONDS_PER_TARGET")
    echo "fuzz: $target for $SECONDS_PER_TARGET s"
  fi
  log="$PWD/$BUILD/fuzz_$target.log"
  if ! (cd "$BUILD" && "./bin/fuzz_$target" "${budget[@]}" -rss_limit_mb=2048 -timeout=20 \
          -max_len=65536 -print_final_stats=1 "$work" >"$log" 2>&1); then
    tail -60 "$log"
    echo "fuzz: $target found a crash (above; the input is in $BUILD/crash-*)" >&2
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^Done [0-9]+ runs" "$log" | tail -2
  rm -rf "$work"
done
