#!/usr/bin/env bash
# The GPU session in two ten-minute commands, each using the whole host (every core, the one GPU):
#   scripts/gpu_session.sh verify   the measured rounding of fast bf16 (scripts/fast_rounding.py), the
#                                   nightly job for 5 minutes in fast bf16 at the GPU mix size (examples,
#                                   false failures, forced decisions), the P1 host throughput benchmark,
#                                   P9 in fast bf16
#   scripts/gpu_session.sh reach    the reference on the CPU (fast numerics): its tests on the GPU, the rounding
#                                   against the GPU's numbers, P1 host throughput with it and without, and a
#                                   nightly of P1, P4 and P6 with it for the rest of the ten minutes
#   scripts/gpu_session.sh finish   the fully batched step's benchmarks (scripts/gpu_bench_vector.sh), then a
#                                   nightly of P1, P4 and P6 (reference on the GPU) for the rest of the call
#   scripts/gpu_session.sh mutants  the mutation catalogue in fast bf16 on cuda, one job per core sharing the GPU
#                                   through MPS, at n <= MAX_N (16: the whole suite at 64 takes far past one call)
#   scripts/gpu_session.sh bench    the GPU unit tests, the three-way bootstrap benchmarks
#   scripts/gpu_session.sh mps      where a P1 example's time goes, the measured rounding of fast bf16, P1 host
#                                   throughput with the workers sharing the GPU through CUDA MPS, then a nightly of
#                                   P1, P4 and P6 with --mps for the rest
#   scripts/gpu_session.sh probe    where a P1 example's time goes (scripts/p1_profile.py), and P1 host throughput
#                                   with one CUDA context per worker and with the workers sharing the GPU
#                                   through CUDA MPS (started for the run, stopped after it)
#   scripts/gpu_session.sh profile  where the time of one bootstrap step goes (scripts/step_profile.py: the fully
#                                   batched and the literal step at n = 64, greedy and mixed) and of one P1
#                                   example (scripts/p1_profile.py with the Python profile)
#   scripts/gpu_session.sh window   P1 host throughput over a time window (workers sharing the GPU through MPS), the
#                                   fully batched step's profile at n = 64, then a nightly of P1, P4 and P6 against
#                                   the fully batched step with --mps for the rest
#   scripts/gpu_session.sh graphs   the GPU unit tests (graph replays against eager passes among them), the fully
#                                   batched step's profile at n = 64 with its passes as CUDA graphs and without,
#                                   then P1 and P4 against it in fast bf16 for the rest of GRAPHS_S seconds
#   scripts/gpu_session.sh static   the GPU unit tests, the fully batched step's profile at n = 64 (graphs), its
#                                   benchmarks against the loop and the literal step (scripts/gpu_bench_vector.sh),
#                                   then P1 and P4 against it in fast bf16 for the rest of GRAPHS_S seconds
#   scripts/gpu_session.sh check    the GPU tests of the static passes, the paged kernel and the graphed sampler, then
#                                   P1 and P4 against the fully batched step for the rest of GRAPHS_S seconds
#   scripts/gpu_session.sh host     the GPU tests of the static passes, the paged kernel and the graphed sampler
#                                   (twice), the near-ties P1 and P3 force against the fully batched step with its
#                                   paged kernel and with gathered attention, in fast bf16 and fast float32, the
#                                   host time of the step's pieces (scripts/step_timers.py), its profile at n = 64,
#                                   and the three-way benchmarks at n = 64
#   scripts/gpu_session.sh final    the paged kernel's time per tile width, the GPU tests of the kernel, the static
#                                   passes and the graphed sampler, the near-ties P1 and P3 force against the fully
#                                   batched step (its paged kernel in fast bf16 and float32), and at n = 64 the
#                                   host time of its pieces, its profile and the three-way benchmarks
#   scripts/gpu_session.sh kernel   the paged kernel's time per tile, warp count and chunks per row at 8, 64 and 256
#                                   rows, the GPU tests of the kernel, the static passes and the graphed sampler, the
#                                   near-ties P1 and P3 force against the fully batched step (paged kernel, fast
#                                   float32), and at n = 64 the host time of its pieces, its profile and the benchmark
#   scripts/gpu_session.sh closing  the paged kernel's GPU tests, the step's pieces' host time at n = 64, then the fully
#                                   batched step's benchmarks against the loop and the literal step for n = 1..256
#                                   (scripts/gpu_bench_vector.sh; about eight minutes on a slow host)
#   scripts/gpu_session.sh last     the hand-built mixes against the fully batched step in fast float32 (its paged
#                                   kernel), the host time of a staged copy's parts, the three-way benchmark at n = 64
#   scripts/gpu_session.sh kprofile the fully batched step's profile at n = 64 (its kernels' device time), greedy and
#                                   mixed, and the paged kernel's time per tile, warps and chunks at 64 rows
#   scripts/gpu_session.sh stages   the paged kernel's time per warp count, chunks and pipelining depth at 64 and 256 rows
#   scripts/gpu_session.sh copies   each statement of the step's staged copies timed inside the step (greedy and mixed,
#                                   n = 64) beside a staged copy alone
#   scripts/gpu_session.sh vmutants the GPU tests of the static passes, the paged kernel and the graphed sampler, then
#                                   the fully batched step's catalogue in fast float32 on cuda, its paged kernel in
#                                   play (jobs sharing the GPU through MPS) at n <= MAX_N
#   scripts/gpu_session.sh prefetch the GPU tests of the paged kernel, the noise kernel, the static passes and the
#                                   graphed sampler, the hand-built mixes in fast float32, the paged kernel's time with
#                                   and without loading ahead (64 and 256 rows), then at n = 64 the host time of the
#                                   step's pieces with and without it and the step's profile (its kernels' device time)
#   scripts/gpu_session.sh sweep    the paged kernel's GPU tests, the three-way benchmarks for n = 1..256, greedy and mixed, and their report
#                                   (scripts/gpu_bench_vector.sh without its checks, which `prefetch` runs)
#   scripts/gpu_session.sh settle   the fully batched step's profile at n = 64 (greedy, mixed) and the near-ties P1 and
#                                   P3 force against it (paged kernel, fast float32)
#   scripts/gpu_session.sh resweep the hand-built mixes in fast float32, the fully batched step alone at n = 64 (greedy,
#                                   mixed), the host time of its pieces at n = 64, then the three-way n = 1..256 sweep
#   scripts/gpu_session.sh pack     the GPU tests of the static passes (their integer inputs packed with struct), the
#                                   hand-built mixes in fast float32 and the host time of the step's pieces at n = 64
#   scripts/gpu_session.sh repeat   the fully batched step alone at n = 64, greedy and mixed, in REPEATS (3) separate
#                                   benchmark processes and as many timer processes: how far one host's medians move
#   scripts/gpu_session.sh where    at n = 64 the host time of the fully batched step's pieces and its profile (greedy,
#                                   mixed), then its catalogue in fast float32 on cuda (as `vmutants`, without its tests)
#   scripts/gpu_session.sh ahead    the propose launched ahead: the GPU tests of the static passes, its property in fast
#                                   float32 and exact float32, the hand-built mixes in fast float32, then at n = 64
#                                   the host time of the step's pieces with it and without, the step's profile, and
#                                   the benchmark of the fully batched step and of the loop
#   scripts/gpu_session.sh mirror   the block tables kept on the device: the GPU tests of the static passes, the paged
#                                   kernel, the graphed sampler and the mirror, the propose ahead's property and the
#                                   model carry-over property in fast and exact float32, the hand-built mixes in fast
#                                   float32, at n = 64 the step's timeline and its pieces' host time (with the propose
#                                   ahead and without), then the fully batched step at n = 64, 128, 256 and the loop
#                                   at 64, greedy and mixed
#   scripts/gpu_session.sh mirror2  the GPU tests of the static passes, the paged kernel and the graphed sampler, the
#                                   mirror's and the row classes' tests, the paged kernel in Triton's interpreter, at
#                                   n = 64 the three-way benchmark and the step's timeline, greedy and mixed, then the
#                                   fully batched step's catalogue in fast float32 on cuda (as `vmutants`) for the
#                                   rest of BUDGET_S (570)
#   scripts/gpu_session.sh vcheck   the GPU tests of the static passes, the paged kernel and the graphed sampler, the
#                                   fully batched step's catalogue in fast float32 on cuda (as `vmutants`, for up to
#                                   330 s), then P1 and P4 against it for the rest of the call
#   scripts/gpu_session.sh closeout the propose launched ahead's property in fast float32 (its decode made late, so a
#                                   pass that does not wait for it fails), once more with that bug planted (it must
#                                   fail), the hand-built mixes in fast float32, the
#                                   P1 and P4 against the fully batched step (fast float32, paged kernel) for 48 s, the
#                                   host time of the step's pieces at n = 64 with the propose ahead and without, then
#                                   the three-way n = 1..256 sweep for the rest of BUDGET_S (585) seconds
#   scripts/gpu_session.sh targets  the GPU tests of the static passes, the paged kernel and the graphed sampler, the
#                                   paged kernel in Triton's interpreter (its whole error kept), the propose ahead's
#                                   properties (launched by the sampling and by the decode) and the step's launch
#                                   tests in fast float32 on cuda, at n = 64 the
#                                   three-way benchmark greedy and mixed (every round with its host probe) and the
#                                   step's timeline (greedy also with the propose launched by the sampling, and
#                                   the pieces' timers both ways), the fully batched step's benchmark once more
#                                   on two pinned cores, then its catalogue in fast float32 on cuda (as
#                                   `vmutants`) for the rest of BUDGET_S (570)
# Results go under $OUT (default artifacts/gpu), packed into results-PART.tgz, a summary printed.
# DEV=cpu rehearses a part on a machine without a GPU; MINUTES shortens the nightly.
set -uo pipefail
part=${1:?usage: scripts/gpu_session.sh verify|reach|finish|mutants|bench|probe|mps|profile|window|graphs|static|check|vmutants|host|final|kernel|closing|last|kprofile|stages|copies|prefetch|sweep|settle|where|resweep|pack|repeat|ahead|vcheck|closeout|mirror|mirror2|targets}
OUT=${OUT:-artifacts/gpu}
res="$OUT/res-$part"
mkdir -p "$res"
if compgen -G ".whl/*.whl" >/dev/null; then  # packages the GPU image lacks (xgrammar and its needs)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$res/wheels.log" 2>&1 || { echo "wheel install failed"; cat "$res/wheels.log"; exit 1; }
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
py=${PY:-python3}
dev=${DEV:-cuda}
jobs=$(nproc)
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv >"$res/gpu.csv" 2>&1
$py -c 'import torch, hypothesis; print(torch.__version__, hypothesis.__version__, torch.cuda.is_available() and torch.cuda.get_device_name(0))' \
  | tee "$res/versions.txt"

run() {  # name, seconds, command...: time-limited, logged to $res/name.log, its last lines printed
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$res/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc, $((SECONDS - t0)) s"
  tail -n 6 "$res/$name.log"
}

vector_p1p4() {  # total seconds of the part: P1 and P4 against the fully batched step for what is left of them,
  # half in fast bf16 with gathered attention (the reference's kernel: the paged kernel's other rounding alone
  # forces over 1 % of bf16 decisions), half in fast float32 with the paged kernel
  local half=$(( ($1 - SECONDS - 30) / 2 ))
  local tests="properties/step/test_p1_equivalence.py properties/step/test_p4_faults.py properties/step/test_p4_argmax_faults.py"
  # shellcheck disable=SC2086
  run p1p4-vector-gathered-bf16 $((half + 10)) $py -m nightly --minutes "$(python3 -c "print(max($half, 30) / 60)")" \
    --device "$dev" --numerics fast --impl batched.vector.gathered:step_mtp_bootstrap_vectorized_gathered \
    --out "$res/nightly-vector-gathered-bf16" --pack --tests $tests
  # shellcheck disable=SC2086
  MTP_VERIFY_DTYPE=float32 run p1p4-vector-paged-f32 $((half + 10)) $py -m nightly \
    --minutes "$(python3 -c "print(max($half, 30) / 60)")" --device "$dev" --numerics fast \
    --impl batched.vector.step:step_mtp_bootstrap_vectorized --out "$res/nightly-vector-paged-f32" --pack --tests $tests
}

vector_mutants() {  # seconds into the part by which it ends, seconds per mutant: the fully batched step's catalogue
  # in fast float32 on cuda, its paged kernel in play, one job per core sharing the GPU through MPS, at n <= MAX_N
  run mutants-vector-fast-f32 $(( ${BUDGET_S:-$1} - SECONDS )) $py -m mutants.run --numerics fast --dtype float32 \
    --device "$dev" --jobs "$jobs" --mps --timeout "${SUITE_TIMEOUT:-$2}" --max-n "${MAX_N:-16}" \
    --impl batched.vector.step:step_mtp_bootstrap_vectorized \
    --json "$res/mutants-vector-fast-f32-cuda.json" --markdown "$res/mutants-vector-fast-f32-cuda.md"
}

nearties() {  # module:function in batched, dtype, seconds: the near-ties P1 and P3 force against that step
  local name="nearties-${1%%:*}-$2"
  MTP_VERIFY_SUMMARY_JSON="$res/$name.json" run "$name" "$3" $py -m pytest -q -p no:cacheprovider \
    -p properties.summary_plugin properties/step/test_p1_equivalence.py properties/step/test_p3_calls.py \
    --device "$dev" --numerics fast --dtype "$2" --max-n 16 --impl "batched.$1"
}

step_figures() {  # mix, seconds for the benchmark: the fully batched step at n = 64, its pieces' host time,
  # its profile (the device's kernels included) and the three-way benchmark
  run "timers-$1" 60 $py scripts/step_timers.py --device "$dev" --mix "$1" --n 64 --out "$res/timers-$1.json"
  run "step-vector-$1" 60 $py scripts/step_profile.py --device "$dev" --impl vector --mix "$1" --n 64 \
    --steps 30 --rows 40 --out "$res/step-vector-$1.json"
  run "bench-$1" "$2" $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py --device "$dev" \
    --bench-mix "$1" --bench-sizes 64 --bench-budget 0.5 --benchmark-json "$res/bench-$1-64.json"
}

if [ "$part" = verify ]; then
  run rounding 70 $py scripts/fast_rounding.py --device "$dev" --dtype bfloat16 --examples "${ROUNDING_EXAMPLES:-30}" \
    --max-n 64 --out "$res/rounding-bf16.json"
  run nightly 375 $py -m nightly --minutes "${MINUTES:-5}" --device "$dev" --numerics fast --out "$res/nightly" --pack
  MTP_BENCH_HOST_EXAMPLES=${HOST_EXAMPLES:-6} run p1-host 70 $py -m pytest -q -s -p no:cacheprovider \
    benchmarks/bench_p1_host.py --device "$dev" --max-n 64 --numerics fast --benchmark-json "$res/p1-host.json"
  run p9-fast 45 $py -m properties.generations.figures --device "$dev" --numerics fast --dtype bfloat16 --minutes 0.5
elif [ "$part" = reach ]; then  # the reference on the CPU: its tests on the GPU, rounding, throughput, nightly
  run cross-tests 90 $py -m pytest -q -p no:cacheprovider tests/test_reference_device.py
  run rounding-cross 80 $py scripts/fast_rounding.py --device "$dev" --reference-device cpu --dtype bfloat16 \
    --examples "${ROUNDING_EXAMPLES:-40}" --max-n 64 --out "$res/rounding-bf16-cpu-reference.json"
  MTP_VERIFY_REFERENCE_DEVICE=cpu MTP_BENCH_HOST_EXAMPLES=${HOST_EXAMPLES:-8} run p1-host-cross 100 \
    $py -m pytest -q -s -p no:cacheprovider benchmarks/bench_p1_host.py --device "$dev" --max-n 64 --numerics fast \
    --benchmark-json "$res/p1-host-cpu-reference.json"
  MTP_BENCH_HOST_EXAMPLES=3 run p1-host-same 70 $py -m pytest -q -s -p no:cacheprovider benchmarks/bench_p1_host.py \
    --device "$dev" --max-n 64 --numerics fast --benchmark-json "$res/p1-host-same-device.json"
  left=$(( ${BUDGET_S:-560} - SECONDS - 50 ))
  run nightly-p1p4p6 $((left + 45)) $py -m nightly --minutes "$(python3 -c "print(max($left, 30) / 60)")" \
    --device "$dev" --numerics fast --reference-device cpu --out "$res/nightly" --pack \
    --tests properties/step/test_p1_equivalence.py properties/step/test_p4_faults.py properties/step/test_p4_argmax_faults.py \
    properties/step/test_p6_metamorphic.py
elif [ "$part" = finish ]; then  # the fully batched step's benchmarks, then P1/P4/P6 for the rest of the call
  OUT="$res/vector" run vector-bench 300 bash scripts/gpu_bench_vector.sh
  left=$(( ${BUDGET_S:-560} - SECONDS - 50 ))
  run nightly-p1p4p6 $((left + 45)) $py -m nightly --minutes "$(python3 -c "print(max($left, 30) / 60)")" \
    --device "$dev" --numerics fast --out "$res/nightly" --pack \
    --tests properties/step/test_p1_equivalence.py properties/step/test_p4_faults.py properties/step/test_p4_argmax_faults.py \
    properties/step/test_p6_metamorphic.py
elif [ "$part" = mps ]; then
  run profile 60 $py scripts/p1_profile.py --device "$dev" --dtype bfloat16 --max-n 64 --examples 16 \
    --python-rows 40 --out "$res/p1-profile.json"
  run rounding 80 $py scripts/fast_rounding.py --device "$dev" --dtype bfloat16 --examples "${ROUNDING_EXAMPLES:-40}" \
    --max-n 64 --out "$res/rounding-bf16.json"
  MTP_BENCH_HOST_MPS=1 MTP_BENCH_HOST_EXAMPLES=${HOST_EXAMPLES:-12} run p1-host-mps 80 $py -m pytest -q -s \
    -p no:cacheprovider benchmarks/bench_p1_host.py --device "$dev" --max-n 64 --numerics fast \
    --benchmark-json "$res/p1-host-mps.json"
  left=$(( ${BUDGET_S:-560} - SECONDS - 50 ))
  run nightly-p1p4p6 $((left + 45)) $py -m nightly --minutes "$(python3 -c "print(max($left, 30) / 60)")" \
    --device "$dev" --numerics fast --mps --out "$res/nightly" --pack \
    --tests properties/step/test_p1_equivalence.py properties/step/test_p4_faults.py properties/step/test_p4_argmax_faults.py \
    properties/step/test_p6_metamorphic.py
elif [ "$part" = profile ]; then
  for case in vector:greedy vector:mixed batched:greedy; do
    run "step-${case/:/-}" 90 $py scripts/step_profile.py --device "$dev" --impl "${case%:*}" --mix "${case#*:}" \
      --n "${STEP_N:-64}" --steps 20 --rows 40 --out "$res/step-${case/:/-}.json"
  done
  run p1-profile 90 $py scripts/p1_profile.py --device "$dev" --dtype bfloat16 --max-n 64 --examples 16 \
    --python-rows 40 --out "$res/p1-profile-python.json"
elif [ "$part" = window ]; then
  MTP_BENCH_HOST_MPS=1 MTP_BENCH_HOST_SECONDS=${WINDOW_S:-45} MTP_BENCH_HOST_EXAMPLES=400 run p1-host-window 150 \
    $py -m pytest -q -s -p no:cacheprovider benchmarks/bench_p1_host.py --device "$dev" --max-n 64 --numerics fast \
    --benchmark-json "$res/p1-host-window.json"
  for mix in greedy mixed; do
    run "step-vector-$mix" 90 $py scripts/step_profile.py --device "$dev" --impl vector --mix "$mix" --n 64 \
      --steps 20 --rows 40 --out "$res/step-vector-$mix.json"
  done
  left=$(( ${BUDGET_S:-560} - SECONDS - 50 ))
  run nightly-vector $((left + 45)) $py -m nightly --minutes "$(python3 -c "print(max($left, 30) / 60)")" \
    --device "$dev" --numerics fast --mps --impl batched.vector.gathered:step_mtp_bootstrap_vectorized_gathered \
    --out "$res/nightly-vector" --pack \
    --tests properties/step/test_p1_equivalence.py properties/step/test_p4_faults.py properties/step/test_p4_argmax_faults.py \
    properties/step/test_p6_metamorphic.py
elif [ "$part" = check ]; then
  run gpu-tests 80 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py tests/test_paged_attention.py \
    tests/test_batch_sampling.py -m gpu
  vector_p1p4 "${GRAPHS_S:-200}"
elif [ "$part" = host ]; then
  for i in 1 2; do
    run "gpu-tests-$i" 80 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py \
      tests/test_paged_attention.py tests/test_batch_sampling.py -m gpu
  done
  for variant in vector_step:step_mtp_bootstrap_vectorized vector_step_gathered:step_mtp_bootstrap_vectorized_gathered; do
    for dtype in bfloat16 float32; do nearties "$variant" "$dtype" 70; done
  done
  for mix in greedy mixed; do step_figures "$mix" 70; done
elif [ "$part" = final ]; then
  run paged-tiles 30 $py scripts/paged_tiles.py --out "$res/paged-tiles.json"
  run gpu-tests 80 $py -m pytest -q -p no:cacheprovider tests/test_paged_attention.py tests/test_static_passes.py \
    tests/test_batch_sampling.py -m gpu
  for dtype in bfloat16 float32; do nearties vector_step:step_mtp_bootstrap_vectorized "$dtype" 40; done
  for mix in greedy mixed; do step_figures "$mix" 80; done
elif [ "$part" = kernel ]; then
  run paged-tiles 120 $py scripts/paged_tiles.py --out "$res/paged-tiles.json"
  run gpu-tests 100 $py -m pytest -q -p no:cacheprovider tests/test_paged_attention.py tests/test_static_passes.py \
    tests/test_batch_sampling.py -m gpu
  nearties vector_step:step_mtp_bootstrap_vectorized float32 50
  for mix in greedy mixed; do step_figures "$mix" 60; done
elif [ "$part" = closing ]; then
  run paged-test 60 $py -m pytest -q -p no:cacheprovider tests/test_paged_attention.py -m gpu
  for mix in greedy mixed; do
    run "timers-$mix" 40 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --out "$res/timers-$mix.json"
  done
  OUT="$res/vector" run vector-bench $((590 - SECONDS)) bash scripts/gpu_bench_vector.sh
elif [ "$part" = last ]; then
  run mixes-fast-f32 60 $py -m pytest -q -p no:cacheprovider tests/test_vector_step.py -k matches_reference \
    --device "$dev" --numerics fast --dtype float32
  run staging 40 $py scripts/staging_copy.py --out "$res/staging.json"
  for mix in greedy mixed; do
    run "bench-$mix" 130 $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py --device "$dev" \
      --bench-mix "$mix" --bench-sizes 64 --bench-budget 0.5 --benchmark-json "$res/bench-$mix-64.json"
  done
elif [ "$part" = kprofile ]; then
  for mix in greedy mixed; do
    run "step-vector-$mix" 60 $py scripts/step_profile.py --device "$dev" --impl vector --mix "$mix" --n 64 \
      --steps 30 --rows 40 --out "$res/step-vector-$mix.json"
  done
  run paged-tiles 60 $py scripts/paged_tiles.py --rows 64 --out "$res/paged-tiles-64.json"
elif [ "$part" = stages ]; then
  run paged-stages 150 $py scripts/paged_tiles.py --rows 64 256 --calls 100 --stages 1 2 3 4 \
    --out "$res/paged-stages.json"
elif [ "$part" = copies ]; then
  run staging 40 $py scripts/staging_copy.py --out "$res/staging.json"
  for mix in greedy mixed; do
    run "timers-$mix" 40 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --staging-parts \
      --out "$res/timers-$mix.json"
  done
elif [ "$part" = prefetch ]; then
  run kernel-tests 100 $py -m pytest -q -p no:cacheprovider tests/test_paged_attention.py tests/test_noise_kernel.py -m gpu
  run gpu-tests 120 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py tests/test_batch_sampling.py -m gpu
  run mixes-fast-f32 70 $py -m pytest -q -p no:cacheprovider tests/test_vector_step.py -k matches_reference \
    --device "$dev" --numerics fast --dtype float32
  run paged-prefetch 100 $py scripts/paged_tiles.py --rows 64 256 --calls 100 --prefetch 0 1 \
    --out "$res/paged-prefetch.json"
  for mix in greedy mixed; do
    for pf in 0 1; do
      run "timers-$mix-prefetch-$pf" 45 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 \
        --prefetch "$pf" --out "$res/timers-$mix-prefetch-$pf.json"
    done
    run "step-vector-$mix" 50 $py scripts/step_profile.py --device "$dev" --impl vector --mix "$mix" --n 64 \
      --steps 30 --rows 40 --prefetch 1 --out "$res/step-vector-$mix.json"
  done
elif [ "$part" = sweep ]; then
  run kernel-tests 100 $py -m pytest -q -p no:cacheprovider tests/test_paged_attention.py -m gpu
  SKIP_CHECKS=1 BENCH_S=265 OUT="$res/vector" run vector-bench $((590 - SECONDS)) bash scripts/gpu_bench_vector.sh
elif [ "$part" = settle ]; then
  for mix in greedy mixed; do
    run "step-vector-$mix" 50 $py scripts/step_profile.py --device "$dev" --impl vector --mix "$mix" --n 64 \
      --steps 30 --rows 40 --out "$res/step-vector-$mix.json"
  done
  nearties vector_step:step_mtp_bootstrap_vectorized float32 60
elif [ "$part" = repeat ]; then
  for i in $(seq "${REPEATS:-3}"); do
    for mix in greedy mixed; do
      run "bench-$mix-64-$i" 60 $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py --device "$dev" \
        --bench-mix "$mix" --bench-sizes 64 --bench-budget 0.5 -k vector --benchmark-json "$res/bench-$mix-64-$i.json"
      run "timers-$mix-$i" 40 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 \
        --out "$res/timers-$mix-$i.json"
    done
  done
  $py - "$res" <<'PY' | tee "$res/repeat.md"
import glob, json, sys
res = sys.argv[1]
print("| mix | benchmark medians (ms) | timer medians (ms) |\n|---|---|---|")
for mix in ("greedy", "mixed"):
    bench = [json.load(open(f))["benchmarks"][0]["stats"]["median"] * 1e3 for f in sorted(glob.glob(f"{res}/bench-{mix}-64-*.json"))]
    timers = [json.load(open(f))["median_ms"] for f in sorted(glob.glob(f"{res}/timers-{mix}-*.json"))]
    print(f"| {mix} | {', '.join(f'{x:.2f}' for x in bench)} | {', '.join(f'{x:.2f}' for x in timers)} |")
PY
elif [ "$part" = pack ]; then
  run gpu-tests 90 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py tests/test_int_pack.py -m "gpu or not gpu"
  run mixes-fast-f32 50 $py -m pytest -q -p no:cacheprovider tests/test_vector_step.py -k matches_reference \
    --device "$dev" --numerics fast --dtype float32
  for mix in greedy mixed; do
    run "timers-$mix" 40 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --out "$res/timers-$mix.json"
  done
elif [ "$part" = resweep ]; then
  run mixes-fast-f32 70 $py -m pytest -q -p no:cacheprovider tests/test_vector_step.py -k matches_reference \
    --device "$dev" --numerics fast --dtype float32
  for mix in greedy mixed; do
    run "bench-$mix-64-vector-only" 60 $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py \
      --device "$dev" --bench-mix "$mix" --bench-sizes 64 --bench-budget 0.5 -k vector \
      --benchmark-json "$res/bench-$mix-64-vector-only.json"
    run "timers-$mix" 45 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --out "$res/timers-$mix.json"
  done
  SKIP_CHECKS=1 BENCH_S=$(( (585 - SECONDS) / 2 - 10 )) OUT="$res/vector" run vector-bench $((590 - SECONDS)) \
    bash scripts/gpu_bench_vector.sh
elif [ "$part" = ahead ]; then
  run gpu-tests 60 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py -m gpu
  for numerics in fast exact; do
    run "ahead-property-$numerics-f32" 60 $py -m pytest -q -p no:cacheprovider properties/step/test_vector_ahead.py \
      --device "$dev" --numerics "$numerics" --dtype float32
  done
  run mixes-fast-f32 70 $py -m pytest -q -p no:cacheprovider tests/test_vector_step.py -k matches_reference \
    --device "$dev" --numerics fast --dtype float32
  for mix in greedy mixed; do
    run "timers-$mix" 40 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --out "$res/timers-$mix.json"
    run "timers-$mix-no-ahead" 40 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --no-ahead \
      --out "$res/timers-$mix-no-ahead.json"
    run "step-vector-$mix" 50 $py scripts/step_profile.py --device "$dev" --impl vector --mix "$mix" --n 64 \
      --steps 30 --rows 40 --out "$res/step-vector-$mix.json"
    run "bench-$mix-64" 90 $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py \
      --device "$dev" --bench-mix "$mix" --bench-sizes 64 --bench-budget 0.5 -k "vector or per_seq" \
      --benchmark-json "$res/bench-$mix-64.json"
  done
elif [ "$part" = where ]; then
  for mix in greedy mixed; do
    run "timers-$mix" 45 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --out "$res/timers-$mix.json"
    run "step-vector-$mix" 50 $py scripts/step_profile.py --device "$dev" --impl vector --mix "$mix" --n 64 \
      --steps 30 --rows 40 --out "$res/step-vector-$mix.json"
  done
  vector_mutants 575 400
elif [ "$part" = closeout ]; then
  run ahead-property-fast-f32 60 $py -m pytest -q -p no:cacheprovider properties/step/test_vector_ahead.py \
    --device "$dev" --numerics fast --dtype float32
  # The same property with the bug planted that it is there to catch: the pass's stream does not wait for the
  # main stream. It must fail.
  mkdir -p /tmp/planted && cat >/tmp/planted/no_stream_wait.py <<'PY'
import torch
import batched.vector.model as vm
class NoWait(torch.cuda.Stream):
    def wait_stream(self, stream):
        pass
_made = {}
vm.side_stream = lambda device: _made.setdefault(device, NoWait(device)) if device.type == "cuda" else None
PY
  PYTHONPATH="/tmp/planted:$PYTHONPATH" run ahead-property-planted-no-wait 60 $py -m pytest -q -p no:cacheprovider \
    -p no_stream_wait properties/step/test_vector_ahead.py --device "$dev" --numerics fast --dtype float32 -x
  run mixes-fast-f32 50 $py -m pytest -q -p no:cacheprovider tests/test_vector_step.py -k matches_reference \
    --device "$dev" --numerics fast --dtype float32
  MTP_VERIFY_DTYPE=float32 run p1p4-vector-paged-f32 75 $py -m nightly --minutes 0.8 --device "$dev" \
    --numerics fast --impl batched.vector.step:step_mtp_bootstrap_vectorized --out "$res/nightly-vector-paged-f32" \
    --pack --tests properties/step/test_p1_equivalence.py properties/step/test_p4_faults.py properties/step/test_p4_argmax_faults.py
  for mix in greedy mixed; do
    run "timers-$mix" 30 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --out "$res/timers-$mix.json"
    run "timers-$mix-no-ahead" 30 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --no-ahead \
      --out "$res/timers-$mix-no-ahead.json"
  done
  SKIP_CHECKS=1 BENCH_S=$(( (${BUDGET_S:-585} - SECONDS) / 2 - 10 )) OUT="$res/vector" run vector-bench \
    $(( ${BUDGET_S:-585} + 5 - SECONDS )) bash scripts/gpu_bench_vector.sh
elif [ "$part" = mirror ]; then
  run gpu-tests 80 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py tests/test_paged_attention.py \
    tests/test_batch_sampling.py tests/test_table_mirror.py -m "gpu or not gpu"
  for numerics in fast exact; do
    run "ahead-carryover-$numerics-f32" 70 $py -m pytest -q -p no:cacheprovider properties/step/test_vector_ahead.py \
      properties/step/test_model_carryover.py --impl batched.vector.step:step_mtp_bootstrap_vectorized --device "$dev" \
      --numerics "$numerics" --dtype float32
  done
  run mixes-fast-f32 60 $py -m pytest -q -p no:cacheprovider tests/test_vector_step.py -k matches_reference \
    --device "$dev" --numerics fast --dtype float32
  run mirror-write 30 $py scripts/mirror_write.py --device "$dev" --out "$res/mirror-write.json"
  for mix in greedy mixed; do
    run "timeline-$mix" 40 $py scripts/step_timeline.py --device "$dev" --mix "$mix" --n 64 --out "$res/timeline-$mix.json"
    run "timers-$mix" 30 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --out "$res/timers-$mix.json"
    run "timers-$mix-no-ahead" 30 $py scripts/step_timers.py --device "$dev" --mix "$mix" --n 64 --no-ahead \
      --out "$res/timers-$mix-no-ahead.json"
  done
  for mix in greedy mixed; do
    run "bench-$mix" $(( (${BUDGET_S:-570} - SECONDS) / 2 )) $py -m pytest -q -p no:cacheprovider \
      benchmarks/bench_bootstrap.py --device "$dev" --bench-mix "$mix" --bench-sizes 64,128,256 --bench-budget 0.5 \
      -k "vector or (per_seq and n064)" --benchmark-json "$res/bench-$mix.json"
  done
elif [ "$part" = mirror2 ]; then
  run gpu-tests 90 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py tests/test_paged_attention.py \
    tests/test_batch_sampling.py -m gpu
  run mirror-tests 40 $py -m pytest -q -p no:cacheprovider tests/test_table_mirror.py tests/test_row_table.py \
    tests/test_vector_step.py -k "mirror or classes or launches" --device "$dev"
  run interpreter-test 40 $py -m pytest -q -p no:cacheprovider tests/test_paged_attention.py -k interpreter --tb=long
  for mix in greedy mixed; do
    run "bench-$mix-64" 60 $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py --device "$dev" \
      --bench-mix "$mix" --bench-sizes 64 --bench-budget 0.5 --benchmark-json "$res/bench-$mix-64.json"
    run "timeline-$mix" 30 $py scripts/step_timeline.py --device "$dev" --mix "$mix" --n 64 --out "$res/timeline-$mix.json"
  done
  SUITE_TIMEOUT=240 vector_mutants "${BUDGET_S:-570}" 240
elif [ "$part" = targets ]; then
  run gpu-tests 90 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py tests/test_paged_attention.py \
    tests/test_batch_sampling.py -m gpu
  run interpreter-test 120 $py -m pytest -q -p no:cacheprovider tests/test_paged_attention.py -k interpreter --tb=long
  run ahead-fast-f32 70 $py -m pytest -q -p no:cacheprovider properties/step/test_vector_ahead.py tests/test_vector_step.py \
    -k "ahead or launch" --impl batched.vector.step:step_mtp_bootstrap_vectorized --device "$dev" --numerics fast \
    --dtype float32
  for mix in greedy mixed; do
    run "bench-$mix-64" 75 $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py --device "$dev" \
      --bench-mix "$mix" --bench-sizes 64 --bench-budget 0.8 --benchmark-json "$res/bench-$mix-64.json"
    run "timeline-$mix" 30 $py scripts/step_timeline.py --device "$dev" --mix "$mix" --n 64 --out "$res/timeline-$mix.json"
    if [ "$mix" = greedy ]; then  # the same with the propose launched by the sampling, not the decode
      run timeline-greedy-no-plan 30 $py scripts/step_timeline.py --device "$dev" --mix greedy --n 64 --no-plan \
        --out "$res/timeline-greedy-no-plan.json"
      for plan in "" --no-plan; do
        run "timers-greedy${plan}" 40 $py scripts/step_timers.py --device "$dev" --mix greedy --n 64 $plan \
          --out "$res/timers-greedy${plan}.json"
      done
    fi
    run "bench-$mix-64-pinned" 40 taskset -c 2,3 $py -m pytest -q -p no:cacheprovider benchmarks/bench_bootstrap.py \
      --device "$dev" --bench-mix "$mix" --bench-sizes 64 --bench-budget 0.8 -k vector \
      --benchmark-json "$res/bench-$mix-64-pinned.json"
  done
  $py -m benchmarks.vector_summary "$res/bench-greedy-64.json" "$res/bench-mixed-64.json" | tee "$res/vector-summary.md"
  SUITE_TIMEOUT=240 vector_mutants "${BUDGET_S:-570}" 240
elif [ "$part" = vcheck ]; then
  run gpu-tests 80 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py tests/test_paged_attention.py \
    tests/test_batch_sampling.py -m gpu
  vector_mutants 410 300
  vector_p1p4 "${GRAPHS_S:-575}"
elif [ "$part" = vmutants ]; then
  run gpu-tests 80 $py -m pytest -q -p no:cacheprovider tests/test_static_passes.py tests/test_paged_attention.py \
    tests/test_batch_sampling.py -m gpu
  vector_mutants 570 400
elif [ "$part" = static ]; then
  timeout 120 $py -m pytest -q -p no:cacheprovider tests/test_paged_attention.py -m gpu >"$res/paged-test.log" 2>&1
  paged_rc=$?
  echo "== paged-test: rc=$paged_rc"; tail -n 30 "$res/paged-test.log"
  if [ "$paged_rc" != 0 ]; then  # the kernel is wrong: measure the gather path only, keep the device time
    run step-vector-greedy--gather 50 $py scripts/step_profile.py --device "$dev" --impl vector --mix greedy \
      --n 64 --steps 30 --rows 40 --gather --out "$res/step-vector-greedy--gather.json"
    tar -czf "$OUT/results-$part.tgz" -C "$OUT" "res-$part"; exit 1
  fi
  run gpu-tests 150 $py -m pytest -q -p no:cacheprovider tests -m gpu
  for case in greedy: mixed: greedy:--gather; do
    run "step-vector-${case%:*}${case#*:}" 50 $py scripts/step_profile.py --device "$dev" --impl vector \
      --mix "${case%:*}" --n "${STEP_N:-64}" --steps 30 --rows 40 ${case#*:} --out "$res/step-vector-${case%:*}${case#*:}.json"
  done
  OUT="$res/vector" run vector-bench 300 bash scripts/gpu_bench_vector.sh
  vector_p1p4 "${GRAPHS_S:-560}"
elif [ "$part" = graphs ]; then
  run gpu-tests 150 $py -m pytest -q -p no:cacheprovider tests -m gpu
  for case in greedy:graphs mixed:graphs greedy:eager mixed:eager; do
    flag=""; [ "${case#*:}" = eager ] && flag="--no-graphs"
    run "step-vector-${case/:/-}" 60 $py scripts/step_profile.py --device "$dev" --impl vector --mix "${case%:*}" \
      --n "${STEP_N:-64}" --steps 30 --rows 40 $flag --out "$res/step-vector-${case/:/-}.json"
  done
  vector_p1p4 "${GRAPHS_S:-420}"
elif [ "$part" = mutants ]; then
  run mutants-fast-bf16 "${BUDGET_S:-570}" $py -m mutants.run --numerics fast --dtype bfloat16 --device "$dev" \
    --jobs "$jobs" --mps --timeout "${SUITE_TIMEOUT:-480}" --max-n "${MAX_N:-16}" \
    --json "$res/mutants-fast-bf16-cuda.json" --markdown "$res/mutants-fast-bf16-cuda.md"
elif [ "$part" = bench ]; then
  run gpu-tests 60 $py -m pytest -q -p no:cacheprovider tests -m gpu
  OUT="$res/vector" run vector-bench $((570 - SECONDS)) bash scripts/gpu_bench_vector.sh
elif [ "$part" = probe ]; then
  run profile 90 $py scripts/p1_profile.py --device "$dev" --dtype bfloat16 --max-n 64 --examples 16 \
    --out "$res/p1-profile.json"
  [ "${PLAIN_HOST:-1}" = 1 ] && MTP_BENCH_HOST_EXAMPLES=4 run p1-host 90 $py -m pytest -q -s -p no:cacheprovider \
    benchmarks/bench_p1_host.py --device "$dev" --max-n 64 --numerics fast --benchmark-json "$res/p1-host.json"
  if command -v nvidia-cuda-mps-control >/dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d && echo "MPS started"
    for w in ${MPS_WORKERS:-16}; do
      MTP_BENCH_HOST_WORKERS=$w MTP_BENCH_HOST_EXAMPLES=$((96 / w)) run "p1-host-mps-$w" 90 $py -m pytest -q -s \
        -p no:cacheprovider benchmarks/bench_p1_host.py --device "$dev" --max-n 64 --numerics fast \
        --benchmark-json "$res/p1-host-mps-$w.json"
    done
    run profile-mps 60 $py scripts/p1_profile.py --device "$dev" --dtype bfloat16 --max-n 64 --examples 16 \
      --out "$res/p1-profile-mps.json"
    echo quit | nvidia-cuda-mps-control; sleep 2
    cp -r "$CUDA_MPS_LOG_DIRECTORY" "$res/mps-log" 2>/dev/null
  else
    echo "no nvidia-cuda-mps-control on this machine"
  fi
else
  echo "unknown part $part"; exit 2
fi
tar -czf "$OUT/results-$part.tgz" -C "$OUT" "res-$part" && rm -rf "$res"
echo "packed $OUT/results-$part.tgz after $SECONDS s"
