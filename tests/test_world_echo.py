"""`SeqSpec.echo`: the row's own top-ranked next tokens land in the named history positions, and
nothing else about the world changes."""

from __future__ import annotations

from dataclasses import replace

import torch

from properties.worlds.specs import ModelSpec, SeqSpec, WorldSpec
from properties.worlds.world import build_world

MODEL = ModelSpec()


def world(echo: tuple[int, ...], tool_call_end_at: int | None = None):
    seqs = (
        SeqSpec(n_out=5, repetition=1.3, echo=echo, tool_call_end_at=tool_call_end_at, slot_idx=0, ssm_slot=0),
        SeqSpec(n_out=3, token_seed=9, slot_idx=1, ssm_slot=1),
    )
    return build_world(WorldSpec(model=MODEL, seqs=seqs, bootstrap=(0, 1), cache_seed=3))


def top_tokens(w, k: int) -> list[int]:
    """The first sequence's top-k next tokens (specials excluded), decoded on a copy of the model."""
    a = w.active[0]
    seq = replace(a.seq, block_table=list(a.seq.block_table), draft_block_table=list(a.seq.draft_block_table))
    logits = w.model.clone().decode(a.last_token, seq).float()
    logits[:3] = -torch.inf
    return logits.topk(k).indices.tolist()


def test_echo_writes_the_rows_favourites_best_first_and_changes_nothing_else() -> None:
    plain, echoed = world(()), world((3, 1))
    want = top_tokens(plain, 2)
    got = echoed.active[0].output_tokens
    assert [got[3], got[1]] == want
    assert [got[i] for i in (0, 2, 4)] == [plain.active[0].output_tokens[i] for i in (0, 2, 4)]
    assert echoed.active[0].last_token == plain.active[0].last_token
    assert echoed.active[1].output_tokens == plain.active[1].output_tokens
    assert echoed.active[0].seq == plain.active[0].seq
    assert torch.equal(echoed.model.kv.k, plain.model.kv.k)


def test_echo_skips_the_last_position_the_tool_call_end_and_positions_past_the_history() -> None:
    plain, echoed = world((), tool_call_end_at=2), world((2, 4, 7), tool_call_end_at=2)
    assert echoed.active[0].output_tokens == plain.active[0].output_tokens
