"""The distribution oracle's false alarms on correct samplers:
`python -m properties.sampling.false_alarms --tests 100000 [--minutes M] [--samplers ...] [--write]`.

Rows are drawn once from generated worlds (`properties.sampling.rows`; those whose test has two bins
or more: on the others a correct sampler cannot fail) and reused, each test with its own seeds (test t
of a sampler draws seeds from t * draws on). The samplers: the reference's row sampler, an
implementation's (`vector-torch`, ...), the inverse-CDF sampler of `properties.sampling.draws`, and
`multinomial`, the fast path: the counts drawn at once by `torch.multinomial` from the exact
distribution, without a sampler call (the test's own false-alarm rate under exact sampling, at a
hundred times the rate of a sampler call). Each sampler runs up to `--tests` tests; they share the
time equally (each test goes to the one that has used the least). For each: the tests, the alarms at
the property's alpha (p < 1e-6 / 100, the `ci` profile's rows) against the expected tests x alpha, and
the share of p-values below a few levels, which a calibrated test keeps near the level (the combined p
and G's own). `--write` puts the table into docs/samplers.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from properties.impl import load
from properties.run.doc_blocks import Block, write_block
from properties.sampling.draws import ROW_DRAWS as DRAWS
from properties.sampling.draws import check_row, inverse_cdf_sampler, reference_row_sampler
from properties.sampling.power import ALPHA_ROWS
from properties.sampling.rows import SampledRow, collect_rows
from properties.sampling.statistics import Bins, GofResult, bins_for, goodness_of_fit, row_alpha, token_counts
from reference.row_request import RowSampler, distribution

LEVELS = (0.1, 0.05, 0.01, 1e-3, 1e-4)
DOC = Path("docs/samplers.md")
BLOCK = Block("false-alarms", "python -m properties.sampling.false_alarms --write")
REPORT_EVERY_S = 120.0


MULTINOMIAL = "multinomial"


def samplers() -> dict[str, Callable[[], RowSampler | None]]:
    """The correct samplers by name (built when asked for: an implementation's may be missing);
    `multinomial` is no sampler (None): its counts are drawn directly."""
    return {
        MULTINOMIAL: lambda: None,
        "reference": lambda: reference_row_sampler,
        "inverse-cdf": inverse_cdf_sampler,
        "vector-torch": lambda: _own("vector-torch"),
        "vector-torch-batch": lambda: _own("vector-torch-batch"),
        "flashinfer": lambda: _on_cuda(_own("flashinfer")),
    }


def _on_cuda(sampler: RowSampler) -> RowSampler:
    """`sampler` handed the rows on the GPU (a GPU-only sampler; the rows are drawn on the CPU)."""
    return lambda logits, requests: sampler(logits.cuda(), requests)


def _own(name: str) -> RowSampler:
    sampler = load(name).sampler
    assert sampler is not None
    return sampler


@dataclass(slots=True)
class Prepared:
    """A row with its exact distribution and its bins for the draws."""

    row: SampledRow
    probs: torch.Tensor
    bins: Bins


def prepared_rows(count: int, draws: int) -> list[Prepared]:
    """The rows of `count` drawn whose test for `draws` draws has two bins or more."""
    out = []
    for r in collect_rows(count):
        p = distribution(r.row, r.req).cpu()
        bins = bins_for(p, draws)
        if bins.expected.shape[0] >= 2:
            out.append(Prepared(r, p, bins))
    return out


@dataclass(slots=True)
class Tally:
    """One sampler's tests so far."""

    name: str
    tests: int = 0
    alarms: int = 0
    below: list[int] = field(default_factory=lambda: [0] * len(LEVELS))
    below_g: list[int] = field(default_factory=lambda: [0] * len(LEVELS))
    smallest: float = 1.0
    seconds: float = 0.0

    def add(self, p: float, p_g: float, alpha: float, seconds: float) -> None:
        self.tests += 1
        self.alarms += p < alpha
        for i, level in enumerate(LEVELS):
            self.below[i] += p < level
            self.below_g[i] += p_g < level
        self.smallest = min(self.smallest, p)
        self.seconds += seconds

    @property
    def per_minute(self) -> float:
        return 60.0 * self.tests / self.seconds if self.seconds else 0.0


def one_test(sampler: RowSampler | None, prep: Prepared, draws: int, seed_base: int) -> GofResult:
    """The oracle on `prep`'s row with `draws` draws from `sampler` (seeds from `seed_base` on), or from
    `torch.multinomial` over the exact distribution (a generator seeded with `seed_base`) for None."""
    if sampler is not None:
        return check_row(sampler, prep.row.row, prep.row.req, draws, seed_base, prep.probs, prep.bins)
    g = torch.Generator().manual_seed(seed_base)
    tokens = torch.multinomial(prep.probs, draws, replacement=True, generator=g)
    return goodness_of_fit(token_counts(tokens, prep.probs.shape[0]), prep.probs, prep.bins)


def run(
    named: dict[str, RowSampler | None],
    rows: list[Prepared],
    tests: int,
    draws: int,
    alpha: float,
    minutes: float,
    first: int = 0,
) -> list[Tally]:
    """Up to `tests` tests of each sampler, for at most `minutes`, the time shared equally; progress
    on the way. Test t of a sampler is its test `first + t` (its row and seeds), so runs with
    disjoint ranges of `first` (one per core or host) add up to one larger run."""
    tallies = [Tally(name) for name in named]
    fns = list(named.values())
    end = time.monotonic() + 60.0 * minutes
    next_report = time.monotonic() + REPORT_EVERY_S
    while time.monotonic() < end:
        open_ = [i for i, t in enumerate(tallies) if t.tests < tests]
        if not open_:
            break
        j = min(open_, key=lambda i: tallies[i].seconds)
        tally = tallies[j]
        t = first + tally.tests
        prep = rows[t % len(rows)]
        start = time.perf_counter()
        result = one_test(fns[j], prep, draws, t * draws)
        tally.add(result.p_value, result.p_g, alpha, time.perf_counter() - start)
        if result.p_value < alpha:
            print(f"ALARM: {tally.name} test {tally.tests - 1}: {result.describe()}\n{prep.row.describe()}", flush=True)
        if time.monotonic() > next_report:
            print(summary(tallies, alpha, len(rows), draws), flush=True)
            next_report += REPORT_EVERY_S
    return tallies


def summary(tallies: list[Tally], alpha: float, rows: int, draws: int) -> str:
    """The markdown table of the tallies."""
    levels = " | ".join(f"p < {x:g}" for x in LEVELS)
    lines = [
        f"{rows} rows from generated worlds (two bins or more), {draws} draws a test, alpha {alpha:.0e}; "
        "p-value shares as combined p (G's own p).",
        "",
        f"| sampler | tests | tests/min | alarms (p < alpha) | expected | smallest p | {levels} |",
        "|---|---|---|---|---|---|" + "---|" * len(LEVELS),
    ]
    total = sum(t.tests for t in tallies)
    for t in [*tallies, _total(tallies)] if len(tallies) > 1 else tallies:
        if t.tests == 0:
            continue
        shares = " | ".join(f"{b / t.tests:.4f} ({g / t.tests:.4f})" for b, g in zip(t.below, t.below_g, strict=True))
        lines.append(
            f"| {t.name} | {t.tests} | {t.per_minute:.0f} | {t.alarms} | {t.tests * alpha:.1e} | {t.smallest:.2g} | "
            f"{shares} |"
        )
    lines.append("")
    lines.append(f"{total} tests in {sum(t.seconds for t in tallies) / 60:.1f} min of one core.")
    return "\n".join(lines)


def _total(tallies: list[Tally]) -> Tally:
    out = Tally("all")
    for t in tallies:
        out.tests += t.tests
        out.alarms += t.alarms
        out.below = [a + b for a, b in zip(out.below, t.below, strict=True)]
        out.below_g = [a + b for a, b in zip(out.below_g, t.below_g, strict=True)]
        out.smallest = min(out.smallest, t.smallest)
        out.seconds += t.seconds
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=100_000, help="tests of each sampler (default 100000)")
    parser.add_argument("--minutes", type=float, default=float("inf"), help="stop after this long")
    parser.add_argument("--rows", type=int, default=300, help="rows drawn from generated worlds (default 300)")
    parser.add_argument("--draws", type=int, default=DRAWS, help=f"draws per test (default {DRAWS})")
    parser.add_argument(
        "--samplers",
        default="multinomial,reference,vector-torch",
        help=f"comma-separated, of {', '.join(samplers())}",
    )
    parser.add_argument("--first", type=int, default=0, help="the index of the first test (parallel runs: disjoint)")
    parser.add_argument("--write", action="store_true", help=f"write the table into {DOC}")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    known = samplers()
    names = [n for n in args.samplers.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown samplers {unknown}: expected some of {', '.join(known)}")
    named = {n: known[n]() for n in names}
    rows = prepared_rows(args.rows, args.draws)
    alpha = row_alpha(ALPHA_ROWS)
    tallies = run(named, rows, args.tests, args.draws, alpha, args.minutes, args.first)
    out = summary(tallies, alpha, len(rows), args.draws)
    print(out)
    if args.write:
        write_block(DOC, BLOCK, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
