"""A declared row sampler's draws (`Impl.sampler`, a `reference.row_request.RowSampler`) in the form of a
step's own draws (`properties.sampling.step_draws.Draw`), so that the same oracles judge them
(`properties.sampling.draw_checks`, `draw_case`).

The rows are the ones the reference decodes for the sources of a draw world (its copies decode the
same rows, bit for bit, in exact numerics); each call hands the sampler every copy of every source at
once, the sources' rows interleaved in blocks, each copy with the request the reference makes for it
(`properties.sampling.draw_worlds.copied`: its seed, its output position). A sampler is cheap to call,
so a case draws many more tokens per row than a step's case does.

The declared sampler is a fast path only: every token a step with a declared sampler emits is held to
the sampler's token on the same row and request (`properties.sides.own_noise`), so the step's own
draws inherit what this case shows of the sampler.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from properties.sampling.draw_worlds import Copy, copied
from properties.sampling.step_draws import Draw, Draws, Role, plan_call, row_key
from properties.sides.faults import FaultyModel
from properties.sides.harness import run_step
from properties.worlds.world import World
from reference.row_request import RowRequest, RowSampler, request_for
from reference.sampling import SamplingError
from reference.state import ActiveSeq
from reference.step import step_mtp_bootstrap_per_seq


def source_rows(world: World, sources: Sequence[int]) -> dict[int, torch.Tensor]:
    """The logits row the reference step decodes for each source of `world` (run on a clone), by
    source; a source it decodes no row for is missing."""
    clone = world.clone()
    model = FaultyModel(clone.model)
    run_step(clone, model, step_mtp_bootstrap_per_seq)
    rows = {j: model.rows.get(world.active[j].seq.slot_idx) for j in sources}
    return {j: r for j, r in rows.items() if r is not None}


def requests_of(world: World, copies: Sequence[Copy]) -> list[RowRequest]:
    """The reference's request for each copy (its source's, with the copy's seed and position)."""
    floor, sampling = world.sched.watchdog.min_reasoning_floor, world.verify_ctx.sampling
    out = []
    for i, c in enumerate(copies):
        src: ActiveSeq = world.active[c.source]
        out.append(request_for(copied(src, src.seq, len(world.active) + i, c), floor, sampling))
    return out


def sampler_call(
    sampler: RowSampler,
    world: World,
    rows: dict[int, torch.Tensor],
    copies: Sequence[Copy],
    roles: Sequence[Role],
    call: int,
) -> tuple[list[Draw], str | None]:
    """One call of `sampler` on every copy's row and request, as draws (the batch row as the slot);
    the sampler's error as text (None: none)."""
    requests = requests_of(world, copies)
    logits = torch.stack([rows[c.source] for c in copies])
    keys = {j: row_key(r) for j, r in rows.items()}
    try:
        got = sampler(logits, requests)
    except Exception as e:  # reported with the case
        return [], f"{type(e).__name__}: {e}"
    if len(got) != len(copies):
        return [], f"the sampler returned {len(got)} results for {len(copies)} rows"
    out = []
    for i, (c, tok) in enumerate(zip(copies, got, strict=True)):
        refused = isinstance(tok, SamplingError)
        token = None if refused else int(tok)
        out.append(Draw(c, roles[i], call, i, requests[i], rows[c.source], keys[c.source], token, refused))
    return out, None


def collect_sampler(
    sampler: RowSampler, world: World, sources: Sequence[int], triples: int, calls: int, rng: random.Random
) -> Draws:
    """`calls` calls of `sampler` (`plan_call`'s copies each), their draws together."""
    rows = source_rows(world, sources)
    got = Draws()
    present = [j for j in sources if j in rows]
    for k in range(calls):
        copies, roles = plan_call(present, triples, rng)
        if not copies:
            got.error = got.error or "the reference decoded no row for any source"
            break
        draws, error = sampler_call(sampler, world, rows, copies, roles, k)
        got.draws += draws
        got.calls += 1
        got.error = got.error or error
    return got
