"""The distribution oracle's measured power: `python -m properties.sampling.power [--rows R] [--write]`.

A correct sampler (`properties.sampling.draws.inverse_cdf_sampler`) is given one controlled error at a
time, and the oracle (`check_row`, `DRAWS` draws, alpha for a run of `ALPHA_ROWS` rows: the `ci`
profile's) tests it on rows from generated worlds (`properties.sampling.rows`):
- mass δ: δ of probability moved from the most likely kept token to the other kept tokens (in
  proportion to theirs); rows whose top token has more than δ and that keep another token;
- top-p one more / one fewer: the top-p cut keeps one token more (rows where top-p dropped one) or one
  fewer (rows where top-p is on and kept two or more) than the reference;
- temperature order: the top-p cut decided on the untempered probabilities, then the kept tokens'
  scores tempered;
- temperature δ: temperature T·(1 + δ) everywhere (the cuts too).
A row counts for an error where the error moves at least 1/DRAWS of probability (total variation):
less than one draw's worth, which no test of DRAWS draws can see. Detected: p < alpha. For each error
the table gives the detection rate with the rows counted, and the smallest δ of `LADDER` detected in
at least 90 % of its rows. `--write` puts the table into docs/samplers.md.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from properties.run.doc_blocks import Block, write_block
from properties.sampling.draws import ROW_DRAWS as DRAWS
from properties.sampling.draws import check_row, inverse_cdf_sampler
from properties.sampling.rows import SampledRow, collect_rows
from properties.sampling.statistics import bins_for, row_alpha
from reference.row_request import RowRequest, distribution
from reference.sampling import processed_row

LADDER = (0.2, 0.1, 0.05, 0.02, 0.01)
DETECTED = 0.9  # the share of rows an error size must be detected in
ALPHA_ROWS = 100  # the rows of a run the alpha is for: the ci profile's examples
DOC = Path("docs/samplers.md")
BLOCK = Block("power", "python -m properties.sampling.power --write")

# The probabilities a faulty sampler draws from: (row, request, δ) -> float64 [V], or None where the
# error does not apply to the row.
Faulty = Callable[[torch.Tensor, RowRequest, float], torch.Tensor | None]


def cut_distribution(
    row: torch.Tensor,
    req: RowRequest,
    temperature: float | None = None,
    cut_temperature: float | None = None,
    offset: int = 0,
) -> torch.Tensor:
    """The reference's distribution of `row` (`reference.sampling.cut_scores` then softmax) with the
    scores tempered at `temperature` (default the request's), the top-p mass taken at `cut_temperature`
    (default the same) and the top-p cut keeping `offset` tokens more (within 1 and top-k's count)
    wherever top-p is on."""
    proc = processed_row(row, req.eos_mask, req.grammar, req.pen, req.history)
    t = req.temperature if temperature is None else temperature
    order = torch.sort(proc, descending=True, stable=True).indices
    keep = int(torch.isfinite(proc).sum())
    if 0 < req.top_k < keep:
        keep = req.top_k
    scores = (proc - proc.max()) / t
    if req.top_p < 1.0 and keep > 1:
        mass_scores = scores if cut_temperature is None else (proc - proc.max()) / cut_temperature
        csum = torch.cumsum(torch.softmax(mass_scores[order[:keep]], dim=0), dim=0)
        kept = min(int((csum < req.top_p).sum()) + 1, keep)
        keep = min(max(kept + offset, 1), keep)
    out = torch.full_like(scores, -math.inf)
    out[order[:keep]] = scores[order[:keep]]
    return torch.softmax(out, dim=0)


def mass_error(row: torch.Tensor, req: RowRequest, delta: float) -> torch.Tensor | None:
    p = distribution(row, req)
    top = int(torch.argmax(p))
    rest = 1.0 - float(p[top])
    if float(p[top]) <= delta or rest <= 0.0:
        return None
    q = p * (1.0 + delta / rest)
    q[top] = p[top] - delta
    return q


def one_more(row: torch.Tensor, req: RowRequest, _: float) -> torch.Tensor:
    return cut_distribution(row, req, offset=1)


def one_fewer(row: torch.Tensor, req: RowRequest, _: float) -> torch.Tensor:
    return cut_distribution(row, req, offset=-1)


def cut_before_temperature(row: torch.Tensor, req: RowRequest, _: float) -> torch.Tensor:
    return cut_distribution(row, req, cut_temperature=1.0)


def temperature_error(row: torch.Tensor, req: RowRequest, delta: float) -> torch.Tensor:
    return cut_distribution(row, req, temperature=req.temperature * (1.0 + delta))


@dataclass(slots=True, frozen=True)
class ErrorKind:
    name: str
    faulty: Faulty
    sizes: tuple[float, ...] = (0.0,)  # (0.0,): an error without a size


KINDS = (
    ErrorKind("mass δ (moved from the top token)", mass_error, LADDER),
    ErrorKind("top-p keeps one more", one_more),
    ErrorKind("top-p keeps one fewer", one_fewer),
    ErrorKind("top-p cut before temperature", cut_before_temperature),
    ErrorKind("temperature T·(1 + δ)", temperature_error, LADDER),
)


@dataclass(slots=True)
class Cell:
    """One error at one size: for each row it applies to (moving >= 1/DRAWS of probability) the
    probability moved and whether the oracle detected it; the rows where it moves less."""

    kind: str
    size: float
    verdicts: list[tuple[float, bool]] = field(default_factory=list)
    too_small: int = 0

    @property
    def rows(self) -> int:
        return len(self.verdicts)

    @property
    def detected(self) -> int:
        return sum(d for _, d in self.verdicts)

    @property
    def rate(self) -> float:
        return self.detected / self.rows if self.rows else math.nan


def measure(rows: list[SampledRow], draws: int, alpha: float, kinds: tuple[ErrorKind, ...] = KINDS) -> list[Cell]:
    """Each error kind at each of its sizes on every row it applies to: the oracle's verdicts."""
    cells: list[Cell] = []
    prepared = [(r, distribution(r.row, r.req).cpu()) for r in rows]
    for k, kind in enumerate(kinds):
        for s, size in enumerate(kind.sizes):
            cell = Cell(kind.name, size)
            for i, (r, p) in enumerate(prepared):
                q = kind.faulty(r.row, r.req, size)
                if q is None:
                    continue
                moved = 0.5 * float((q.cpu() - p).abs().sum())
                if moved < 1.0 / draws:
                    cell.too_small += moved > 1e-12
                    continue
                sampler = inverse_cdf_sampler(lambda row, req, f=kind.faulty, d=size: f(row, req, d))
                seed_base = ((i * len(kinds) + k) * len(LADDER) + s) * draws
                result = check_row(sampler, r.row, r.req, draws, seed_base, p, bins_for(p, draws))
                cell.verdicts.append((moved, not result.passed(alpha)))
            cells.append(cell)
    return cells


def smallest_detected(cells: list[Cell]) -> str:
    """The smallest size detected in at least `DETECTED` of its rows, going down the ladder (stopping
    at the first size that is not)."""
    best = "none"
    for c in sorted(cells, key=lambda c: -c.size):
        if c.rows == 0 or c.rate < DETECTED:
            break
        best = f"{c.size:g}" if c.size else "yes"
    return best


def table(cells: list[Cell], draws: int, alpha: float, sampled: int) -> str:
    """The markdown table of `measure`'s cells."""
    head = " | ".join(f"δ = {d:g}" for d in LADDER)
    lines = [
        f"{sampled} rows from generated worlds, {draws} draws each, alpha {alpha:.0e} (a run of {ALPHA_ROWS} rows); "
        "a cell: detected / rows where the error moves >= 1/draws of probability (rate).",
        "",
        f"| error | {head} | smallest δ detected in >= {DETECTED:.0%} |",
        "|---|" + "---|" * len(LADDER) + "---|",
    ]
    for kind in KINDS:
        mine = [c for c in cells if c.kind == kind.name]
        if kind.sizes == (0.0,):
            c = mine[0]
            one = f"{c.detected}/{c.rows} ({c.rate:.0%})" if c.rows else "no rows"
            lines.append(
                f"| {kind.name} | {one} (no size) |" + " |" * (len(LADDER) - 1) + f" {smallest_detected(mine)} |"
            )
            continue
        by_size = {c.size: c for c in mine}
        cols = [
            f"{by_size[d].detected}/{by_size[d].rows} ({by_size[d].rate:.0%})" if by_size[d].rows else "no rows"
            for d in LADDER
        ]
        lines.append(f"| {kind.name} | " + " | ".join(cols) + f" | {smallest_detected(mine)} |")
    return "\n".join(lines)


def moved_table(cells: list[Cell]) -> str:
    """Detection by the probability an error moves (total variation), all errors and sizes together."""
    edges = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
    lines = ["| probability moved | rows | detected |", "|---|---|---|"]
    verdicts = [v for c in cells for v in c.verdicts]
    for i, lo in enumerate(edges):
        hi = edges[i + 1] if i + 1 < len(edges) else math.inf
        mine = [d for m, d in verdicts if lo <= m < hi]
        label = f"[{lo:g}, {hi:g})" if hi < math.inf else f">= {lo:g}"
        rate = f"{sum(mine)} ({sum(mine) / len(mine):.0%})" if mine else "-"
        lines.append(f"| {label} | {len(mine)} | {rate} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200, help="rows drawn from generated worlds (default 200)")
    parser.add_argument("--draws", type=int, default=DRAWS, help=f"draws per row (default {DRAWS})")
    parser.add_argument("--write", action="store_true", help=f"write the table into {DOC}")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    rows = collect_rows(args.rows)
    alpha = row_alpha(ALPHA_ROWS)
    cells = measure(rows, args.draws, alpha)
    out = table(cells, args.draws, alpha, len(rows)) + "\n\n" + moved_table(cells)
    print(out)
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if args.write:
        write_block(DOC, BLOCK, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
