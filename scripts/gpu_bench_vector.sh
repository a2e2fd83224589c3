#!/usr/bin/env bash
# The fully batched bootstrap on one GPU, in one call of four to nine minutes (the host machine sets most of it):
#   1. exactness of the one-pass sampler on the device (tests/test_batch_sampling.py, the `gpu` tests:
#      its tokens, logprobs, noise and divisions against the per-row sampler's, bit for bit) and the
#      hand-built mixes against the fully batched step in fast float32 (tests/test_vector_step.py);
#   2. the bootstrap benchmarks, loop, batched step and fully batched step side by side for
#      n = 1..256, every fourth row sampled and every row greedy (benchmarks/bench_bootstrap.py);
#   3. the report: tables and plots (python -m benchmarks.report, into a copy of docs/benchmarks.md)
#      and the n = 64 targets (python -m benchmarks.vector_summary, also into a copy of
#      docs/vector-step.md), printed at the end.
# Usage: OUT=/some/dir scripts/gpu_bench_vector.sh   (default OUT=artifacts/gpu-vector; DEV=cpu
# rehearses it without a GPU, with the CPU's small model). Everything goes under $OUT: logs/*.log,
# bench-mixed.json, bench-greedy.json, report/ (benchmarks.md, vector-step.md, plots), summary.md.
set -u
OUT=${OUT:-artifacts/gpu-vector}
dev=${DEV:-cuda}
logs="$OUT/logs"
mkdir -p "$logs" "$OUT/report"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then  # packages the GPU image lacks (xgrammar and its needs)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$logs/wheels.log" 2>&1 || echo "wheel install failed: see $logs/wheels.log"
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
py=${PY:-python3}  # PY=.venv/bin/python rehearses it in a virtual environment
started=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$logs/gpu.csv" 2>&1
$py -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no cuda")' \
  >"$logs/versions.txt" 2>&1

part() {  # name, seconds, command...: run with a time limit, log to $logs/name.log, print its last lines. The
  # limit interrupts (SIGINT) rather than kills: pytest then ends its session, and pytest-benchmark still writes
  # the JSON of the cells that finished, so a cut-short sweep reports the sizes it reached.
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout -s INT -k 30 "$limit" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc, $((SECONDS - t0)) s (log $logs/$name.log)"
  tail -n 3 "$logs/$name.log"
}

# 1. Exactness on the device and the mixes in fast numerics (about 40 s; SKIP_CHECKS=1 leaves them out).
[ "${SKIP_CHECKS:-0}" = 1 ] || part exactness 60 $py -m pytest -q -p no:cacheprovider tests/test_batch_sampling.py -m gpu --hypothesis-profile ci
# In fast float32: the paged kernel's other rounding forces more bf16 decisions than the near-tie budget
# allows (docs/vector-step.md, "The paged kernel and the near-tie budget"; 2 of 12 and 2 of 20 here).
[ "${SKIP_CHECKS:-0}" = 1 ] || part mixes-fast 60 $py -m pytest -q -p no:cacheprovider tests/test_vector_step.py -k "matches_reference" \
  --device "$dev" --numerics fast --dtype float32

# 2. Benchmarks (2 to 4 minutes a mix: the loop at n = 128 and 256 takes most of it, more on a slow host).
for mix in mixed greedy; do
  part "bench-$mix" "${BENCH_S:-240}" $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py --device "$dev" \
    --bench-mix "$mix" --bench-budget 0.4 --benchmark-json "$OUT/bench-$mix.json"
done

# 3. Report and targets.
cp docs/benchmarks.md docs/vector-step.md "$OUT/report/" 2>/dev/null
for mix in mixed greedy; do
  [ -s "$OUT/bench-$mix.json" ] && part "report-$mix" 60 $py -m benchmarks.report "$OUT/bench-$mix.json" --out "$OUT/report"
done
jsons=$(find "$OUT" -maxdepth 1 -name "bench-*.json" -size +0 | sort)
if [ -n "$jsons" ]; then
  # shellcheck disable=SC2086
  $py -m benchmarks.vector_summary $jsons --n 64 --doc "$OUT/report/vector-step.md" >"$OUT/summary.md" 2>"$logs/summary.log"
  echo "== n = 64 against the targets ($OUT/summary.md):"
  cat "$OUT/summary.md"
fi
echo "== done in $((SECONDS - started)) s; results under $OUT"
