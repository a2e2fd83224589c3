"""The distribution oracle: a sampler's tokens for one row follow the reference's exact distribution.

For a row from a generated world (`properties.sampling.rows`), `DRAWS` tokens come from one call of
the row sampler with the row repeated, each copy with its own seed (`properties.sampling.draws`), and
are tested against the row's distribution after penalties, EOS hold, grammar, temperature, top-k and
top-p (`properties.sampling.statistics`: a token outside the support fails at once, else a G test at
alpha = 1e-6 / the profile's examples, so a run on a correct sampler fails in at most one run in a
million).

An implementation with its own noise is tested through its row sampler. A coupled implementation's
tokens are bit-equal to the reference's (P1 checks that), and the reference's noise depends only on
(seed, position, id), so the reference's own sampler over many seeds is a sample of the same
distribution: the property runs on it, which is what the oracle's false-alarm rate is on a perfect
sampler.

`python -m properties.sampling.test_distribution CASE.json [--impl NAME]` replays a failure's case.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from properties.config import RunConfig
from properties.impl import DEFAULT_IMPL, Impl, load
from properties.report import replay_command, save_json
from properties.sampling.draws import check_row, reference_row_sampler
from properties.sampling.rows import SampledRow, row_of, sampled_rows
from properties.sampling.statistics import FAMILY_RATE, GofResult, row_alpha
from properties.specs import WorldSpec, compact
from reference.row_request import RowSampler
from reference.sampling import SamplingError

DRAWS = 2000  # draws per row (docs/samplers.md: the oracle's power at this count)
SEED_BASES = st.integers(0, 2**40)
MODULE = "properties.sampling.test_distribution"


def sampler_of(impl: Impl) -> tuple[RowSampler, str]:
    """The sampler the oracle draws from for `impl`, and its name for a report: its own row sampler
    for own noise, the reference's for coupled noise."""
    if impl.noise == "own":
        assert impl.sampler is not None
        return impl.sampler, f"the row sampler of {impl.name}"
    return reference_row_sampler, f"the reference's row sampler ({impl.name} has coupled noise)"


@dataclass(slots=True, frozen=True)
class Case:
    """What replays one test: the world, the sequence, the draws, the first seed, alpha."""

    spec: WorldSpec
    index: int
    draws: int
    seed_base: int
    alpha: float

    def to_json(self) -> str:
        d = {"spec": json.loads(self.spec.to_json()), "index": self.index, "draws": self.draws}
        d |= {"seed_base": self.seed_base, "alpha": self.alpha}
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Case:
        d = json.loads(text)
        spec = WorldSpec.from_json(json.dumps(d["spec"]))
        return cls(spec, int(d["index"]), int(d["draws"]), int(d["seed_base"]), float(d["alpha"]))


def run_case(case: Case, sampler: RowSampler, row: SampledRow) -> tuple[GofResult | None, str]:
    """The oracle on `row` (the case's), and what the sampler did wrong besides ("" if nothing): it
    refused a row the reference samples, or did not refuse, as the reference does, a row it refuses."""
    if row.refusal is not None:
        got = sampler(row.row[None], [row.req])[0]
        if isinstance(got, SamplingError) and str(got) == row.refusal:
            return None, ""
        return None, f"the reference refuses the row ({row.refusal}); the sampler gave {got!r}"
    try:
        return check_row(sampler, row.row, row.req, case.draws, case.seed_base), ""
    except SamplingError as e:
        return None, f"the sampler refused a row the reference samples: {e}"


def report(case: Case, row: SampledRow, what: str, result: GofResult | None, refusal: str, replay: str) -> str:
    """The failure report: the verdict, the row's parameters, the mix, the draws and the replay."""
    rows = round(FAMILY_RATE / case.alpha)
    verdict = result.describe() if result is not None else refusal
    lines = [f"distribution oracle: {what} does not sample the reference's distribution", "", f"  {verdict}"]
    lines.append(f"  alpha {case.alpha:.3g} (a false alarm in at most {FAMILY_RATE:g} of runs of {rows} rows)")
    lines += ["", "row:"] + ["  " + line for line in row.describe().splitlines()]
    lines += ["", "mix (non-default fields; * = bootstrapped):"]
    lines += ["  " + line for line in compact(case.spec).splitlines()]
    last = case.seed_base + case.draws - 1
    lines += ["", f"draws: {case.draws} in one call, seeds {case.seed_base}..{last} at the row's output position"]
    lines += ["", f"replay: {replay}"]
    return "\n".join(lines)


@given(data=st.data())
def test_sampled_tokens_follow_the_reference_distribution(run: RunConfig, data: st.DataObject) -> None:
    row = data.draw(sampled_rows(run), label="row")
    seed_base = data.draw(SEED_BASES, label="seed_base")
    impl = run.impl
    sampler, what = sampler_of(impl)
    case = Case(row.spec, row.index, DRAWS, seed_base, row_alpha(settings.default.max_examples))
    result, refusal = run_case(case, sampler, row)
    if refusal or (result is not None and not result.passed(case.alpha)):
        path = save_json(case.to_json(), run.replays, prefix="distribution-")
        raise AssertionError(report(case, row, what, result, refusal, replay_command(path, impl.name, MODULE)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Replay a case of the distribution oracle and print its report.")
    parser.add_argument("case", type=Path, help="a case file written by a failing distribution oracle")
    parser.add_argument(
        "--impl", default=DEFAULT_IMPL, help="the implementation under test (a name or module:function)"
    )
    args = parser.parse_args(argv)
    try:
        case = Case.from_json(args.case.read_text())
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"cannot read case {args.case}: {e}", file=sys.stderr)
        return 2
    row = row_of(case.spec, case.index)
    if row is None:
        print("the case's row is no longer a sampled row the reference decodes", file=sys.stderr)
        return 2
    sampler, what = sampler_of(load(args.impl))
    result, refusal = run_case(case, sampler, row)
    if not refusal and (result is None or result.passed(case.alpha)):
        print(f"replay: no alarm ({result.describe() if result is not None else 'the row refused alike'})")
        return 0
    print(report(case, row, what, result, refusal, replay_command(args.case, args.impl, MODULE)))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
