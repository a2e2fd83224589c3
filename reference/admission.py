"""Admission and release of requests: slots, SSM slots and blocks, and the prompt's prefill.

Blocks are reserved at admission and allocated as the sequence grows: before every step the engine
extends a sequence's tables to cover the positions that step may write (`grow_tables`); the model
never allocates. A request is admitted only when its whole reservation fits, so growing never runs
out; an allocation that fails anyway is a `ModelError` raised before anything changed.

What the caches hold for an admitted request:
- main KV: positions 0..T-2 of its T prompt tokens (the last prompt token is the bootstrap's to
  decode), its SSM slot (cleared first) holding the state after them;
- drafter KV: positions 0..T-1, position p holding the entry for (main hidden of p - 1, token p)
  (zeros for p = 0), so the first propose reads only entries of this request;
- checkpoint: the SSM state after T-2 at position T-1, a consistent pair a rollback may restore.
Every drafter block is cleared when it is allocated: a drafter position the request has not written
reads as a blank entry, never as another request's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reference.errors import ModelError
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import BlockAllocator
from reference.request import Request, active_seq_for
from reference.slot_pool import SlotPool
from reference.state import ActiveSeq, SequenceState


@dataclass(slots=True)
class Resources:
    """What requests are given: main and drafter blocks, sequence slots and SSM slots."""

    blocks: BlockAllocator
    draft_blocks: BlockAllocator
    slots: SlotPool
    ssm_slots: SlotPool

    @classmethod
    def for_model(cls, model: TinyMtpModel) -> Resources:
        """Every block and slot of `model`. SSM slots go out from the highest id down, so that the
        order by SSM slot (the batched decode's row order) differs from the order by slot."""
        cfg = model.cfg
        return cls(
            BlockAllocator(cfg.num_blocks, cfg.block_size),
            BlockAllocator(cfg.num_draft_blocks, cfg.block_size),
            SlotPool("sequence slot", range(cfg.num_slots)),
            SlotPool("SSM slot", range(cfg.num_ssm_slots - 1, -1, -1)),
        )


def blocks_for(positions: int, block_size: int) -> int:
    return math.ceil(positions / block_size)


def reserved_blocks(live: list[tuple[ActiveSeq, Request]], block_size: int) -> tuple[int, int]:
    """(main, drafter) blocks the live requests may still allocate."""
    main = sum(blocks_for(r.positions(), block_size) - len(a.seq.block_table) for a, r in live)
    draft = sum(blocks_for(r.positions(), block_size) - len(a.seq.draft_block_table) for a, r in live)
    return main, draft


def can_admit(res: Resources, req: Request, live: list[tuple[ActiveSeq, Request]]) -> bool:
    """Whether `req` fits beside the `live` requests: a free slot, a free SSM slot if it wants one,
    and its whole reservation of main and drafter blocks on top of theirs."""
    bs = res.blocks.block_size
    need = blocks_for(req.positions(), bs)
    main, draft = reserved_blocks(live, bs)
    return (
        res.slots.free_count() > 0
        and (not req.ssm or res.ssm_slots.free_count() > 0)
        and res.blocks.free_count() - main >= need
        and res.draft_blocks.free_count() - draft >= need
    )


def admit(model: TinyMtpModel, res: Resources, req: Request, seq_id: int) -> ActiveSeq:
    """Give `req` a slot, an SSM slot (if it wants one) and the blocks of its prompt, and prefill it
    (see the module docstring). The caller checked `can_admit`; ModelError if something runs out
    anyway, ValueError for a request the model cannot hold (`Request.check`)."""
    cfg = model.cfg
    req.check(cfg.vocab_size, cfg.max_seq_len)
    n = len(req.prompt)
    if res.slots.free_count() == 0 or (req.ssm and res.ssm_slots.free_count() == 0):
        raise ModelError(f"admit request {seq_id}: no free slot")
    bs = res.blocks.block_size
    table = res.blocks.alloc(blocks_for(n, bs))
    try:
        draft_table = res.draft_blocks.alloc(blocks_for(n, bs))
    except ModelError:
        res.blocks.free(table)
        raise
    seq = SequenceState(res.slots.take(), res.ssm_slots.take() if req.ssm else None, 0, table, draft_table)
    clear_draft_blocks(model, draft_table)
    clear_ssm_state(model, seq)
    prefill_prompt(model, seq, list(req.prompt))
    return active_seq_for(req, seq_id, seq, cfg.vocab_size)


def prefill_prompt(model: TinyMtpModel, seq: SequenceState, prompt: list[int]) -> None:
    """Main cache through prompt[:-1], drafter cache through the whole prompt, checkpoint at
    position T-1 (the module docstring). The prompt runs one token at a time, each prefill handing
    its hidden state to the next one's drafter entry, so every position is what a decode gives (a
    multi-token prefill scans the recurrent layer, which a sequence without an SSM slot does not).
    The last prompt token runs through the model once, to write its drafter entry; the checkpoint
    then takes the main model back to before it."""
    prev_hidden = None
    for tok in prompt[:-1]:
        prev_hidden = model.prefill(seq, [tok], prev_hidden)[-1]
    model.start_checkpoint_async(seq)
    model.prefill(seq, prompt[-1:], prev_hidden)
    model.restore_checkpoint(seq)


def clear_ssm_state(model: TinyMtpModel, seq: SequenceState) -> None:
    """A new request's recurrent state starts at zero, as in a fresh model (the model has no
    operation for it: this is the scheduler resetting a slot it hands out)."""
    if seq.ssm_slot is not None:
        model.ssm.state[seq.ssm_slot].zero_()


def clear_draft_blocks(model: TinyMtpModel, blocks: list[int]) -> None:
    """Blank (zero) drafter entries in freshly allocated blocks."""
    if blocks:
        model.draft_kv.k[:, blocks] = 0
        model.draft_kv.v[:, blocks] = 0


def grow_tables(model: TinyMtpModel, res: Resources, a: ActiveSeq, req: Request, ladder_nd: int) -> None:
    """Extend the tables of unfinished `a` over the positions this step may write: the main cache
    through seq_len + its pending drafts (a bootstrap decodes seq_len, a verify seq_len..seq_len+k);
    the drafter through seq_len + 1 + max(ladder, k) (a bootstrap proposes from seq_len + 1, a
    verify's rollback writes up to seq_len + k + 1), both capped at the positions the request can
    occupy. New drafter blocks are cleared."""
    if a.finished:
        return
    bs, cap, k = res.blocks.block_size, req.positions(), len(a.pending_drafts)
    main_need = blocks_for(min(a.seq.seq_len + 1 + k, cap), bs) - len(a.seq.block_table)
    draft_need = blocks_for(min(a.seq.seq_len + 2 + max(ladder_nd, k), cap), bs) - len(a.seq.draft_block_table)
    if main_need > 0:
        a.seq.block_table += res.blocks.alloc(main_need)
    if draft_need > 0:
        new = res.draft_blocks.alloc(draft_need)
        clear_draft_blocks(model, new)
        a.seq.draft_block_table += new


def release(res: Resources, a: ActiveSeq) -> None:
    """Return every block and slot of `a` and empty its tables (a freed request holds nothing).
    A block or slot that is not allocated (a double free) is a ModelError from its allocator."""
    seq = a.seq
    res.blocks.free(seq.block_table)
    seq.block_table = []
    res.draft_blocks.free(seq.draft_block_table)
    seq.draft_block_table = []
    res.slots.free(seq.slot_idx)
    if seq.ssm_slot is not None:
        res.ssm_slots.free(seq.ssm_slot)
