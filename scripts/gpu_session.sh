#!/usr/bin/env bash
# The GPU equivalence session in one ten-minute command (`scripts/gpu_session.sh verify`): the
# bootstrap benchmarks alone first, then side by side on the one GPU: the nightly job for five
# minutes in fast bf16, GPU unit tests, the hand-built mixes and the properties in exact float32 and
# fast bf16, and P1 in fast bf16 from eight processes until the time is spent.
# `scripts/gpu_session.sh nightly` runs the nightly job alone.
# Results go under $OUT (default artifacts/gpu), packed into one results.tgz, with a summary printed.
set -uo pipefail
part=${1:?usage: scripts/gpu_session.sh verify|nightly}
OUT=${OUT:-artifacts/gpu}
res="$OUT/res"
mkdir -p "$res"
if compgen -G ".whl/*.whl" >/dev/null; then  # packages the GPU image lacks (xgrammar and its needs)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
py=python3
dev=${DEV:-cuda}  # DEV=cpu rehearses the session on a machine without a GPU
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv >"$res/gpu.csv" 2>&1
$py -c 'import torch, hypothesis, xgrammar; print(torch.__version__, torch.cuda.get_device_name(0), hypothesis.__version__)' | tee "$res/versions.txt"

run() {  # name, command...: log to $res/name.log, print its last lines
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$res/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc, $((SECONDS - t0)) s"; tail -n 4 "$res/$name.log"
}

if [ "$part" = verify ]; then
  run bench $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py --device $dev --bench-budget 1 \
    --benchmark-json "$res/bench-gpu.json"
  run bench-greedy $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py --device $dev --bench-budget 1 \
    --bench-mix greedy --benchmark-json "$res/bench-gpu-greedy.json"
  run nightly $py -m nightly --minutes 5 --device $dev --numerics fast --out "$res/nightly" &
  run gpu-tests $py -m pytest -q -p no:cacheprovider tests -m gpu
  for num in exact fast; do
    MTP_VERIFY_SUMMARY_JSON="$res/mixes-$num.json" run "mixes-$num" $py -m pytest -q -p no:cacheprovider \
      -p properties.summary_plugin tests/test_batched_step_mixes.py --device $dev --numerics $num
  done
  MTP_VERIFY_SUMMARY_JSON="$res/properties-exact.json" run properties-exact $py -m pytest -q -p no:cacheprovider \
    -p properties.summary_plugin properties --device $dev --numerics exact --hypothesis-profile ci &
  MTP_VERIFY_SUMMARY_JSON="$res/properties-fast.json" run properties-fast $py -m pytest -q -p no:cacheprovider \
    -p properties.summary_plugin properties --device $dev --numerics fast --hypothesis-profile ci &
  minutes=$(( (500 - SECONDS) / 6 ))  # tenths of a minute left for the P1 rounds
  [ "$minutes" -ge 10 ] || minutes=10
  minutes="$((minutes / 10)).$((minutes % 10))"
  for i in 0 1 2 3 4 5 6 7; do  # P1 in fast bf16 from 8 processes, each with its own seeds
    run "p1-fast-$i" $py -m nightly --minutes "$minutes" --workers 0 --device $dev --numerics fast \
      --shard $i/8 --shard-by seeds --tests properties/test_p1_equivalence.py --out "$res/p1-fast-$i" \
      --database-dir "/tmp/db-$i" &
  done
  wait
elif [ "$part" = nightly ]; then
  run nightly timeout 560 $py -m nightly --minutes 5 --device $dev --numerics fast --out "$res/nightly"
else
  echo "unknown part $part"; exit 2
fi
tar -czf "$OUT/results-$part.tgz" -C "$OUT" res && rm -rf "$res"
echo "packed $OUT/results-$part.tgz"
