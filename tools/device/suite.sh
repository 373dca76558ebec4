#!/usr/bin/env bash
# On the GPU machine: gpu_bench.sh's stages over many models, spread over
# consecutive `run` calls of at most 10 minutes each. The bundle travels as
# BUNDLE (a .tar.xz of tools/device/make_gpu_bundle.sh's folder) and is
# unpacked once into /tmp; each model's logs and files stay in /tmp while the
# machine stays warm, so the next call goes on with the models not yet done.
# A model is started only while the call's deadline (DEADLINE seconds from the
# start, default 480) has not passed, and the call ends with one table over
# every model done so far and all logs in $OUT/logs.tar.xz.
#
#   BUNDLE=devgpu/bundle.tar.xz bash tools/device/suite.sh resnet50 googlenet ...
#   STAGES="tests export calibrate optimize bench" ...   (gpu_bench.sh's stages; "tests" runs once)
#   SEAMS="--channels 32,128 --sizes 14,28" ...           (bench_seams first, with these flags)
#   RULES_DB=rules_generated.db ...   (a database of the bundle taken as its rules.db and shipped rules,
#                                     so that two rule sets run side by side: tools/device/lanes.sh)
set -uo pipefail
start=$SECONDS
deadline=$((start + ${DEADLINE:-480}))
bundle=${BUNDLE:?set BUNDLE to the bundle .tar.xz}
root=${SUITE_ROOT:-/tmp/tgr-suite}  # the unpacked bundle, the work files and logs, kept between calls
mkdir -p "$root/logs"
if [[ ! -d $root/bundle ]]; then
  mkdir -p "$root/unpack" && tar -xJf "$bundle" -C "$root/unpack" && mv "$root/unpack"/* "$root/bundle" ||
    { echo "suite: could not unpack $bundle"; exit 1; }
fi
B=$root/bundle
# The bundle's own rules.db, kept as unpacked: RULES_DB replaces rules.db.
[[ -f $B/rules.db && ! -f $B/rules.bundle.db ]] && cp "$B/rules.db" "$B/rules.bundle.db"
if [[ -n ${RULES_DB:-} ]]; then
  rules_src=$B/$RULES_DB
  [[ $RULES_DB == rules.db ]] && rules_src=$B/rules.bundle.db
  [[ -f $rules_src ]] || { echo "suite: RULES_DB '$RULES_DB' is not a file of the bundle"; exit 1; }
  cmp -s "$rules_src" "$B/rules.db" || cp "$rules_src" "$B/rules.db"
  mkdir -p "$B/share/tgr" && cp "$rules_src" "$B/share/tgr/default_rules.db"
fi
out=${OUT:-/tmp/tgr-suite-out}
mkdir -p "$out"
# gpu_bench.sh with stages $1 over models $2...: logs and work files in $root.
bench_stages() {
  local stages=$1
  shift
  STAGES="$stages" OUT=$root/logs WORK=$root/work bash "$B/tools/device/gpu_bench.sh" "$@"
}
pack_logs() { tar -cJf "$out/logs.tar.xz" -C "$root" logs; }
stages=${STAGES:-export calibrate optimize bench}
if [[ " $stages " == *" tests "* && ! -f $root/tests.done ]]; then
  bench_stages tests none | grep -v "^model\|not exported"
  touch "$root/tests.done"
fi
stages=${stages//tests/}
if [[ -n ${SEAMS:-} && ! -f $root/seams.done ]]; then
  echo "== bench_seams $SEAMS"
  LD_LIBRARY_PATH="$B/lib" "$B/bin/bench_seams" $SEAMS 2>&1 | tee "$root/logs/bench_seams.log"
  touch "$root/seams.done"
fi
for m in "$@"; do
  [[ -f $root/$m.done ]] && continue
  if ((SECONDS > deadline)); then
    echo "suite: deadline reached (${DEADLINE:-480} s); not started: $m and the models after it"
    break
  fi
  echo "== $m (at $((SECONDS - start)) s)"
  bench_stages "$stages" "$m" | grep -v "^model\|^$"
  touch "$root/$m.done"
  pack_logs  # kept if a later model runs past the call's limit
done
echo
done_models=()
for m in "$@"; do [[ -f $root/$m.done ]] && done_models+=("$m"); done
((${#done_models[@]})) && bench_stages none "${done_models[@]}" | grep -v "not exported"
pack_logs
echo "suite: $((SECONDS - start)) s"
