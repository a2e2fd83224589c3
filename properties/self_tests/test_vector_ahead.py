"""The fully batched step's model launches its batched propose ahead (`batched.vector.propose_ahead`): before
the step has read its tokens back, on the device's tokens. That must never change what the model
does. Twin worlds run the same operations after one decode: one model launches the propose ahead,
the other launches nothing. Between the launch and the call, one thing differs from what the launch
assumed (a device token, one past the vocabulary, a position, a row, k, confidences, a table, the
stash, the decode's hidden rows, the drafter cache, a per-sequence propose first or instead, no
stash, no call at all, a bad call token), or nothing; or, before the launch, a decode row the pass
reads is not finite, a drafter table does not cover its row, or (launching nothing) holds a block id
past the cache, so that the call must refuse it. Both must return the same drafts, confidences or
error, and hold the same bits in every buffer. So a propose launched ahead is taken only when it is
exactly the call's, and otherwise leaves nothing behind. The same holds when the decode launches it
(`plan_ahead`), from the argmax its own pass computed.

These are the suite's own parts (`batched.vector`'s model), checked whatever `--impl` names; the
properties hold an implementation under test to the reference (`properties/step/`)."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from batched.vector.model import VectorMtpModel
from properties.config import RunConfig
from properties.worlds.aimed_worlds import ahead_cases
from properties.worlds.specs import WorldSpec
from properties.worlds.world import World, build_world
from reference.errors import ModelError
from reference.model.kernels import argmax_rows

pytestmark = pytest.mark.self_test

# What differs between the launch and the call ("none": the call the launch assumed).
CHANGES = (
    "none",
    "token",
    "device_token_past_vocab",
    "position",
    "drop_row",
    "fewer_drafts",
    "confidences",
    "table",
    "stash_row",
    "stash_rows",
    "hidden_row",
    "draft_kv",
    "multi_first",
    "multi_only",
    "no_stash",
    "no_call",
    "bad_token",
    "nan_row",
    "short_table",
    "bad_block_id",
)


def run_twin(
    world: World, k: int, with_conf: bool, change: str, at: int, launch: bool, planned: bool = False
) -> tuple[Any, list[str]]:
    """One decode of the bootstrap rows, the propose launched ahead (when `launch`: after the decode,
    or, `planned`, by the decode itself, `plan_ahead`), the change, the stash, the batched propose and
    the settle; returns the call's outcome (drafts and confidences, or the error's text, or None)."""
    model = VectorMtpModel.from_model(world.model)
    rows = [world.active[i] for i in world.idxs]
    rows.sort(key=lambda a: a.seq.ssm_slot if a.seq.ssm_slot is not None else a.seq.slot_idx)
    seqs, n = [a.seq for a in rows], len(rows)
    if launch and planned:  # "other_list": planned for a list that the decode is not given
        model.plan_ahead(list(seqs) if change == "other_list" else seqs, k, with_conf)
    if model.device.type == "cuda":  # the decode lands late: a pass that does not wait for it reads stale rows
        torch.cuda._sleep(10_000_000)
    logits = model.decode_batch([a.last_token for a in rows], seqs, 0)
    tokens = argmax_rows(logits)
    j = at % n
    if launch and planned:
        passes = model._ahead_passes.passes.values() if model._ahead_passes is not None else ()
        launched = sum(p.calls for p in passes)
        assert launched == (change != "other_list"), f"{launched} passes launched by the decode for {n} rows, k={k}"
        assert (model._ahead is not None) == launched, "a planned pass the checks accept must stay pending"
    if change == "nan_row":  # before the launch: the pass reads it, and must be refused and undone
        model.hidden_states[j] = float("nan")
    if change == "short_table":  # before the launch: a drafter table that does not cover the row's position,
        # which the pass survives (it reads block 0 past the table's end) and the checks refuse once it runs
        del seqs[j].draft_block_table[seqs[j].seq_len // model.cfg.block_size :]
    if change == "bad_block_id":  # before the launch: a block id past the drafter cache, which no pass may read
        seqs[j].draft_block_table[-1] = model.cfg.num_draft_blocks
    if launch and not planned:
        ahead = tokens.clone()
        if change == "token":  # the device's token differs from the one the call brings
            ahead[j] = (ahead[j] + 1) % model.cfg.vocab_size
        elif change == "device_token_past_vocab":  # as a refused row's token may be
            ahead[j] = model.cfg.vocab_size + 7
        model.propose_ahead(ahead, seqs, k, with_conf)
        passes = model._ahead_passes.passes.values() if model._ahead_passes is not None else ()
        launched = sum(p.calls for p in passes)
        assert launched == (change != "bad_block_id"), f"{launched} passes launched ahead for {n} rows, k={k}"
        refused = change in ("short_table", "bad_block_id")
        assert (model._ahead is None) == refused, "a pass the checks refuse must be undone at once"
    call_tokens, call_seqs, call_k, conf = tokens.tolist(), list(seqs), k, with_conf
    if model.device.type == "cuda":  # the writes below go around the model: after its queued work, not during it
        torch.cuda.synchronize()
    positions = [s.seq_len for s in seqs]
    if change == "drop_row":
        del call_tokens[j], call_seqs[j], positions[j]
    elif change == "fewer_drafts":
        call_k = k - 1
    elif change == "confidences":
        conf = not with_conf
    elif change == "table":  # a block of the row's drafter table swapped for another row's
        t, u = seqs[j].draft_block_table, seqs[(j + 1) % n].draft_block_table
        t[positions[j] // model.cfg.block_size], u[0] = u[0], t[positions[j] // model.cfg.block_size]
    elif change == "hidden_row":
        model.hidden_states[j] = model.hidden_states[j].flip(0)  # not a scaling, which a norm undoes
    elif change == "draft_kv":  # the block the row's drafts go into, and its earlier positions
        block = seqs[j].draft_block_table[positions[j] // model.cfg.block_size]
        model.draft_kv.k[:, block] = model.draft_kv.k[:, block].flip(-1)
        model.draft_kv.v[:, block] = model.draft_kv.v[:, block].flip(-1)
    elif change == "bad_token":
        call_tokens[j] = model.cfg.vocab_size
    elif change == "position":
        positions[j] += 1
    elif change in ("multi_first", "multi_only"):
        with suppress(ModelError):  # an error changes nothing; what matters is what it did before the call
            model.run_mtp_propose_multi(call_tokens[j], positions[j], 1, seqs[j], 0, None)
    if change != "no_stash":
        model.stash_verify_hidden_rows(list(range(n)), 0)
    if change == "stash_row":
        model.stash[j] = model.stash[j].flip(0)  # type: ignore[index]
    outcome: Any = None
    if change not in ("no_call", "multi_only"):
        stash_idx = [r for r in range(n) if not (change == "drop_row" and r == j)]
        if change == "stash_rows":  # two members read each other's stash rows
            stash_idx[j], stash_idx[(j + 1) % n] = stash_idx[(j + 1) % n], stash_idx[j]
        conf_out: list[list[float]] | None = [] if conf else None
        try:
            drafts = model.run_mtp_propose_batched(call_tokens, positions, stash_idx, call_k, call_seqs, 0, conf_out)
            outcome = (drafts, conf_out)
        except ModelError as e:
            outcome = str(e)
    model.settle_ahead()
    if launch and change == "none":
        assert model.taken_ahead == 1, "the call that the launch assumed did not take it"
    if launch and change == "other_list":
        assert model.taken_ahead == 0, "a plan for another list was taken"
    return outcome, [s.seq_len for s in seqs]


# No `@covers`: this is the fully batched step's model's own contract, not a behaviour of the step, and
# a mutant of the step's behaviours must not run it before the properties that can kill it.
@pytest.mark.parametrize("change", CHANGES)
@settings(max_examples=max(3, settings.default.max_examples // 8))  # per change: a share of the profile
@given(data=st.data())
def test_a_propose_launched_ahead_changes_nothing(run: RunConfig, data: st.DataObject, change: str) -> None:
    case = data.draw(ahead_cases(run), label="case")
    check_twins(case, change, planned=False)


def check_twins(case: tuple[WorldSpec, int, bool, int], change: str, planned: bool) -> None:
    """The twin that launches (after its decode, or `planned`: by its decode) and the twin that
    launches nothing return the same outcome and hold the same bits in every buffer."""
    spec, k, with_conf, at = case
    launched, plain = build_world(spec), build_world(spec)
    got = run_twin(launched, k, with_conf, change, at, launch=True, planned=planned)
    want = run_twin(plain, k, with_conf, change, at, launch=False)
    if launched.model.device.type == "cuda":
        torch.cuda.synchronize()
    where = f"k={k} confidences={with_conf} change={change} row={at % len(spec.seqs)}"
    how = "launched by the decode" if planned else "launched ahead"
    assert got == want, f"{where}: {how} {got!r}, launched nothing {want!r}"
    differ = launched.model.diff_state(plain.model)
    assert not differ, f"{where}: buffers differ after the call: {differ}"


# What differs between a launch by the decode and the call: the changes made after a launch, and a plan
# for another list than the decode's (nothing may launch).
PLANNED_CHANGES = (
    *(c for c in CHANGES if c not in ("token", "device_token_past_vocab", "nan_row", "short_table", "bad_block_id")),
    "other_list",
)


@pytest.mark.parametrize("change", PLANNED_CHANGES)
@settings(max_examples=max(3, settings.default.max_examples // 8))
@given(data=st.data())
def test_a_propose_the_decode_launches_changes_nothing(run: RunConfig, data: st.DataObject, change: str) -> None:
    case = data.draw(ahead_cases(run), label="case")
    check_twins(case, change, planned=True)
