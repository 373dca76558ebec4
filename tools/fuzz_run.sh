#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz_onnx_import, fuzz_rule_text, fuzz_rules_db)
# from their seed corpora and reports, per target, the inputs executed, the
# crashes found and the CPU seconds spent (docs/reliability.md). tools/fuzz.sh
# calls it on its build; `tools/fuzz.sh --bundle DEST` copies it to
# DEST/run.sh, to run on another machine without this repository.
#
#   fuzz_run.sh BIN CORPUS OUT [TARGET...]
#     BIN     the folder of the fuzz_TARGET programs
#     CORPUS  the folder of the seed corpora, CORPUS/TARGET/ (read only: copied)
#     OUT     where each target's log (TARGET.log) and what it finds
#             (TARGET/crash-*, leak-*, timeout-*, oom-*) go
#   FUZZ_SECONDS=N  wall seconds per target (default 60), from a random seed
#   FUZZ_RUNS=N     instead: N inputs per target from seed 1 (reproducible: CI)
#   FUZZ_JOBS=N     N processes per target (libFuzzer -fork=N, crashes do not
#                   stop it) and the targets at once: N x 3 processes
#   FUZZ_GROWN=DIR  keep each target's grown corpus in DIR/TARGET and start
#                   from it when it is there: a long run in several parts
#                   (another call, another machine) goes on where it stopped
#
# Exit status 1 when any target found anything, 2 for a usage mistake.
# In a bundle (tools/fuzz.sh --bundle) the shared libraries are in lib/
# beside this script.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ -d $here/lib ]] && export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if (($# < 3)); then
  sed -n '2,20p' "$0" >&2
  exit 2
fi
bin=$(cd "$1" && pwd) corpus=$(cd "$2" && pwd)
mkdir -p "$3" && out=$(cd "$3" && pwd)
shift 3
targets=("$@")
((${#targets[@]})) || targets=(onnx_import rule_text rules_db)
[[ -n ${FUZZ_GROWN:-} ]] && FUZZ_GROWN=$(mkdir -p "$FUZZ_GROWN" && cd "$FUZZ_GROWN" && pwd)
seconds=${FUZZ_SECONDS:-60}
interrupted=72  # libFuzzer's exit status when interrupted (-interrupted_exitcode)
jobs=${FUZZ_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: FUZZ_JOBS must be a positive number, not '$jobs'" >&2; exit 2; }
# halt_on_error: every sanitizer report is a finding.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Fuzzes one target; writes OUT/TARGET.log, OUT/TARGET.rc (its exit status)
# and OUT/TARGET.cpu ("USER SYS": the CPU seconds of all its processes).
fuzz_one() {
  local target=$1 work
  if [[ -n ${FUZZ_GROWN:-} ]]; then
    work=$FUZZ_GROWN/$target
    [[ -d $work ]] || { mkdir -p "$work" && cp -r "$corpus/$target/." "$work/"; }
  else
    work=$(mktemp -d)
    cp -r "$corpus/$target/." "$work/"
  fi
  mkdir -p "$out/$target"
  local budget=(-max_total_time="$seconds")
  # A fixed number of inputs from a fixed seed: the same every run, so CI
  # is reproducible; else a time budget from a random seed, to explore.
  [[ -n ${FUZZ_RUNS:-} ]] && budget=(-runs="$FUZZ_RUNS" -seed=1)
  # -fork: N processes, each restarted after a crash (kept, counted) or
  # after its own short time; the parent merges what they find.
  local parallel=()
  ((jobs > 1)) && parallel=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  local TIMEFORMAT='%U %S'
  # -rss_limit_mb: a model that asks for gigabytes is a finding too.
  { time "$bin/fuzz_$target" "${budget[@]}" "${parallel[@]}" -rss_limit_mb=2048 -timeout=20 -max_len=65536 \
      -interrupted_exitcode="$interrupted" \
      -print_final_stats=1 -print_funcs=0 -artifact_prefix="$out/$target/" "$work" >"$out/$target.log" 2>&1; } 2>"$out/$target.cpu"
  echo $? >"$out/$target.rc"
  [[ -n ${FUZZ_GROWN:-} ]] || rm -rf "$work"
}

# "TARGET: N inputs, C found, S CPU seconds" from its log and artifacts.
report() {
  local target=$1 execs found cpu
  # -print_final_stats's count; in fork mode the parent's last "#N:" line.
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$out/$target.log" | tail -1)
  [[ -n $execs ]] || execs=$(sed -n 's/^#\([0-9]*\):.*/\1/p;s/^#\([0-9]*\)\t.*/\1/p' "$out/$target.log" | tail -1)
  found=$(find "$out/$target" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$out/$target.cpu" 2>/dev/null)
  echo "fuzz: $target: ${execs:-0} inputs, $found crashes, ${cpu:-?} CPU seconds"
  local rc
  rc=$(cat "$out/$target.rc")
  # Stopped by Ctrl-C (or SIGINT) without a finding: not a crash. With
  # FUZZ_GROWN the next run goes on from the corpus grown so far.
  if ((rc == interrupted && found == 0)); then
    echo "fuzz: $target: interrupted${FUZZ_GROWN:+ (resume: the same FUZZ_GROWN)}"
    return 0
  fi
  ((found == 0 && rc == 0)) || { ((found)) || echo "fuzz: fuzz_$target exited with status $rc" >&2; return 1; }
}

if [[ -n ${FUZZ_RUNS:-} ]]; then
  echo "fuzz: ${targets[*]}: $FUZZ_RUNS inputs each (seed 1), $jobs process(es) each"
else
  echo "fuzz: ${targets[*]}: $seconds s each, $jobs process(es) each"
fi
if ((jobs > 1)); then
  for target in "${targets[@]}"; do fuzz_one "$target" & done
  wait
else
  for target in "${targets[@]}"; do fuzz_one "$target"; done
fi
status=0 total=0
for target in "${targets[@]}"; do
  if ! report "$target"; then
    status=1
    tail -40 "$out/$target.log"
    echo "fuzz: $target found a crash (above; the inputs are in $out/$target/)" >&2
  fi
  total=$((total + $(awk '{printf "%.0f", $1 + $2}' "$out/$target.cpu" 2>/dev/null || echo 0)))
done
echo "fuzz: $total CPU seconds in all"
exit $status
