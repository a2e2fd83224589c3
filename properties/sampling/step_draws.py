"""The implementation's own draws: its step run again and again on a draw world
(`properties.sampling.draw_worlds`), each copy's emitted token kept with the row it was drawn from.

Per call, each source sequence gets `triples` triples of copies and one twin:
- a base copy with a fresh 63-bit seed;
- its seed-bits partner: the base's seed with other bits above bit 31 (the same low 32 bits), at the
  same position: a sampler that keeps 32 bits of a seed draws the base's noise for it;
- its position partner: the base's seed one output position later: a sampler that ignores the
  position draws the base's noise for it;
- one twin of the first base: the same seed and position at another batch row, which must draw the
  same token from the same row (seed invariance within a call).
Base copies and partners are independent draws of their rows' distributions under a correct sampler
(the statistical oracles' input, `properties.sampling.draw_checks`); a twin repeats its base and is
not a draw of its own. Every call draws new seeds from one `random.Random`, so a case replays from
its seed.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from properties.impl import Impl
from properties.sampling.draw_worlds import Copy, draw_world
from properties.sides.faults import FaultyModel
from properties.sides.harness import run_step
from properties.worlds.world import World, copy_seq
from reference.row_request import RowRequest, request_for

SEED_BITS = 63  # seeds an engine accepts: non-negative 64-bit integers
LOW_BITS = 32


@dataclass(slots=True, frozen=True)
class Role:
    """What a copy is for: "base", "bits" or "position" (a partner of the base copy `of`), or "twin"
    (the base `of` again at another batch row)."""

    kind: str
    of: int | None = None  # the index of the base copy in the same call


@dataclass(slots=True)
class Draw:
    """One copy's outcome in one call: its copy and role, the slot it sat in, the request the
    reference makes for it, the logits row the implementation decoded for it (None: none), a
    fingerprint of that row's bits, the token it emitted (None: none), and whether it finished."""

    copy: Copy
    role: Role
    call: int
    slot: int
    request: RowRequest
    row: torch.Tensor | None
    row_key: bytes
    token: int | None
    finished: bool


@dataclass(slots=True)
class Draws:
    """Every call's draws, and the error any call's step raised (the first)."""

    draws: list[Draw] = field(default_factory=list)
    calls: int = 0
    error: str | None = None


def plan_call(sources: Sequence[int], triples: int, rng: random.Random) -> tuple[list[Copy], list[Role]]:
    """The copies of one call (module docstring), sources in turn, and their roles."""
    copies: list[Copy] = []
    roles: list[Role] = []
    for j in sources:
        first = None
        for _ in range(triples):
            seed = rng.getrandbits(SEED_BITS)
            base = len(copies)
            first = base if first is None else first
            high = rng.randrange(1, 1 << (SEED_BITS - LOW_BITS))
            copies += [Copy(j, seed), Copy(j, (seed & ((1 << LOW_BITS) - 1)) | (high << LOW_BITS)), Copy(j, seed, 1)]
            roles += [Role("base"), Role("bits", base), Role("position", base)]
        if first is not None:
            copies.append(copies[first])
            roles.append(Role("twin", first))
    return copies, roles


def row_key(row: torch.Tensor | None) -> bytes:
    """A fingerprint of a row's bits (equal rows, equal keys)."""
    if row is None:
        return b""
    return hashlib.blake2b(row.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes(), digest_size=16).digest()


@dataclass(slots=True, frozen=True)
class Arrangement:
    """Where one call's copies sit: the order they take the free slots in (`layout`, None: in
    order), which of the world's own bootstrapped sequences stay in the batch (None: all), and
    whether the copies go first in the active list (`properties.sampling.draw_worlds.draw_world`)."""

    layout: tuple[int, ...] | None = None
    own: tuple[int, ...] | None = None
    copies_first: bool = False


def run_call(
    impl: Impl,
    base: World,
    copies: Sequence[Copy],
    roles: Sequence[Role],
    call: int,
    arrangement: Arrangement = Arrangement(),
) -> tuple[list[Draw], str | None]:
    """The implementation's step once on `base` with `copies` (as `arrangement` places them), and
    each copy's draw; the step's error as text (None: none)."""
    world = draw_world(base, copies, arrangement.layout, arrangement.own, arrangement.copies_first)
    n = len(base.active)
    floor, sampling = world.sched.watchdog.min_reasoning_floor, world.verify_ctx.sampling
    by_id = {a.seq_id: a for a in world.active}  # copy i is sequence n + i wherever it sits
    before = [copy_seq(by_id[n + i]) for i in range(len(copies))]
    # the requests hold copies of the grammar matchers, which emitting a token advances
    requests = [request_for(a, floor, sampling) for a in before]
    world.model = impl.prepare_model(world.model)
    world.model.poison_scratch()
    model = FaultyModel(world.model)
    side = run_step(world, model, impl.step)
    out: list[Draw] = []
    for i, c in enumerate(copies):
        a, b = by_id[n + i], before[i]
        row = model.rows.get(b.seq.slot_idx)
        length = len(b.output_tokens)
        tok = a.output_tokens[length] if len(a.output_tokens) > length else None
        out.append(Draw(c, roles[i], call, b.seq.slot_idx, requests[i], row, row_key(row), tok, a.finished))
    error = None if side.error is None else f"{type(side.error).__name__}: {side.error}"
    return out, error


def collect(impl: Impl, base: World, sources: Sequence[int], triples: int, calls: int, rng: random.Random) -> Draws:
    """`calls` calls of the step (`plan_call` each), their draws together."""
    got = Draws()
    for k in range(calls):
        copies, roles = plan_call(sources, triples, rng)
        draws, error = run_call(impl, base, copies, roles, k)
        got.draws += draws
        got.calls += 1
        got.error = got.error or error
    return got
