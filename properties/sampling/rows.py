"""Sampled rows from generated worlds: the logits row the reference step decodes for one bootstrapped
sequence, with the request its sampling makes (`reference.row_request.request_for`).

A world comes from the suite's own strategies (`properties.worlds.strategies.world_specs`, the sampled
parameters from `properties.worlds.seq_strategies`), so its rows have the generators' penalties, EOS holds,
grammars, echoed histories, tied weights and near ties (a top-p set on a cumulative boundary,
`properties.worlds.row_shaping`). One bootstrapped sequence is chosen; a greedy one is given the generators'
sampled parameters (temperature, top-k, top-p and, in exact numerics, a near tie), so penalised, held
and grammar rows are sampled too, and the step's `force_temp_zero` is off. The reference step then
runs on the world as `properties.sides.harness` runs it, and the row its model decoded for that sequence
is captured.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from properties.config import RunConfig
from properties.sides.faults import FaultyModel
from properties.sides.harness import run_step
from properties.worlds.seq_strategies import NEAR_TIES, TEMPERATURES, TOP_KS, TOP_PS
from properties.worlds.specs import SeqSpec, WorldSpec
from properties.worlds.strategies import STEP_SPECS, world_specs
from properties.worlds.world import build_world
from reference.row_request import RowRequest, distribution, request_for
from reference.sampling import SamplingError
from reference.step import step_mtp_bootstrap_per_seq

MAX_N = 6  # the largest mix a row is drawn from: one row is used, and the step's cost grows with the mix
SAMPLED_STEPS = STEP_SPECS.map(lambda s: dataclasses.replace(s, force_temp_zero=False))


@dataclass(slots=True, frozen=True)
class SampledRow:
    """Sequence `index` of the world `spec` describes: the logits row [V] the reference decoded for
    its token (on the world's device, in the model's dtype) and its sampling request."""

    spec: WorldSpec
    index: int
    row: torch.Tensor = field(repr=False)
    req: RowRequest
    refusal: str | None = None  # the reference's refusal of the row (the sampler must refuse it alike)

    def describe(self) -> str:
        """The request's parameters and the shape of its distribution, for a report."""
        r = self.req
        if self.refusal is not None:
            return f"seq[{self.index}], output position {r.position}: the reference refuses the row ({self.refusal})"
        p = distribution(self.row, r).cpu()
        top = torch.topk(p, min(4, int((p > 0).sum()))).indices.tolist()
        pen = r.pen
        lines = [
            f"seq[{self.index}] (slot {self.spec.seqs[self.index].slot_idx}), output position {r.position}, "
            f"{self.row.dtype} logits over {self.row.shape[0]} ids",
            f"temperature {r.temperature!r}, top_k {r.top_k}, top_p {r.top_p!r}",
            f"penalties: repetition {pen.repetition!r}, frequency {pen.frequency!r}, presence {pen.presence!r}, "
            f"banned {list(pen.banned_ids)}; history of {len(r.history)} tokens",
            f"EOS hold masks {list(r.eos_mask)}; grammar: {r.grammar.spec if r.grammar is not None else 'none'}",
            f"{int((p > 0).sum())} tokens kept; most likely: " + ", ".join(f"{t} ({float(p[t]):.4g})" for t in top),
        ]
        return "\n".join(lines)


def row_of(spec: WorldSpec, index: int) -> SampledRow | None:
    """Sequence `index`'s row and request in the world `spec` describes, the reference step run on it
    with no faults (with the reference's refusal when `reference.row_request.kept_scores` raises);
    None when the step decoded no row for it or its request is greedy."""
    world = build_world(spec)
    before = world.clone()
    model = FaultyModel(world.model)
    run_step(world, model, step_mtp_bootstrap_per_seq)
    a = before.active[index]
    row = model.rows.get(a.seq.slot_idx)
    if row is None:
        return None
    req = request_for(a, before.sched.watchdog.min_reasoning_floor, before.verify_ctx.sampling)
    if req.greedy:
        return None
    try:
        distribution(row, req)
    except SamplingError as e:
        return SampledRow(spec, index, row, req, str(e))
    return SampledRow(spec, index, row, req)


@st.composite
def sampled_specs(draw: st.DrawFn, run: RunConfig) -> tuple[WorldSpec, int]:
    """A world (mixes of at most `MAX_N` sequences, `force_temp_zero` off) and one of its bootstrapped
    sequences, made a sampled one if it was greedy (module docstring)."""
    small = dataclasses.replace(run, max_n=min(run.max_n, MAX_N))
    spec = draw(world_specs(small, step=SAMPLED_STEPS), label="world")
    index = draw(st.sampled_from(spec.bootstrap), label="sequence")
    s = spec.seqs[index]
    if s.sampling.greedy():
        s = sampled(draw, s, spec.model.exact)
        spec = dataclasses.replace(spec, seqs=(*spec.seqs[:index], s, *spec.seqs[index + 1 :]))
    return spec, index


def sampled(draw: st.DrawFn, s: SeqSpec, exact: bool) -> SeqSpec:
    """`s` with the generators' sampled parameters (and, in exact numerics, their near tie unless it
    has a penalty's)."""
    near_tie = s.near_tie or (draw(NEAR_TIES) if exact else "")
    return dataclasses.replace(
        s, temperature=draw(TEMPERATURES), top_k=draw(TOP_KS), top_p=draw(TOP_PS), near_tie=near_tie
    )


@st.composite
def sampled_rows(draw: st.DrawFn, run: RunConfig) -> SampledRow:
    """A `SampledRow` of a world drawn by `sampled_specs`: the chosen sequence is always decoded and
    sampled (measured: 150 of 150 draws), so a world where it is not is the generators' error."""
    spec, index = draw(sampled_specs(run))
    out = row_of(spec, index)
    assert out is not None, f"sequence {index} of the drawn world decodes no sampled row: {spec.to_json()}"
    return out


def collect_rows(count: int, run: RunConfig | None = None, seed: int = 0) -> list[SampledRow]:
    """Up to `count` distinct `SampledRow`s drawn by `sampled_rows` outside a test (for measurements),
    the same ones for the same `seed`."""
    rows: dict[tuple[str, int], SampledRow] = {}

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(sampled_rows(run or RunConfig()))
    def gather(row: SampledRow) -> None:
        if row.refusal is None:  # a measurement needs a distribution
            rows.setdefault((row.spec.to_json(), row.index), row)

    gather()
    return list(rows.values())
