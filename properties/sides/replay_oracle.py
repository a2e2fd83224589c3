"""The replay oracle: the implementation's own numbers, and every decision it made on them.

The harness captures the implementation's numbers: the logits row of every token decision (what its
decode returned, by sequence) and the drafter row of every draft (`reference.capture`). Then:
1. rows: each is within the rounding tolerance of the reference's row for the same decision
   (`properties.tolerance`; bit-equal in exact numerics);
2. replay: its token (or its sampling error), logprobs, drafts and draft confidences are exactly what
   the reference semantics give on its own rows: the same penalties, masks, history, temperature,
   cuts, counter-based noise and tie rule. A decision that fails this is a bug whatever the margin
   (wrong noise, a greedy token for a sampled row, a mask applied in place, a cut off by one);
3. divergence: where its decision differs from the reference's, and 1 and 2 hold there, the
   reference's margin (its choice over the implementation's, in the decision's own units: logits
   for an argmax and top-k, temperature-scaled scores for a sampled token, probability mass for a
   top-p cut) must be within what the rows' measured difference can move it by; then the reference
   is forced onto the implementation's choice (teacher forcing) and the comparison goes on
   downstream. Anything else stays a difference the comparator reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from properties.sides.mismatch import Mismatch, short
from properties.sides.own_noise import own_sampled, own_token_replay
from properties.sides.side_by_side import Replay, SideBySide, bootstrapped, emitted
from properties.tolerance import COMPUTE_ROUNDING, Tolerance, differing, logprobs_match, row_difference
from properties.worlds.world import copy_seq
from reference.decisions import DecisionLog, argmax_lowest
from reference.errors import ModelError
from reference.logprobs import extract_single_logprobs
from reference.penalties import PositionKind, penalty_params_for
from reference.sample_step import sample_for_seq
from reference.state import ActiveSeq

CUT_KINDS = ("topk", "topp")


class _ArgmaxFails:
    """The model with its fast-greedy argmax failing: the fault the implementation's sampling of a
    row met (translated onto the reference), so its replay meets it too."""

    def __init__(self, model: object) -> None:
        self._model = model

    def argmax_on_device(self, row: torch.Tensor) -> int:
        raise ModelError("argmax_on_device: injected fault")

    def __getattr__(self, name: str) -> object:
        return getattr(self._model, name)


def replay_token(sbs: SideBySide, b: ActiveSeq, row: torch.Tensor) -> Replay:
    """The reference semantics of the step's sampling for sequence `b` (as before the step) on `row`,
    with the faults the implementation's sampling of it met (`Translation.seq_faults`)."""
    a = copy_seq(b)
    world = sbs.before
    model = world.model
    slot = b.seq.slot_idx
    if any(f.op == "argmax_on_device" and f.slot == slot for f in sbs.translation.seq_faults):
        model = _ArgmaxFails(model)
    pen = penalty_params_for(a, PositionKind.VERIFY, world.sched.watchdog.min_reasoning_floor)
    log = DecisionLog(keep_scores=True)
    with log:
        try:
            tok = sample_for_seq(model, a, row, pen, world.verify_ctx)
        except ModelError as e:
            return Replay(None, str(e), log)
    k = a.top_logprobs
    lp = extract_single_logprobs(world.model, row, tok, k) if k is not None else None
    return Replay(tok, None, log, lp)


def replay_of(sbs: SideBySide, slot: int) -> Replay | None:
    """The replay of sequence `slot`'s token on the implementation's row (computed once per run);
    None when the implementation decoded no row for it."""
    if slot not in sbs.replays:
        row = sbs.impl.model.rows.get(slot)
        if row is None:
            return None
        b = next(a for a in sbs.before.active if a.seq.slot_idx == slot)
        sbs.replays[slot] = replay_token(sbs, b, row)
    return sbs.replays[slot]


def replay_mismatches(sbs: SideBySide) -> list[Mismatch]:
    """Check 2: every decision of the implementation against the reference semantics on its own rows."""
    out: list[Mismatch] = []
    rows = sbs.impl.model.rows
    for b, a in bootstrapped(sbs):
        slot = b.seq.slot_idx
        if slot in rows:
            out += _token_replay(sbs, b, a)
        out += _draft_replay(sbs, b, a)
    return out


def own_draw_mismatches(sbs: SideBySide) -> list[Mismatch]:
    """Check 2 on the implementation's own draws alone (exact numerics, where every other decision is
    bit-equal to the reference's anyway): each against its support and its declared sampler."""
    out: list[Mismatch] = []
    for b, a in bootstrapped(sbs):
        tok = emitted(b, a)
        if tok is not None and b.seq.slot_idx in sbs.impl.model.rows and own_sampled(sbs, b):
            out += own_token_replay(sbs, b, a, tok)
    return out


def _token_replay(sbs: SideBySide, b: ActiveSeq, a: ActiveSeq) -> list[Mismatch]:
    r = replay_of(sbs, b.seq.slot_idx)
    assert r is not None
    tok = emitted(b, a)
    ids = ("B5", "B6", "B8", "B9")
    if tok is None and r.token is not None and not a.finished:
        return []  # nothing sampled: the decode's outcome is the comparator's to judge
    if tok is None and r.token is not None:
        return [Mismatch(b.seq_id, "token (replayed on its own row)", f"token {r.token}", "finished, no token", ids)]
    if tok is not None and r.token is None:
        return [Mismatch(b.seq_id, "token (replayed on its own row)", f"refused: {r.error}", f"token {tok}", ids)]
    if tok is None:
        return []
    if own_sampled(sbs, b):  # every own draw, also one that happens to be the reference's
        return own_token_replay(sbs, b, a, tok)
    if tok != r.token:
        return [Mismatch(b.seq_id, "token (replayed on its own row)", f"token {r.token}", f"token {tok}", ids)]
    lp = a.output_logprobs[len(b.output_tokens)]
    if not logprobs_match(lp, r.logprobs):
        return [Mismatch(b.seq_id, "logprobs (replayed on its own row)", short(r.logprobs), short(lp), ("B10",))]
    return []


def _draft_replay(sbs: SideBySide, b: ActiveSeq, a: ActiveSeq) -> list[Mismatch]:
    if a.pending_drafts == b.pending_drafts:
        return []
    out: list[Mismatch] = []
    slot, pos = a.seq.slot_idx, a.seq.seq_len
    for i, d in enumerate(a.pending_drafts):
        row = sbs.impl.draft_rows.get((slot, pos, i))
        if row is None:
            out.append(
                Mismatch(b.seq_id, f"draft {i} (replayed)", "a drafter row the draft was decided on", "none", ("B19",))
            )
            break
        want = argmax_lowest(row)
        if d != want:
            out.append(
                Mismatch(b.seq_id, f"draft {i} (replayed on its own drafter row)", str(want), str(d), ("B17", "B19"))
            )
            break
        if i < len(a.pending_draft_conf):
            conf = float(torch.softmax(row.float(), dim=-1)[d])
            if abs(a.pending_draft_conf[i] - conf) > COMPUTE_ROUNDING[torch.float32]:
                out.append(
                    Mismatch(
                        b.seq_id,
                        f"draft {i} confidence (replayed on its own drafter row)",
                        f"{conf:.8g}",
                        f"{a.pending_draft_conf[i]:.8g}",
                        ("B18", "D4"),
                    )
                )
    return out


def row_mismatches(sbs: SideBySide) -> list[Mismatch]:
    """Check 1: the implementation's rows against the reference's, for every token decision and
    every draft both sides made from the same inputs."""
    rtol = Tolerance.of(sbs.spec.model).rtol
    seq_of = {a.seq.slot_idx: a.seq_id for a in sbs.before.active}
    ref_rows, impl_rows = sbs.ref.model.rows, sbs.impl.model.rows
    pairs: list[RowPair] = []
    for b, _ in bootstrapped(sbs):
        slot = b.seq.slot_idx
        if slot in ref_rows and slot in impl_rows:
            # a bad-row fault's survivors were computed with the whole row: its scale is theirs
            scale = sbs.ref.model.unmasked_rows.get(slot)
            pairs.append(RowPair(b.seq_id, "logits row", ref_rows[slot], impl_rows[slot], scale, ("B1", "B2")))
    for key, row in sbs.impl.draft_rows.items():
        ref = sbs.ref.draft_rows.get(key)
        if ref is not None and _same_inputs(sbs, key):
            scale = sbs.ref.unmasked_draft_rows.get(key)
            pairs.append(RowPair(seq_of.get(key[0]), f"drafter row of draft {key[2]}", ref, row, scale, ("B17",)))
    return [_row_mismatch(p.seq_id, p.what, p.ref, p.impl, p.ids) for p in pairs_beyond(pairs, rtol)]


@dataclass(slots=True, frozen=True)
class RowPair:
    """One row both sides computed: whose, what it is, the two rows, the row the tolerance's scale
    comes from (None: the reference row), and the behaviour ids a difference points at."""

    seq_id: int | None
    what: str
    ref: torch.Tensor
    impl: torch.Tensor
    scale_from: torch.Tensor | None
    ids: tuple[str, ...]


def pairs_beyond(pairs: list[RowPair], rtol: float) -> list[RowPair]:
    """The pairs whose rows differ beyond `rtol` (`properties.tolerance.differing`, one unit per row),
    in order. Rows of one shape and dtype are checked in one stacked pass and one host read: each row
    is its own unit, so stacking changes no verdict."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, p in enumerate(pairs):
        groups.setdefault((tuple(p.ref.shape), p.ref.dtype, tuple(p.impl.shape), p.impl.dtype), []).append(i)
    bad: set[int] = set()
    for members in groups.values():
        if pairs[members[0]].ref.shape != pairs[members[0]].impl.shape:
            bad.update(members)
            continue
        ref = torch.stack([pairs[i].ref for i in members])
        impl = torch.stack([pairs[i].impl.to(ref.device) for i in members])
        scale = None
        if any(pairs[i].scale_from is not None for i in members):
            scale = torch.stack(
                [(pairs[i].ref if pairs[i].scale_from is None else pairs[i].scale_from).to(ref.device) for i in members]
            )
        flags = differing(ref, impl, rtol, scale).flatten(1).any(dim=1).tolist()
        bad.update(i for i, f in zip(members, flags, strict=True) if f)
    return [p for i, p in enumerate(pairs) if i in bad]


def _same_inputs(sbs: SideBySide, key: tuple[int, int, int]) -> bool:
    """Whether both sides fed draft `key`'s step the same token: every earlier draft agrees."""
    slot, _, i = key
    ref_a = next((a for a in sbs.ref.world.active if a.seq.slot_idx == slot), None)
    impl_a = next((a for a in sbs.impl.world.active if a.seq.slot_idx == slot), None)
    if ref_a is None or impl_a is None or ref_a.last_token != impl_a.last_token:
        return False
    return ref_a.pending_drafts[:i] == impl_a.pending_drafts[:i]


def _row_mismatch(
    seq_id: int | None, what: str, ref: torch.Tensor, impl: torch.Tensor, ids: tuple[str, ...]
) -> Mismatch:
    if ref.shape != impl.shape:
        return Mismatch(seq_id, f"{what} (shape)", str(tuple(ref.shape)), str(tuple(impl.shape)), ids)
    return Mismatch(
        seq_id,
        f"{what} (beyond rounding)",
        short(ref),
        f"{short(impl)}; largest difference {row_difference(ref, impl):.3g}",
        ids,
    )
