"""The preconditions of `decode_batch` and the batched propose for all rows at once.

A pass over plain lists (a few comprehensions, no call per row) that accepts only inputs the per-row
checks (`BatchedMtpModel._check_decode_batch`, `_check_propose_batched`) accept: it is stricter
where that is simpler (an int subclass such as bool is not taken). Whatever it does not accept goes
to the per-row checks, which raise with the message that names the row and the value at fault.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from batched.propose_call import ProposeCall
from batched.vector.int_pack import packed
from reference.model.config import ModelConfig
from reference.state import SequenceState


def ints_in(values: Sequence[object], lo: int, hi: int | None = None) -> bool:
    """Every value a plain int with lo <= value (< hi when given)."""
    if not values:
        return True
    if {*map(type, values)} != {int}:  # the types in C, not a generator's call per value
        return False
    return min(values) >= lo and (hi is None or max(values) < hi)  # type: ignore[type-var,operator]


def block_ids_in(tables: Sequence[Sequence[int]], num_blocks: int) -> bool:
    """Every entry of every table an integer block id in 0..num_blocks-1."""
    flat: list[object] = []
    for t in tables:
        flat += t  # one list, then one conversion: faster than converting a chain
    if not flat:
        return True
    try:
        ids = packed(flat)  # type: ignore[arg-type]
    except TypeError:  # an entry that is not an integer in int64 range, as array("q") refuses
        return False
    lo, hi = ids.aminmax()  # one reduction: min and max over Python ints would box every entry again
    return int(lo) >= 0 and int(hi) < num_blocks


def slots_ok(cfg: ModelConfig, seqs: Sequence[SequenceState]) -> bool:
    """Sequence slots distinct and in range; SSM slots (where present) distinct and in range."""
    slots = [s.slot_idx for s in seqs]
    ssm = [s.ssm_slot for s in seqs if s.ssm_slot is not None]
    return (
        ints_in(slots, 0, cfg.num_slots)
        and len(set(slots)) == len(slots)
        and ints_in(ssm, 0, cfg.num_ssm_slots)
        and len(set(ssm)) == len(ssm)
    )


def decode_batch_ok(cfg: ModelConfig, tokens: list[int], seqs: list[SequenceState], rank: int) -> bool:
    """True only when `BatchedMtpModel._check_decode_batch` accepts (see the module docstring)."""
    n, bs = len(seqs), cfg.block_size
    if rank != 0 or not 1 <= n <= cfg.max_batch_rows or len(tokens) != n:
        return False
    if not (ints_in(tokens, 0, cfg.vocab_size) and slots_ok(cfg, seqs)):
        return False
    lens = [s.seq_len for s in seqs]
    tables = [s.block_table for s in seqs]
    if not ints_in(lens, 0, cfg.max_seq_len) or any(len(t) * bs <= p for t, p in zip(tables, lens, strict=True)):
        return False
    if not block_ids_in(tables, cfg.num_blocks):
        return False
    keys = [s.ssm_slot if s.ssm_slot is not None else s.slot_idx for s in seqs]
    if keys != sorted(keys):
        return False
    return len({t[p // bs] * bs + p % bs for t, p in zip(tables, lens, strict=True)}) == n


def propose_batch_ok(
    cfg: ModelConfig, stash: torch.Tensor | None, meta_stride: int, call: ProposeCall, rank: int
) -> bool:
    """True only when `BatchedMtpModel._check_propose_batched` accepts (see the module docstring)."""
    tokens, positions, stash_idx, k, seqs = call.tokens, call.positions, call.stash_idx, call.k, call.seqs
    n, bs = len(seqs), cfg.block_size
    if rank != 0 or not 1 <= n <= cfg.max_batch_rows or not len(tokens) == len(positions) == len(stash_idx) == n:
        return False
    if stash is None or not ints_in(stash_idx, 0, cfg.stash_capacity):
        return False
    if type(k) is not int or not 0 <= k <= cfg.max_batched_drafts:
        return False
    if not (ints_in(tokens, 0, cfg.vocab_size) and slots_ok(cfg, seqs) and ints_in(positions, 0)):
        return False
    tables = [s.draft_block_table for s in seqs]
    if any(len(t) > meta_stride for t in tables):
        return False
    if k == 0:
        return True
    if max(positions) + k - 1 >= cfg.draft_span:
        return False
    if any(len(t) * bs <= p + k - 1 for t, p in zip(tables, positions, strict=True)):
        return False
    if not block_ids_in(tables, cfg.num_draft_blocks):
        return False
    # The writes are distinct when no two (member, logical block) pairs they touch share a physical
    # block (within one pair the offsets differ): one entry per block, not per write. Else count exactly.
    touched = [t[b] for t, p in zip(tables, positions, strict=True) for b in range(p // bs, (p + k - 1) // bs + 1)]
    if len(set(touched)) == len(touched):
        return True
    writes = {t[q // bs] * bs + q % bs for t, p in zip(tables, positions, strict=True) for q in range(p, p + k)}
    return len(writes) == n * k
