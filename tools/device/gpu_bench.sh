#!/usr/bin/env bash
# On the GPU machine, in one call: the GPU tests, then for each model: export
# it with PyTorch (export_models.py: NAME.onnx and ONNX Runtime reference
# outputs), measure the steps of its execution plan (calibrate), optimize it
# with the measured step costs (--target tgr-gpu) when the bundle has an
# `optimize` that can, `bench` original (and optimized) against the CPU
# reference with a per-operator profile and the predicted times, and time
# PyTorch eager and torch.compile (peers.py); prints one table.
#
#   PRECISIONS="fp32 tf32 bf16" bash ...   (calibrate, optimize, bench and the peers at each precision:
#                                           runtime/precision.h, peers.py; default fp32; at each one
#                                           optimize --precision costs the steps calibrate timed at it
#                                           and writes M.opt.onnx at fp32, M.opt.P.onnx at P)
#   PEER_MODES=eager,reduce-overhead bash ...  (peers.py --modes: fewer torch.compile runs)
#
#   bash bundle/gpu/tools/device/gpu_bench.sh [MODEL ...]
#   STAGES="tests bench" bash ...     (any of: tests export calibrate optimize bench peers)
#   SEARCH=both bash ...              (optimize's --search: backtrack, saturate or both; default the target's)
#   OPTIMIZE_FLAGS="--node-growth 0" bash ...   (more optimize flags, as a shell splits them)
#   DIAGNOSE=0 bash ...   (no profiles of a model whose predicted speedup misses the measured one by
#                          more than 5 %; by default bench_profile_replay_M.log and bench_steps_M.log say
#                          which steps miss, while the optimized graph that missed is still there, and
#                          compare_choices.py which convolutions bench ran otherwise than calibrate
#                          timed them: TGR_GPU_LOG_CHOICES=1 for every process)
# The bundle comes from tools/device/make_gpu_bundle.sh. Logs go to $OUT when
# set (the `run` tool's folder), else /tmp/tgr-gpu-out.
set -uo pipefail
search=(${SEARCH:+--search "$SEARCH"} ${OPTIMIZE_FLAGS:-})  # none: optimize's default for the target
B=$(cd "$(dirname "$0")/../.." && pwd)
export LD_LIBRARY_PATH="$B/lib:${LD_LIBRARY_PATH:-}"
export TGR_TEST_DATA="$B/tests/data"
# calibrate with a backtrace on a crash (tools/device/segv_trace.c), where the bundle has it.
trace=()
[[ -f $B/lib/segv_trace.so ]] && trace=(env LD_PRELOAD="$B/lib/segv_trace.so")
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/tgr-gpu-out}
work=${WORK:-/tmp/tgr-gpu-work}
mkdir -p "$out" "$work"
models=("$@")
((${#models[@]})) || models=(resnet50 resnext50_32x4d inception_v3 densenet121 bert_base)
stages=" ${STAGES:-tests export calibrate optimize bench peers} "
precisions=(${PRECISIONS:-fp32})
has() { [[ $stages == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader || true

if has tests; then
  echo "== GPU tests"
  # Unbuffered, with a backtrace on a crash (tools/device/segv_trace.c): piped
  # output is otherwise lost with the process.
  "${trace[@]}" stdbuf -o0 -e0 "$B/bin/gpu_tests" --gtest_brief=1 2>&1 | tee "$out/gpu_tests.log" | tail -25
fi
# From here every process logs its convolutions' timed choices (stderr, into
# the logs), so that a missed prediction can be traced to a choice calibrate
# did not time (the GPU tests above run as they do anywhere).
[[ ${DIAGNOSE:-1} != 0 ]] && export TGR_GPU_LOG_CHOICES=1
if has export; then
  echo "== export (${models[*]})"
  python3 "$B/tools/device/export_models.py" "$work" "${models[@]}" 2>&1 | grep -v Warning | tail -8
fi
# optimize_at M P: optimizes model M for precision P (measured costs at P
# where calibrate found a device, else the roofline); sets `written` to the
# model it wrote ($work/M.opt.onnx at fp32, $work/M.opt.P.onnx at P), and
# fails where optimize did.
optimize_at() {
  local m=$1 p=$2 tag="" suffix="" at=()
  [[ $p != fp32 ]] && tag=_$p suffix=.$p at=(--precision "$p")
  echo "== optimize $m at $p (measured costs, device '${device:-none}')"
  local cost=(--target roofline)
  [[ -n $device ]] && cost=(--target tgr-gpu --device "$device" "${at[@]}")
  # The search can only take a merge whose merged step it can cost, and
  # an unmeasured step gets a guess fitted to the measured ones, priced
  # 25 % above it. So first the steps it could reach are measured: those
  # of the model optimized with the analytic costs, and those of an
  # exploring search that prices every guess at half of it
  # (--unmeasured-margin 0.5: it takes what might pay). Then up to five
  # measured rounds: the steps a round's graph has that are still missing
  # are measured, and the search runs again, until a round's graph has
  # none missing.
  if [[ -n $device ]] && has calibrate; then
    for name in roofline explore; do
      local reach=(--target roofline)
      [[ $name == explore ]] && reach=(--target tgr-gpu --device "$device" "${at[@]}" --unmeasured-margin 0.5)
      if "$B/bin/optimize" --rules "$work/rules.db" --specs "$B/specs" "${search[@]}" "${reach[@]}" \
           "$work/$m.onnx" -o "$work/$m.$name$suffix.onnx" > "$out/optimize_${m}_$name$tag.log" 2>&1; then
        "${trace[@]}" "$B/bin/calibrate" --db "$work/rules.db" "$work/$m.$name$suffix.onnx" --test-data "$work/$m-testdata" \
          --iters 30 "${at[@]}" > "$out/calibrate_${m}_$name$tag.log" 2>&1 || tail -3 "$out/calibrate_${m}_$name$tag.log"
      fi
    done
  fi
  written=$work/$m.opt$suffix.onnx
  local round ok=0
  for round in 1 2 3 4 5; do
    if "$B/bin/optimize" --rules "$work/rules.db" --specs "$B/specs" "${search[@]}" "${cost[@]}" \
         "$work/$m.onnx" -o "$written" > "$out/optimize_${m}_$round$tag.log" 2>&1; then
      ok=1
    else
      ok=0; tail -3 "$out/optimize_${m}_$round$tag.log"; break
    fi
    if ((round < 5)) && [[ -n $device ]] && has calibrate; then
      "${trace[@]}" "$B/bin/calibrate" --db "$work/rules.db" "$written" --test-data "$work/$m-testdata" --iters 30 "${at[@]}" \
        > "$out/calibrate_${m}_opt$round$tag.log" 2>&1 || tail -3 "$out/calibrate_${m}_opt$round$tag.log"
      local new_steps
      new_steps=$(sed -n "s/^device '.*': \([0-9]*\) step signatures measured.*/\1/p" "$out/calibrate_${m}_opt$round$tag.log" | tail -1)
      [[ ${new_steps:-1} == 0 ]] && break
    else
      break
    fi
  done
  ((ok)) && grep -E "operators|predicted|    #|time:" "$out/optimize_${m}_$round$tag.log"
  ((ok))
}

for m in "${models[@]}"; do
  [[ -f $work/$m.onnx ]] || { echo "$m: not exported"; continue; }
  # The measured costs go into a copy of the bundle's rules database (its
  # op_costs table), which optimize then reads for this device.
  [[ -f $work/rules.db ]] || cp "$B/rules.db" "$work/rules.db"
  if has calibrate; then
    echo "== calibrate $m"
    "${trace[@]}" "$B/bin/calibrate" --db "$work/rules.db" "$work/$m.onnx" --test-data "$work/$m-testdata" --iters 30 \
      > "$out/calibrate_$m.log" 2>&1 && tail -1 "$out/calibrate_$m.log" || tail -3 "$out/calibrate_$m.log"
    # Other precisions: their own step costs and convolution choices (keyed by precision).
    for p in "${precisions[@]}"; do
      [[ $p == fp32 ]] && continue
      "${trace[@]}" "$B/bin/calibrate" --db "$work/rules.db" "$work/$m.onnx" --test-data "$work/$m-testdata" --iters 30 \
        --precision "$p" > "$out/calibrate_${m}_$p.log" 2>&1 && tail -1 "$out/calibrate_${m}_$p.log" ||
        tail -3 "$out/calibrate_${m}_$p.log"
    done
  fi
  opt=()
  declare -A opt_at=()  # precision -> the model optimize wrote for it
  if has optimize; then
    device=$(sed -n "s/^device '\(.*\)': .*/\1/p" "$out/calibrate_$m.log" 2>/dev/null | tail -1)
    for p in "${precisions[@]}"; do
      optimize_at "$m" "$p" && opt_at[$p]=$written
    done
    opt=(${opt_at[fp32]:-})
  fi
  if has bench; then
    echo "== bench $m"
    predict=()
    [[ -n ${device:-} ]] && predict=(--db "$work/rules.db" --device "$device")
    "$B/bin/bench" "$work/$m.onnx" "${opt[@]}" --test-data "$work/$m-testdata" --iters 200 --profile --name "$m" \
      "${predict[@]}" > "$out/bench_$m.log" 2>&1
    grep -E "^(  check|  time|  predicted|  speedup|  achieved|RESULT|PREDICTED)|error" "$out/bench_$m.log"
    # A prediction that misses by more than 5 %: each kind of step inside the
    # replay against its prediction, and every step's time beside its own.
    ratio=$(sed -n 's/.*(predicted \/ measured \([0-9.]*\)).*/\1/p' "$out/bench_$m.log" | tail -1)
    if [[ ${DIAGNOSE:-1} != 0 && -n $ratio && ${#opt[@]} -gt 0 ]] &&
       python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1]) - 1) > 0.05 else 1)" "$ratio"; then
      echo "== $m: predicted / measured $ratio, profiling the steps"
      "$B/bin/bench" "$work/$m.onnx" "${opt[@]}" --test-data "$work/$m-testdata" --iters 60 --profile-replay \
        "${predict[@]}" > "$out/bench_profile_replay_$m.log" 2>&1
      grep -E "^  [a-z0-9+]+ +[0-9]+ +[0-9.]+ |^  all kinds" "$out/bench_profile_replay_$m.log"
      "$B/bin/bench" "$work/$m.onnx" "${opt[@]}" --test-data "$work/$m-testdata" --iters 60 --profile-steps \
        "${predict[@]}" > "$out/bench_steps_$m.log" 2>&1
      python3 "$B/tools/device/compare_choices.py" "$out/bench_$m.log" "$out"/calibrate_"$m"*.log | tail -12
    fi
    # The other precisions: the original and the model optimized for the precision (optimize
    # --precision; without the optimize stage, the original alone), checked against the float32
    # interpreter with the precision's tolerance; --db seeds the convolution choices.
    for p in "${precisions[@]}"; do
      [[ $p == fp32 ]] && continue
      echo "== bench $m at $p"
      seed=()
      [[ -f $work/rules.db ]] && seed=(--db "$work/rules.db")
      opt_p=(${opt_at[$p]:-})
      "$B/bin/bench" "$work/$m.onnx" "${opt_p[@]}" --test-data "$work/$m-testdata" --iters 200 --name "$m" \
        --precision "$p" "${seed[@]}" > "$out/bench_${m}_$p.log" 2>&1
      grep -E "^(  check|  time|  achieved|RESULT)|error" "$out/bench_${m}_$p.log"
    done
  fi
done
if has peers; then
  echo "== peers (PyTorch eager, torch.compile)"
  pp=${precisions[*]}
  (cd "$B/tools/device" && python3 peers.py --precisions "${pp// /,}" ${PEER_MODES:+--modes "$PEER_MODES"} \
     "${models[@]}" 2>&1 | grep -v -i warn | tee "$out/peers.log" | tail -12)
fi

# One table: our runtime (original, optimized) and the peers, in ms.
echo
PRECISIONS="${precisions[*]}" python3 - "$out" "${models[@]}" <<'PY'
import sys, os, re, math
out, models = sys.argv[1], sys.argv[2:]
ours, peers, predicted = {}, {}, {}
for m in models:
    p = os.path.join(out, f"bench_{m}.log")
    if os.path.exists(p):
        for line in open(p):
            if line.startswith("RESULT "):
                f = line.split(); ours[f[1]] = (float(f[2]), float(f[3]), f[4], f[5], f[6])
            if line.startswith("PREDICTED "):
                f = line.split(); predicted[f[1]] = (float(f[2]), float(f[3]))
def number(x):
    try: return float(x)
    except ValueError: return float('nan')
by_precision = {}  # (model, precision) -> (eager, compile, reduce-overhead)
p = os.path.join(out, "peers.log")
if os.path.exists(p):
    for line in open(p):
        f = [x.strip() for x in line.split("|")]
        if len(f) == 5 and f[0] in models:
            by_precision[(f[0], f[1])] = tuple(number(x) for x in f[2:])
for m in models:
    if (m, "fp32") in by_precision: peers[m] = by_precision[(m, "fp32")]
print(f"{'model':16} | {'tgr orig':>8} | {'tgr opt':>8} | {'speedup':>7} | {'pred orig':>9} | {'pred opt':>8} | {'pred spd':>8} | {'ops':>9} | {'eager':>7} | {'compile':>7} | {'reduce-oh':>9} | {'vs eager':>8} | {'vs r-o':>7} | check")
for m in models:
    o = ours.get(m); pe = peers.get(m)
    if not o and not pe: continue
    orig, opt, ob, oa, ok = o if o else (float('nan'),) * 2 + ('-', '-', '-')
    e, c, r = pe if pe else (float('nan'),) * 3
    po, pp = predicted.get(m, (float('nan'),) * 2)
    print(f"{m:16} | {orig:8.3f} | {opt:8.3f} | {orig/opt:6.3f}x | {po:9.3f} | {pp:8.3f} | {po/pp:7.3f}x | {ob:>4}/{oa:<4} | {e:7.3f} | {c:7.3f} | {r:9.3f} | {e/opt:7.2f}x | {r/opt:6.2f}x | {ok}")
# Per precision: our optimized model (the original where none) against reduce-overhead at the same precision,
# the achieved share of the bf16 tensor-core peak and of the memory bandwidth, and the geometric mean.
for prec in os.environ.get("PRECISIONS", "fp32").split():
    rows, ratios = [], []
    for m in models:
        log = os.path.join(out, f"bench_{m}.log" if prec == "fp32" else f"bench_{m}_{prec}.log")
        res, ach = None, None
        if os.path.exists(log):
            for line in open(log):
                f = line.split()
                if line.startswith("RESULT "): res = (float(f[2]), float(f[3]), f[6])
                if line.startswith("ACHIEVED "): ach = (float(f[4]), float(f[5]))  # the last: the optimized model
        r = by_precision.get((m, prec), (float('nan'),) * 3)[2]
        if not res and math.isnan(r): continue
        orig, opt, ok = res if res else (float('nan'), float('nan'), '-')
        ratio = r / opt if res else float('nan')
        if ratio == ratio and ratio > 0: ratios.append(ratio)
        tc, bw = ach if ach else (float('nan'),) * 2
        rows.append(f"{m:16} | {prec:4} | {orig:8.3f} | {opt:8.3f} | {r:9.3f} | {ratio:7.3f}x | {100*tc:6.2f}% | {100*bw:6.1f}% | {ok}")
    if not rows: continue
    print(f"\n{'model':16} | prec | {'tgr orig':>8} | {'tgr opt':>8} | {'reduce-oh':>9} | {'vs r-o':>8} | {'bf16 TC':>7} | {'memory':>7} | check")
    print("\n".join(rows))
    if ratios:
        print(f"{'geomean':16} | {prec:4} | vs reduce-overhead {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}x over {len(ratios)} models")
PY
