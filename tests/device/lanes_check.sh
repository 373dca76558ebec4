#!/usr/bin/env bash
# tools/device/lanes.sh without a GPU: a bundle whose gpu_bench.sh records
# the lane's GPU, stages, models and rules database stands in for the real
# one, so what is checked is the lanes' own part: one suite per lane, on its
# own GPU and work folder, "tests" in the first lane only, each lane's
# RULES_DB taken as its rules, and an unknown RULES_DB refused by name.
set -euo pipefail
lanes=${1:?usage: lanes_check.sh tools/device/lanes.sh}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /tmp/tgr-lane-0 /tmp/tgr-lane-1-rules_generated /tmp/tgr-lane-0-rules' EXIT
rm -rf /tmp/tgr-lane-0 /tmp/tgr-lane-1-rules_generated /tmp/tgr-lane-0-rules
mkdir -p "$tmp/bundle/tools/device"
cat > "$tmp/bundle/tools/device/gpu_bench.sh" <<'FAKE'
#!/usr/bin/env bash
B=$(cd "$(dirname "$0")/../.." && pwd)
echo "gpu=$CUDA_VISIBLE_DEVICES stages=[$STAGES] models=[$*] rules=$(cat "$B/rules.db") shipped=$(cat "$B/share/tgr/default_rules.db" 2>/dev/null)"
FAKE
echo before > "$tmp/bundle/rules.db"
echo generated > "$tmp/bundle/rules_generated.db"
tar -cJf "$tmp/bundle.tar.xz" -C "$tmp" bundle
export OUT=$tmp/out BUNDLE=$tmp/bundle.tar.xz
LANES="a b|c" LANE_RULES="|rules_generated.db" STAGES="tests bench" bash "$lanes" > "$tmp/log"
cat "$tmp/log"
grep -q "gpu=0 stages=\[tests\] models=\[none\] rules=before" "$tmp/log" || { echo "FAIL: lane 0 ran no tests"; exit 1; }
grep -q "gpu=0 stages=\[ bench\] models=\[a\] rules=before" "$tmp/log" || { echo "FAIL: lane 0 did not run a"; exit 1; }
grep -q "gpu=1 stages=\[ bench\] models=\[c\] rules=generated shipped=generated" "$tmp/log" ||
  { echo "FAIL: lane 1 did not run c on GPU 1 with its rules"; exit 1; }
if grep -q "gpu=1 stages=\[tests" "$tmp/log"; then echo "FAIL: tests ran in lane 1"; exit 1; fi
[[ -s $OUT/lane-1/logs.tar.xz ]] || { echo "FAIL: no logs for lane 1"; exit 1; }
# A later call giving the bundle's own rules.db to a lane gets the bundle's, as unpacked.
LANES="a" LANE_RULES="rules.db" bash "$lanes" > "$tmp/own"
grep -q "rules=before shipped=before" "$tmp/own" || { echo "FAIL: rules.db is not the bundle's"; cat "$tmp/own"; exit 1; }
rm -rf /tmp/tgr-lane-0
LANES="a" LANE_RULES="missing.db" bash "$lanes" > "$tmp/bad" || true
grep -q "RULES_DB 'missing.db' is not a file of the bundle" "$tmp/bad" || { echo "FAIL: missing RULES_DB"; cat "$tmp/bad"; exit 1; }
echo "lanes: ok"
