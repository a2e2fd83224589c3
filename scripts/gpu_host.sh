#!/usr/bin/env bash
# The whole-host GPU jobs, one part per command, each writing under $OUT (default artifacts/gpu-host):
#   scripts/gpu_host.sh nightly [MINUTES]  the nightly job in fast bf16 on every core and GPU (default 8 minutes)
#   scripts/gpu_host.sh bench              P1 examples a second of the host: one worker per core, n <= 64, fast bf16
#   scripts/gpu_host.sh mutants            the mutation catalogue in fast bf16 on cuda, 16 jobs (one per core)
#   scripts/gpu_host.sh matrix             every test against every mutant (fast bf16, cuda), then the measured matrix
# Run from the repository root. Packages the GPU image lacks come from .whl/ when it is there.
set -uo pipefail
part=${1:?usage: scripts/gpu_host.sh nightly [MINUTES]|bench|mutants|matrix}
OUT=${OUT:-artifacts/gpu-host}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
jobs=$(nproc)
nvidia-smi --query-gpu=name,memory.total --format=csv >"$OUT/gpu.csv" 2>&1
case "$part" in
  nightly)
    python3 -m nightly --minutes "${2:-8}" --device cuda --numerics fast --out "$OUT/nightly" --pack ;;
  bench)
    python3 -m pytest -q -s -p no:cacheprovider benchmarks/bench_p1_host.py --device cuda --max-n 64 \
      --numerics fast --benchmark-json "$OUT/p1-host.json" ;;
  mutants)
    python3 -m mutants.run --numerics fast --dtype bfloat16 --device cuda --jobs "$jobs" \
      --json "$OUT/mutants-fast-bf16-cuda.json" --markdown "$OUT/mutants-fast-bf16-cuda.md" ;;
  matrix)
    python3 -m mutants.run --numerics fast --dtype bfloat16 --device cuda --jobs "$jobs" --keep-going \
      --json "$OUT/mutants-keep-going.json" --markdown "$OUT/mutants-keep-going.md"
    python3 -m mutants.matrix "$OUT/mutants-keep-going.json" --out "$OUT/coverage-matrix.md" ;;
  *)
    echo "unknown part $part"; exit 2 ;;
esac
