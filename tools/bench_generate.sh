#!/usr/bin/env bash
# Benchmark of the generator: runs `generate` at a size into a fresh
# database and prints its figures (graphs enumerated, fingerprint classes,
# candidates before and after each pruning pass, float64 rejections, time,
# peak memory). Default --max-ops 4, the size TASO stopped at.
#   tools/bench_generate.sh [MAX_OPS] [extra generate flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
max_ops=${1:-4}; shift || true
db=$(mktemp -d)/bench.db
trap 'rm -rf "$(dirname "$db")"' EXIT
echo "generate --max-ops $max_ops on $(nproc) cores"
build/bin/generate --db "$db" --max-ops "$max_ops" "$@"
