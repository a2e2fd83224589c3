"""What an engine holds must add up: blocks, SSM slots and checkpoints counted against what its running requests own."""

from __future__ import annotations

from collections.abc import Iterable

from properties.sides.mismatch import Mismatch
from reference.engine import Engine


def resource_counts(*engines: Engine) -> Iterable[tuple[str, int, int]]:
    res = [e.resources for e in engines]
    yield "main blocks", res[0].blocks.free_count(), res[1].blocks.free_count()
    yield "drafter blocks", res[0].draft_blocks.free_count(), res[1].draft_blocks.free_count()
    yield "slots", res[0].slots.free_count(), res[1].slots.free_count()
    yield "SSM slots", res[0].ssm_slots.free_count(), res[1].ssm_slots.free_count()


def check_resources(eng: Engine, name: str) -> list[Mismatch]:
    """No block, slot or SSM slot leaked (every one is free or held by a running request) or held by
    two running requests; a finished request holds nothing."""
    out: list[Mismatch] = []
    res, live = eng.resources, [a.seq for a in eng.active]
    for what, tables, alloc in (
        ("main blocks", [s.block_table for s in live], res.blocks),
        ("drafter blocks", [s.draft_block_table for s in live], res.draft_blocks),
    ):
        held = [b for t in tables for b in t]
        if len(set(held)) != len(held):
            out.append(Mismatch(None, f"{name}: {what} held twice", "each block by one request", str(tables)))
        if alloc.free_count() + len(held) != alloc.num_blocks:
            out.append(
                Mismatch(None, f"{name}: {what} leaked", f"{alloc.num_blocks} free or held",
                         f"{alloc.free_count()} free + {len(held)} held")
            )  # fmt: skip
    for what, ids, pool in (
        ("slots", [s.slot_idx for s in live], res.slots),
        ("SSM slots", [s.ssm_slot for s in live if s.ssm_slot is not None], res.ssm_slots),
    ):
        if len(set(ids)) != len(ids) or set(ids) != pool.used_ids() or set(ids) & set(pool.free_ids()):
            out.append(
                Mismatch(None, f"{name}: {what} leaked or shared", f"held {sorted(ids)}",
                         f"in use {sorted(pool.used_ids())}, free {pool.free_ids()}")
            )  # fmt: skip
    return out
