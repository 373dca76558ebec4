#!/usr/bin/env bash
# tools/device/suite.sh without a GPU: a bundle whose gpu_bench.sh only
# records the models it is asked for stands in for the real one, so what is
# checked is the suite's own part: the bundle unpacked once, models done in
# an earlier call skipped, no model started past the deadline, the logs
# packed into $OUT, and a clear error without a bundle.
set -euo pipefail
suite=${1:?usage: suite_check.sh tools/device/suite.sh}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bundle/tools/device"
cat > "$tmp/bundle/tools/device/gpu_bench.sh" <<'FAKE'
#!/usr/bin/env bash
echo "gpu_bench STAGES=[$STAGES] models=[$*]"
echo "$*" >> "$OUT/calls.log"
FAKE
tar -cJf "$tmp/bundle.tar.xz" -C "$tmp" bundle
export SUITE_ROOT=$tmp/root OUT=$tmp/out
mkdir -p "$OUT"

if BUNDLE= bash "$suite" a 2> "$tmp/err"; then echo "FAIL: ran without a bundle"; exit 1; fi
grep -q "BUNDLE" "$tmp/err" || { echo "FAIL: the error does not name BUNDLE"; cat "$tmp/err"; exit 1; }

BUNDLE=$tmp/bundle.tar.xz STAGES="export bench" bash "$suite" a b > "$tmp/first"
BUNDLE=$tmp/bundle.tar.xz STAGES="export bench" bash "$suite" a b c > "$tmp/second"
DEADLINE=-1 BUNDLE=$tmp/bundle.tar.xz bash "$suite" a b c d > "$tmp/third"
cat "$tmp/first" "$tmp/second" "$tmp/third"
calls=$(grep -v "^a b c$\|^a b$" "$tmp/root/logs/calls.log" | tr '\n' ' ')
[[ $calls == "a b c " ]] || { echo "FAIL: models run one by one, each once: got '$calls'"; exit 1; }
grep -q "deadline reached.*not started: d" "$tmp/third" || { echo "FAIL: d started past the deadline"; exit 1; }
[[ -s $OUT/logs.tar.xz ]] || { echo "FAIL: no logs.tar.xz in OUT"; exit 1; }
echo "suite: ok"
