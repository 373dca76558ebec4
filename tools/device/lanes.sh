#!/usr/bin/env bash
# On a GPU machine of several GPUs: tools/device/suite.sh once per GPU, in
# parallel, each lane with its own models, work folder and, optionally, its
# own rules database. N GPUs run a suite N times faster for the same device
# time, and two rule sets run side by side on one machine in one call (one
# run, as comparisons must be).
#
#   BUNDLE=devgpu/bundle.tar.xz LANES="resnet50 googlenet|inception_v3 bert_base" bash tools/device/lanes.sh
#   LANE_RULES="rules_before.db|rules_generated.db"   (per lane: suite.sh's RULES_DB; empty: the bundle's)
#   STAGES=..., DEADLINE=...  as suite.sh; its "tests" stage runs in the first lane only.
# Lane i runs on GPU i (CUDA_VISIBLE_DEVICES) with SUITE_ROOT /tmp/tgr-lane-i
# (-RULES with LANE_RULES: a later call with other rules starts afresh);
# its output is printed when all lanes are done and kept, with its logs, in
# $OUT/lane-i/.
set -uo pipefail
IFS='|' read -r -a lanes <<< "${LANES:?set LANES to the models of each lane, lanes separated by a bar}"
IFS='|' read -r -a rules <<< "${LANE_RULES:-}"
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/tgr-lanes-out}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
((${#lanes[@]} <= ${gpus:-0})) || echo "lanes: ${#lanes[@]} lanes on ${gpus:-0} GPUs (lanes share GPUs)"
stages=${STAGES:-export calibrate optimize bench}
pids=()
for i in "${!lanes[@]}"; do
  lane_stages=$stages
  ((i > 0)) && lane_stages=${stages//tests/}
  mkdir -p "$out/lane-$i"
  read -r -a models <<< "${lanes[$i]}"
  (CUDA_VISIBLE_DEVICES=$((gpus > 0 ? i % gpus : i)) SUITE_ROOT=/tmp/tgr-lane-$i${rules[$i]:+-${rules[$i]%.db}} OUT=$out/lane-$i \
     STAGES=$lane_stages RULES_DB=${rules[$i]:-} bash "$here/suite.sh" "${models[@]}" > "$out/lane-$i/suite.txt" 2>&1) &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
for i in "${!lanes[@]}"; do
  echo "===== lane $i (GPU $i${rules[$i]:+, rules ${rules[$i]}}): ${lanes[$i]}"
  cat "$out/lane-$i/suite.txt"
done
