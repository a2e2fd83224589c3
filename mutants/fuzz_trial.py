"""One trial of `mutants.fuzz_compare`, run inside a mutated copy of the project: one test, one
engine, one seed, at most `--cap` executions of the test; prints one JSON line saying whether the
test failed and after how many executions and seconds.

    python -m mutants.fuzz_trial --engine hypothesis|hypofuzz --test NODEID --seed S --cap N

`hypothesis`: the test's own Hypothesis run (generate phase only, no database, from seed S), as a
nightly round runs it. `hypofuzz`: HypoFuzz's fuzz target for the test (coverage-guided mutation of
choice sequences, stability re-executions counted as executions) with its random generators
seeded from S. Both count every execution of the test's body up to and including the first failing
one; neither shrinks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from random import Random
from typing import Any

ENGINES = ("hypothesis", "hypofuzz")


def target_for(nodeid: str) -> Any:
    """HypoFuzz's fuzz target of `nodeid` (pytest collects it in this process, conftest included)."""
    from hypofuzz.collection import collect_tests

    targets = collect_tests([nodeid, "-p", "no:cacheprovider", "-q", "--hypothesis-profile", "nightly"]).fuzz_targets
    if len(targets) != 1:
        raise SystemExit(f"{nodeid}: expected one Hypothesis test, collected {len(targets)}")
    return targets[0]


def run_hypothesis(nodeid: str, seed: int, cap: int) -> dict[str, Any]:
    """The test's own Hypothesis engine from `seed`: executions up to the first failure."""
    from hypothesis import HealthCheck, Phase, settings

    fn = target_for(nodeid).wrapped_test
    count = {"runs": 0, "failed_at": None}
    inner = fn.hypothesis.inner_test

    def counted(*args: Any, **kwargs: Any) -> Any:
        count["runs"] += 1
        try:
            return inner(*args, **kwargs)
        except Exception:
            if count["failed_at"] is None:
                count["failed_at"] = count["runs"]
            raise

    fn.hypothesis.inner_test = counted
    fn._hypothesis_internal_use_settings = settings(
        max_examples=cap,
        database=None,
        derandomize=False,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    fn._hypothesis_internal_use_seed = seed
    # the failure the mutant causes (or an error: failed_at says whether the test body failed first)
    with contextlib.suppress(Exception):
        fn()
    failed_at = count["failed_at"]
    return {"killed": failed_at is not None, "executions": failed_at or count["runs"]}


def run_hypofuzz(nodeid: str, seed: int, cap: int) -> dict[str, Any]:
    """HypoFuzz's engine on the test from `seed`: executions (fresh, mutated and replayed for
    stability alike) up to the first failing one."""
    from hypothesis.internal.conjecture.data import Status

    target = target_for(nodeid)
    target.random = Random(seed)
    target.provider.random = Random(seed + 1)
    target._enter_fixtures()
    for k in range(1, cap + 1):
        data = target.new_conjecture_data()
        target._execute_once(data)
        data.freeze()
        if data.status is Status.INTERESTING:
            return {"killed": True, "executions": k}
    return {"killed": False, "executions": cap}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mutants.fuzz_trial", description=__doc__.splitlines()[0])
    p.add_argument("--engine", choices=ENGINES, required=True)
    p.add_argument("--test", required=True, help="the pytest node id of one Hypothesis test")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--cap", type=int, default=150, help="most executions of the test (default 150)")
    args = p.parse_args(argv)
    wall, cpu = time.perf_counter(), time.process_time()
    run = run_hypothesis if args.engine == "hypothesis" else run_hypofuzz
    result = run(args.test, args.seed, args.cap)
    result.update(
        engine=args.engine,
        seed=args.seed,
        seconds=round(time.perf_counter() - wall, 2),
        cpu_seconds=round(time.process_time() - cpu, 2),
    )
    print("TRIAL " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
