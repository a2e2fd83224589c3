"""Run P9 for a number of examples (or minutes) and print what it did: generations per second, engine
steps per generation, finish reasons, draft acceptance, faults, D1 engagements and reads.

    python -m properties.generations.figures [--examples N | --minutes M] [--seed S] [--device cpu|cuda]
                                    [--numerics exact|fast] [--dtype D] [--impl module:function]

Examples are random (seeded by --seed) and not shrunk; a failure prints its report and exits 1, and
so does a run over the near-tie budget (fast numerics: forced decisions over 1 % of the decisions).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

from properties.impl import impl_help

MAX_LISTED = 10  # forced decisions listed one by one


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m properties.generations.figures", description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=20, help="state-machine examples to run (default 20)")
    p.add_argument("--minutes", type=float, default=None, help="run batches of examples for this long instead")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None)
    p.add_argument("--numerics", default=None, choices=("exact", "fast"))
    p.add_argument("--dtype", default=None)
    p.add_argument("--impl", default=None, help=impl_help())
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis import seed as with_seed
    from hypothesis.stateful import get_state_machine_test

    from properties.config import RunConfig
    from properties.generations import test_p9_generations as p9
    from properties.generations.oracle import over_budget

    run = RunConfig.build(
        {"device": args.device, "numerics": args.numerics, "dtype": args.dtype, "impl": args.impl}, os.environ
    )
    torch.set_num_threads(run.threads)
    machine = p9.machine(run)
    batch = args.examples if args.minutes is None else 10
    deadline = None if args.minutes is None else time.perf_counter() + 60 * args.minutes
    started, seed = time.perf_counter(), args.seed
    while True:
        s = settings(
            max_examples=batch,
            stateful_step_count=30,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
            derandomize=False,
        )
        try:
            with_seed(seed)(get_state_machine_test(machine, settings=s))()
        except AssertionError as e:
            print(e)
            print(f"\nbefore the failing example:\n{summary(p9.TOTALS, time.perf_counter() - started, run)}")
            return 1
        seed += 1
        if deadline is None or time.perf_counter() > deadline:
            break
    print(summary(p9.TOTALS, time.perf_counter() - started, run))
    why = over_budget([s.tally for s in p9.TOTALS], run.forced_budget)
    if why is not None:
        print(why)
        return 1
    return 0


def summary(totals: list, seconds: float, run) -> str:
    """The figures of `totals` (one `PairStats` per example)."""
    reasons: Counter[str] = Counter()
    for s in totals:
        reasons.update(s.reasons)
    n_gen = sum(s.generations for s in totals)
    steps = [n for s in totals for n in s.engine_steps_per_generation]
    sum_of = lambda name: sum(getattr(s, name) for s in totals)  # noqa: E731
    proposed, accepted = sum_of("drafts_proposed"), sum_of("drafts_accepted")
    lines = [
        f"P9 on {run.device}, {run.numerics} numerics ({'/'.join(run.dtypes)}): "
        f"{len(totals)} examples in {seconds:.1f} s",
        f"  generations: {n_gen} ({n_gen / seconds:.2f} per second), tokens: {sum_of('tokens')}",
        f"  engine steps: {sum_of('steps')} ({sum_of('batched_bootstraps')} with a batched bootstrap); "
        f"per generation: mean {sum(steps) / max(len(steps), 1):.1f}, max {max(steps, default=0)}",
        f"  finished by: {dict(sorted(reasons.items()))}",
        f"  verifies: {sum_of('verifies')}, drafts accepted {accepted}/{proposed} "
        f"({100 * accepted / max(proposed, 1):.1f} %), bonus tokens {sum_of('bonus_tokens')}",
        f"  faults fired: {sum_of('faults_fired')}, slots reused: {sum_of('slots_reused')}, "
        f"block boundaries crossed: {sum_of('crossed_blocks')}",
        f"  D1 engaged: {sum_of('d1_opened')}, its checkpoint read by a later verify: {sum_of('d1_reads')}, "
        f"rewritten by both engines: {sum_of('d1_closed_by_rewrite')} entries",
    ]
    if run.exact:
        return "\n".join([*lines, "  near-ties forced: 0 (exact numerics decide bit for bit)"])
    forced = [f for s in totals for f in s.tally.forced]
    decisions = sum(s.tally.decisions for s in totals)
    where = Counter(f.where for f in forced)
    lines.append(
        f"  decisions: {decisions} ({sum_of('solo_decisions')} of them the solo decodes'); near-ties forced: "
        f"{len(forced)} ({100 * len(forced) / max(decisions, 1):.3f} %; {dict(sorted(where.items()))})"
    )
    lines += [f"    {f.text()}" for f in forced[:MAX_LISTED]]
    if len(forced) > MAX_LISTED:
        lines.append(f"    (+{len(forced) - MAX_LISTED} more)")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
