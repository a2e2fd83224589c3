"""The step's own draws follow the reference: its support, its distribution, independent seeds and
positions, the same token for the same request on the same row.

The implementation's step runs again and again on a world whose sampled sequences are copied many
times (`properties.sampling.draw_worlds`), each copy with a seed of its own, partners whose seeds
share their low 32 bits or whose position is one later, and twins (`properties.sampling.step_draws`);
the tokens it emits are tested against the exact distribution the reference defines for each copy's
row, on the row the implementation decoded (`properties.sampling.draw_checks`, `draw_case`). Coupled
or own noise alike: what is tested is what the step emits, not a sampler it declares.

Each example runs dozens of steps, so the property runs a tenth of the profile's examples (at least
three); each of its statistical tests is at alpha = 1e-6 / (examples x tests per example).

`python -m properties.sampling.test_step_draws CASE.json [--impl NAME]` replays a failure's case.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.config import RunConfig
from properties.failures.report import replay_command, save_json
from properties.impl import DEFAULT_IMPL, impl_help, load
from properties.sampling.draw_case import DrawCase, calls_for, collect_case, judge, report, statistical_tests
from properties.sampling.draw_specs import draw_specs
from properties.sampling.statistics import row_alpha

SEEDS = st.integers(0, 2**63 - 1)


def examples() -> int:
    """This property's examples under the loaded profile."""
    return max(3, settings().max_examples // 10)


@covers("P10 own draws", "B8", "B9")
@settings(max_examples=examples())
@given(data=st.data())
def test_the_steps_own_draws_follow_the_reference(run: RunConfig, data: st.DataObject) -> None:
    spec, sources = data.draw(draw_specs(run), label="world")
    alpha = row_alpha(examples() * statistical_tests())
    case = DrawCase(spec, sources, data.draw(SEEDS, label="draw seed"), alpha, calls=calls_for(spec))
    impl = run.impl
    verdict = judge(case, collect_case(case, impl))
    if not verdict.passed:
        path = save_json(case.to_json(), run.replays, prefix="draws-")
        raise AssertionError(report(case, impl.name, verdict, replay_command(path, impl.name)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Replay a case of the oracles on a step's own draws.")
    parser.add_argument("case", type=Path, help="a case file written by a failing test_step_draws")
    parser.add_argument("--impl", default=DEFAULT_IMPL, help=impl_help())
    args = parser.parse_args(argv)
    try:
        case = DrawCase.from_json(args.case.read_text())
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"cannot read case {args.case}: {e}", file=sys.stderr)
        return 2
    impl = load(args.impl)
    verdict = judge(case, collect_case(case, impl))
    if verdict.passed:
        print(f"replay: no alarm ({verdict.draws} draws)")
        return 0
    print(report(case, impl.name, verdict, replay_command(args.case, args.impl)))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
