#!/usr/bin/env bash
# Lints what changed since BASE (default HEAD~1): clang-format on the changed
# lines (a violation fails: exit 1) and clang-tidy on the changed .cpp files
# (findings are warnings, counted; they do not fail). docs/README.md, "Lint".
#
#   tools/lint.sh [BASE]      # needs build/compile_commands.json for clang-tidy
set -uo pipefail
cd "$(dirname "$0")/.."
BASE=${1:-HEAD~1}

if ! git rev-parse --verify -q "$BASE^{commit}" >/dev/null; then
  echo "lint: no commit '$BASE' (first commit or shallow clone): nothing to compare, skipped"
  exit 0
fi
for tool in git-clang-format clang-tidy; do
  command -v "$tool" >/dev/null || { echo "lint: $tool not found (Debian: apt-get install clang-format clang-tidy)" >&2; exit 2; }
done
BASE_SHA=$(git rev-parse --short "$BASE")
status=0

# 1. clang-format, changed lines only (C++ and CUDA sources).
format_diff=$(git clang-format --quiet --diff --extensions cpp,h,cc,hpp,cu,cuh "$BASE" 2>&1)
if [[ -z "$format_diff" || "$format_diff" == "no modified files to format" ||
      "$format_diff" == "clang-format did not modify any files" ]]; then
  echo "lint: clang-format: changed lines since $BASE_SHA are formatted"
else
  echo "$format_diff"
  echo "lint: clang-format: changed lines since $BASE_SHA are not formatted (above); fix with: git clang-format $BASE" >&2
  status=1
fi

# 2. clang-tidy on changed .cpp files (warnings only).
mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$BASE" -- '*.cpp' | grep -v '^build/')
if ((${#files[@]} == 0)); then
  echo "lint: clang-tidy: no .cpp file changed since $BASE_SHA"
elif [[ ! -f build/compile_commands.json ]]; then
  echo "lint: clang-tidy: build/compile_commands.json missing (configure first); skipped" >&2
else
  log=$(mktemp)
  for f in "${files[@]}"; do
    [[ -f "$f" ]] || continue
    clang-tidy -p build --quiet "$f" 2>/dev/null | grep -E '^[^ ].*: (warning|error): ' >>"$log"
  done
  count=$(wc -l <"$log")
  if ((count > 0)); then
    cat "$log"
    echo "lint: clang-tidy: $count warning(s) in ${#files[@]} changed .cpp file(s) since $BASE_SHA (reported, not failing)"
  else
    echo "lint: clang-tidy: no findings in ${#files[@]} changed .cpp file(s) since $BASE_SHA"
  fi
  rm -f "$log"
fi
exit $status
