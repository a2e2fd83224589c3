#!/usr/bin/env bash
# A second, shorter GPU command: the fast-numerics drift measurement at two model sizes, and two
# more minutes of P1 in fast bf16 from eight processes. Results packed into $OUT/results-more.tgz.
set -uo pipefail
OUT=${OUT:-artifacts/gpu}; res="$OUT/res"; mkdir -p "$res"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
for i in 0 1 2 3 4 5 6 7; do
  python3 -m nightly --minutes 2 --workers 0 --device cuda --numerics fast --shard $i/8 --shard-by seeds \
    --tests properties/step/test_p1_equivalence.py --out "$res/p1-more-$i" --database-dir "/tmp/db-$i" >"$res/p1-more-$i.log" 2>&1 &
done
python3 scripts/fast_drift.py --device cuda --dtype bfloat16 --worlds 200 --n 16 --out "$res/drift-small.json" | tail -12
python3 scripts/fast_drift.py --device cuda --dtype bfloat16 --worlds 12 --n 64 --hidden 1024 --vocab 32768 \
  --out "$res/drift-large.json" | tail -12
wait
tail -n 2 "$res"/p1-more-*.log
tar -czf "$OUT/results-more.tgz" -C "$OUT" res && rm -rf "$res"
