#!/usr/bin/env bash
# One GPU session for the oracles on a step's own draws (docs/samplers.md, docs/wrong-steps.md), its
# results under $OUT (default artifacts/gpu): the main job on the GPU, the sampling properties on the
# GPU (their worlds draw the 129280-id vocabulary there) in exact float32 and fast bf16, and the
# oracles' alarm rates on the host's cores (false alarms on correct steps, power on the wrong ones).
# Usage: [RATES=1] bash jobs/own_draws_gpu.sh   (with the wheels the host lacks in .whl)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-artifacts/gpu}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
stage() {  # stage NAME LIMIT_S COMMAND...: the command's output in $OUT/NAME.log, its time and exit code in $OUT/stages.txt
  local name=$1 limit=$2 t=$SECONDS; shift 2
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  echo "$name: rc $? in $((SECONDS - t)) s" | tee -a "$OUT/stages.txt"
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$OUT/gpu.csv" 2>&1
python3 -c 'import torch, hypothesis, xgrammar; print(torch.__version__, torch.cuda.get_device_name(0), hypothesis.__version__, xgrammar.__version__)' >>"$OUT/gpu.csv" 2>&1
stage main-job 150 python3 -m properties.run.verify --profile dev
stage sampling-exact 110 python3 -m pytest -q -p no:cacheprovider properties/sampling \
  properties/self_tests/test_reference_sampler.py --device cuda --hypothesis-profile ci -n 8
stage sampling-fast-bf16 110 python3 -m pytest -q -p no:cacheprovider properties/sampling --device cuda \
  --numerics fast --dtype bfloat16 --impl vector-torch --hypothesis-profile ci -n 8
if [ "${RATES:-0}" = 1 ]; then  # the alarm rates on the host's cores (they need no GPU)
stage rates-correct 110 python3 -m properties.sampling.draw_rates --cases 480 --jobs 16 \
  --impl literal --impl vector --impl vector-torch
W=mutants.wrong_steps
stage rates-wrong 80 python3 -m properties.sampling.draw_rates --cases 160 --jobs 16 --impl $W.never_samples:step \
  --impl $W.temperature_one:step --impl $W.position_ignored:step --impl $W.seeds_truncated:step \
  --impl $W.rows_mixed:step --impl $W.batch_position_noise:step
fi
tail -n 40 "$OUT"/*.log | tail -n 200
cat "$OUT/stages.txt"
