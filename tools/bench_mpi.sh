#!/usr/bin/env bash
# Benchmark of generate + verify --db under mpirun (docs/mpi.md): for each
# rank count, a fresh database, then one line with the wall time and the
# peak memory of the largest rank (/usr/bin/time -v of mpirun: the largest
# child's resident set) of each program, the rules stored (after
# generalization) and verify's proved / refuted / unknown. Also prints the
# load average before each run: on a shared machine the times depend on it.
#   tools/bench_mpi.sh [MAX_OPS] [NP...]        default: 3, then 1 2 4
set -euo pipefail
cd "$(dirname "$0")/.."
max_ops=${1:-3}; shift || true
nps=("$@"); ((${#nps[@]})) || nps=(1 2 4)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mpirun_flags=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && mpirun_flags+=(--allow-run-as-root)
measure() {  # LOG PROGRAM ARGS...: runs under mpirun with /usr/bin/time -v
  local log=$1; shift
  /usr/bin/time -v mpirun "${mpirun_flags[@]}" "$@" > "$log.out" 2> "$log.time"
  local wall rss
  wall=$(grep 'Elapsed (wall clock)' "$log.time" | awk '{print $NF}')
  rss=$(grep 'Maximum resident set size' "$log.time" | awk '{printf "%.0f MB", $NF / 1024}')
  echo "$wall, $rss"
}
echo "generate --max-ops $max_ops and verify --db under mpirun on $(nproc) cores"
for np in "${nps[@]}"; do
  db=$dir/np$np.db
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  gen=$(measure "$dir/gen$np" -np "$np" build/bin/generate --db "$db" --max-ops "$max_ops" --no-progress)
  ver=$(measure "$dir/ver$np" -np "$np" build/bin/verify --db "$db" --no-progress)
  stored=$(grep -o 'stored *[0-9]* new' "$dir/gen$np.out" | grep -o '[0-9]*')
  outcome=$(grep -E '^  (proved|refuted|unknown) ' "$dir/ver$np.out" | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')
  echo "-np $np (load $load): generate $gen; verify $ver; $stored rules: $outcome"
  grep -E '^    enumeration' "$dir/gen$np.out" || true
done
