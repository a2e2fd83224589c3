"""Worlds whose sampled rows repeat: many copies of a generated world's sampled sequences, each with a
seed (and output position) of its own, in one batch beside the world's own sequences.

A copy holds its source sequence's whole model state (every KV block of both caches, its SSM state,
checkpoint and checkpoint position) in blocks and slots of its own, so the step decodes for it the row
it decodes for the source (bit for bit in exact numerics, where every kernel is batch invariant), and
its sampling request is the source's but for its seed and, with `shift`, its output position: `shift`
filler tokens go before the history, which the model never reads (its caches are the positions) and
the sampling reads as one position later. A copy is backed off from speculation (it ticks, proposes
nothing), so a step spends its time on the draws. The world's own sequences stay in the batch as they
were generated; only the copies are draws.

`layout` says where the copies sit in the batch: the batch is ordered by SSM slot (B1), so the slots
the copies take decide their rows. The same copies in another layout are the same requests at other
batch positions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from properties.worlds.row_shaping import FIRST_PLAIN_TOKEN
from properties.worlds.specs import WorldSpec
from properties.worlds.world import World, build_world, copy_seq
from reference.model.state import CacheState
from reference.state import ActiveSeq, AdaptiveSpeculation, SequenceState, SpeculationMode

FILLER = FIRST_PLAIN_TOKEN  # the token a shifted copy's history begins with
BACKED_OFF = AdaptiveSpeculation(mode=SpeculationMode.BACKED_OFF, backoff_remaining=8, serial_steps=3)


@dataclass(slots=True, frozen=True)
class Copy:
    """One draw: a copy of sequence `source` of the world (its index there) with sampling seed `seed`,
    its output position `shift` past the source's."""

    source: int
    seed: int
    shift: int = 0


def room_for(spec: WorldSpec, copies: int) -> WorldSpec:
    """`spec` with slots (and caches sized for them) for its sequences and `copies` more: the world
    `draw_world` copies into. The sequences, weights and everything else stay as drawn."""
    need = max(s.slot_idx for s in spec.seqs) + 1 + copies
    need = max(need, max((s.ssm_slot for s in spec.seqs if s.ssm_slot is not None), default=0) + 1 + copies)
    model = dataclasses.replace(
        spec.model,
        num_slots=max(spec.model.num_slots, need),
        num_blocks=None,
        num_draft_blocks=None,
        stash_capacity=max(spec.model.stash_capacity, len(spec.seqs) + copies)
        if spec.model.stash_capacity >= len(spec.seqs)
        else spec.model.stash_capacity,
    )
    return dataclasses.replace(spec, model=model)


def base_world(spec: WorldSpec, copies: int) -> World:
    """The world of `room_for(spec, copies)`, before any copy: build it once, copy into clones."""
    return build_world(room_for(spec, copies))


def draw_world(
    base: World,
    copies: Sequence[Copy],
    layout: Sequence[int] | None = None,
    own: Sequence[int] | None = None,
    copies_first: bool = False,
) -> World:
    """A clone of `base` with `copies` appended to its sequences and to its bootstrap indices. Copy i
    takes the i-th free slot (and SSM slot) in the order `layout` gives (a permutation of
    range(len(copies)); default: in order). `own`: the world's own bootstrapped sequences that stay in
    the batch (default: all). `copies_first`: the copies go before the world's own sequences in the
    active list (the batch's rows follow the slots either way). Raises ValueError when the world has
    no room (see `room_for`) or a copy's source is not a sequence of the world."""
    world = base.clone()
    if own is not None:
        world.idxs = [i for i in world.idxs if i in set(own)]
    n = len(world.active)
    order = list(range(len(copies))) if layout is None else list(layout)
    if sorted(order) != list(range(len(copies))):
        raise ValueError(f"layout {order} is not a permutation of the {len(copies)} copies")
    slots = _free(range(world.model.cfg.num_slots), (a.seq.slot_idx for a in world.active), len(copies), "slots")
    ssm = _free(
        range(world.model.cfg.num_ssm_slots),
        (a.seq.ssm_slot for a in world.active if a.seq.ssm_slot is not None),
        len(copies),
        "SSM slots",
    )
    used = {b for a in world.active for b in a.seq.block_table}
    dused = {b for a in world.active for b in a.seq.draft_block_table}
    free_blocks = [b for b in range(world.model.cfg.num_blocks) if b not in used]
    free_dblocks = [b for b in range(world.model.cfg.num_draft_blocks) if b not in dused]
    for i, c in enumerate(copies):
        if not 0 <= c.source < n:
            raise ValueError(f"copy {i}: source {c.source} is not one of the world's {n} sequences")
        src = world.active[c.source]
        at = order[i]
        seq = SequenceState(
            slot_idx=slots[at],
            ssm_slot=None if src.seq.ssm_slot is None else ssm[at],
            seq_len=src.seq.seq_len,
            block_table=_take(free_blocks, len(src.seq.block_table), "main"),
            draft_block_table=_take(free_dblocks, len(src.seq.draft_block_table), "drafter"),
        )
        copy_state(world.model, src.seq, seq)
        world.active.append(copied(src, seq, n + i, c))
    world.idxs = sorted(world.idxs + list(range(n, n + len(copies))))
    return copies_ahead(world, n) if copies_first else world


def copies_ahead(world: World, n: int) -> World:
    """`world` with its sequences from index `n` on (the copies) moved before the first `n`, the
    bootstrap indices following them."""
    m = len(world.active) - n
    old_to_new = {i: (i + m if i < n else i - n) for i in range(len(world.active))}
    world.active = world.active[n:] + world.active[:n]
    world.idxs = sorted(old_to_new[i] for i in world.idxs)
    return world


def copied(src: ActiveSeq, seq: SequenceState, seq_id: int, c: Copy) -> ActiveSeq:
    """Sequence `src` as copy `c`: on `seq`, with the copy's seed, `c.shift` filler tokens before its
    history, backed off from speculation."""
    a = copy_seq(src)
    a.seq = seq
    a.seq_id = seq_id
    a.sampling_seed = c.seed
    a.output_tokens = [FILLER] * c.shift + a.output_tokens
    a.output_logprobs = [None] * c.shift + a.output_logprobs
    a.max_tokens = src.max_tokens + c.shift
    a.min_tokens = src.min_tokens + c.shift if src.min_tokens else 0
    a.pending_drafts, a.pending_draft_conf = [], []
    a.adaptive_spec = dataclasses.replace(BACKED_OFF)
    return a


def copy_state(model: CacheState, src: SequenceState, dst: SequenceState) -> None:
    """Copy `src`'s model state into `dst`'s blocks and slots: both caches' blocks (every layer),
    its SSM state and checkpoint, and its checkpoint position."""
    main = (model.kv, src.block_table, dst.block_table)
    for kv, a, b in (main, (model.draft_kv, src.draft_block_table, dst.draft_block_table)):
        for t in (kv.k, kv.v):
            t[:, b] = t[:, a]
    if src.ssm_slot is not None and dst.ssm_slot is not None:
        model.ssm.state[dst.ssm_slot] = model.ssm.state[src.ssm_slot]
        model.ssm.ckpt[dst.ssm_slot] = model.ssm.ckpt[src.ssm_slot]
    model.ssm.ckpt_pos[dst.slot_idx] = model.ssm.ckpt_pos[src.slot_idx]


def _free(space: range, used: object, count: int, what: str) -> list[int]:
    taken = set(used)  # type: ignore[call-overload]
    free = [i for i in space if i not in taken]
    if len(free) < count:
        raise ValueError(f"the world has {len(free)} free {what}, {count} copies need one each (see room_for)")
    return free[:count]


def _take(free: list[int], n: int, what: str) -> list[int]:
    if n > len(free):
        raise ValueError(f"the world has {len(free)} free {what} blocks, a copy needs {n} (see room_for)")
    out = free[:n]
    del free[:n]
    return out
