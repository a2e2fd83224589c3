"""Forcing near ties (check 3 of `properties.sides.replay_oracle`): which of the reference's
decisions may take the implementation's choice, and why (the rounding bound of the decision's
scores, a cut that rounding can move)."""

from __future__ import annotations

import math

import torch

from properties.sides.own_noise import own_draws, own_sampled, request_of
from properties.sides.replay_oracle import CUT_KINDS, bootstrapped, emitted, replay_of
from properties.sides.side_by_side import ForcedDecision, SideBySide
from properties.tolerance import Tolerance, differing, row_difference
from reference.decisions import Decision, DecisionKey, DecisionLog, argmax_lowest
from reference.errors import ModelError
from reference.sampling import processed_row
from reference.sampling_params import SamplingParams
from reference.state import TokenLogprobs


def impl_choices(sbs: SideBySide) -> dict[DecisionKey, int]:
    """The implementation's token and draft choices, keyed as the reference records them."""
    choices: dict[DecisionKey, int] = {}
    for b, a in bootstrapped(sbs):
        tok = emitted(b, a)
        if tok is not None:
            choices[DecisionKey(a.seq_id, len(b.output_tokens), "token")] = tok
        if a.pending_drafts != b.pending_drafts:
            for i, d in enumerate(a.pending_drafts):
                choices[DecisionKey(a.seq.slot_idx, a.seq.seq_len, "draft", i)] = d
    return choices


def forced_round(sbs: SideBySide, fast: bool) -> tuple[list[ForcedDecision], list[ForcedDecision], list[str]]:
    """What to force onto the reference next: the implementation's own draws inside the support
    (`properties.sides.own_noise`, any numerics), the near ties rounding explains (fast numerics),
    and why each other divergence is not forced."""
    draws, refused = own_draws(sbs)
    near, why = next_forced(sbs) if fast else ([], [])
    return draws, near, refused + why


def next_forced(sbs: SideBySide) -> tuple[list[ForcedDecision], list[str]]:
    """The first reference decision per sequence (its token, then its drafts in order) that the
    implementation took otherwise: forced when explained (check 3), else a reason why not. Later
    decisions of that sequence depend on it and wait for the next round."""
    choices = impl_choices(sbs)
    slot_of_seq = {a.seq_id: a.seq.slot_idx for a in sbs.before.active}
    seq_of = {a.seq_id: a for a in sbs.before.active}
    forced: list[ForcedDecision] = []
    refused: list[str] = []
    settled: set[int] = set()
    for d in sbs.ref.decisions:
        if d.key.kind in CUT_KINDS or d.forced:
            continue
        if d.key.kind == "token" and own_sampled(sbs, seq_of[d.key.owner]):
            continue  # an own draw: the support oracle's, not rounding's
        slot = d.key.owner if d.key.kind == "draft" else slot_of_seq[d.key.owner]
        choice = choices.get(d.key)
        if choice is None or choice == d.chosen or slot in settled:
            continue
        settled.add(slot)
        f, why = explain(sbs, d, choice, slot)
        if f is not None:
            forced.append(f)
        else:
            refused.append(why)
    return forced, refused


def explain(sbs: SideBySide, d: Decision, choice: int, slot: int) -> tuple[ForcedDecision | None, str]:
    """The forced decision for reference decision `d` taken as `choice` by the implementation, or
    None and why it is not explained by rounding."""
    what = f"{d.key.kind} {d.key.index} of slot {slot}" if d.key.kind == "draft" else f"token of seq {d.key.owner}"
    rtol = Tolerance.of(sbs.spec.model).rtol
    if d.key.kind == "token":
        ref_row, impl_row = sbs.ref.model.rows.get(slot), sbs.impl.model.rows.get(slot)
        scale = None
        replay = replay_of(sbs, slot)
        impl_scores = _scores_of(replay.log, d.key) if replay is not None else None
        if replay is None or replay.token != choice:
            return None, f"{what}: the implementation's {choice} is not the reference semantics on its own row"
    else:
        k = (slot, d.key.position, d.key.index)
        ref_row, impl_row = sbs.ref.draft_rows.get(k), sbs.impl.draft_rows.get(k)
        scale = sbs.ref.unmasked_draft_rows.get(k)
        impl_scores = impl_row.double() if impl_row is not None else None
        if impl_row is not None and argmax_lowest(impl_row) != choice:
            return None, f"{what}: the implementation's {choice} is not the argmax of its own drafter row"
    if ref_row is None or impl_row is None or d.scores is None or impl_scores is None:
        return None, f"{what}: the rows it was decided on were not captured"
    if tied_alike(sbs, d, choice, slot, ref_row):
        g = sbs.spec.model.tie_group
        return None, (
            f"{what}: the reference's {d.chosen} and the implementation's {choice} share a head row (tie group of "
            f"{g}) and score alike on the reference's row: the tie rule decides between them, rounding cannot"
        )
    if bool(differing(ref_row, impl_row, rtol, scale).any()):
        return None, f"{what}: the rows differ beyond rounding ({row_difference(ref_row, impl_row):.3g})"
    delta = row_difference(ref_row, impl_row)
    ref_margin = float(d.scores[d.chosen] - d.scores[choice])
    impl_margin = float(impl_scores[choice] - impl_scores[d.chosen])
    bound, units = _bound(sbs, d, slot, delta)
    if ref_margin <= bound:
        return ForcedDecision(d.key, d.chosen, choice, ref_margin, impl_margin, delta, bound, units), ""
    cut = _cut_explains(sbs, d, slot, delta)
    if cut is not None:
        margin, bound, units = cut
        return ForcedDecision(d.key, d.chosen, choice, margin, impl_margin, delta, bound, units), ""
    return None, (
        f"{what}: reference {d.chosen} over {choice} by {ref_margin:.3g} {units}, more than the rows' "
        f"difference {delta:.3g} can explain ({bound:.3g})"
    )


def tied_alike(sbs: SideBySide, d: Decision, choice: int, slot: int, ref_row: torch.Tensor) -> bool:
    """Whether `d`'s choice and `choice` share a head row (ids of one tie group: the same embedding
    row, so the same logit in every row of the model, whatever kernel computes it) and the reference
    semantics treat them alike there (the same processed score: the same penalties and masks). Then
    no rounding can separate them: only the tie rule (or the noise, which both sides share) decides."""
    g = sbs.spec.model.tie_group
    if g < 2 or d.chosen // g != choice // g:
        return False
    if d.key.kind == "draft":
        row = ref_row.double()
    else:
        b = next(x for x in sbs.before.active if x.seq.slot_idx == slot)
        req = request_of(sbs, b)
        try:
            row = processed_row(ref_row, req.eos_mask, req.grammar, req.pen, req.history)
        except ModelError:
            return False
    return bool(row[d.chosen] == row[choice])


def _scores_of(log: DecisionLog, key: DecisionKey) -> torch.Tensor | None:
    return next((r.scores for r in log.records if r.key == key), None)


def _penalty_scale(sbs: SideBySide, slot: int) -> float:
    """How much the penalties can stretch a logit difference (repetition divides or multiplies)."""
    a = next(x for x in sbs.before.active if x.seq.slot_idx == slot)
    rep = a.repetition_penalty
    return max(1.0, rep, 1.0 / rep) if rep > 0 else 1.0


def _greedy(sbs: SideBySide, slot: int) -> bool:
    a = next(x for x in sbs.before.active if x.seq.slot_idx == slot)
    return SamplingParams.of(a).greedy(sbs.before.verify_ctx.sampling.force_temp_zero)


def _bound(sbs: SideBySide, d: Decision, slot: int, delta: float) -> tuple[float, str]:
    """How far a row difference of `delta` (in logits) can move the margin of decision `d`: each
    of the two scores by delta (stretched by the penalties), divided by the temperature when
    sampled."""
    if d.key.kind == "draft":
        return 2 * delta, "logits"
    moved = 2 * delta * _penalty_scale(sbs, slot)
    if _greedy(sbs, slot):
        return moved, "logits"
    a = next(x for x in sbs.before.active if x.seq.slot_idx == slot)
    return moved / a.temperature, "temperature-scaled scores"


def _cut_explains(sbs: SideBySide, d: Decision, slot: int, delta: float) -> tuple[float, float, str] | None:
    """Where the two choices differ because a top-k or top-p cut fell otherwise: (margin, bound,
    units) of a cut at this position within what `delta` explains, else None. A top-k margin is in
    logits; a top-p margin in probability mass, which a logit difference moves by a factor of at
    most exp(moved / temperature)."""
    if d.key.kind != "token" or _greedy(sbs, slot):
        return None
    a = next(x for x in sbs.before.active if x.seq.slot_idx == slot)
    moved = 2 * delta * _penalty_scale(sbs, slot)
    logs = [sbs.ref.decisions]
    replay = replay_of(sbs, slot)
    if replay is not None:
        logs.append(replay.log.records)
    for records in logs:
        for r in records:
            if r.key.owner != d.key.owner or r.key.position != d.key.position or r.key.kind not in CUT_KINDS:
                continue
            if r.key.kind == "topk" and r.margin <= moved:
                return r.margin, moved, "logits (top-k cut)"
            mass = math.expm1(moved / a.temperature)
            if r.key.kind == "topp" and r.margin <= mass:
                return r.margin, mass, "probability mass (top-p cut)"
    return None


def top_ids_explained(
    ref: TokenLogprobs | None, impl: TokenLogprobs | None, ref_row: torch.Tensor, impl_row: torch.Tensor, rtol: float
) -> str | None:
    """Whether the top-logprob ids of two `TokenLogprobs` of one token differ only by rounding:
    None when they do, else why not. The rows must agree within `rtol` (the dtype's rounding);
    then every logprob of two rows whose logits differ by at most d
    differs by at most 2d, so the j-th best of one row is within 2d of the other's j-th best and
    the j-th id one row lists sits at most 4d below the other row's j-th best, on the reference row."""
    if ref is None or impl is None or ref.token != impl.token or len(ref.top) != len(impl.top):
        return "a different token or a different number of top logprobs"
    if bool(differing(ref_row, impl_row, rtol).any()):
        return f"the rows differ beyond rounding ({row_difference(ref_row, impl_row):.3g})"
    delta = row_difference(ref_row, impl_row)
    lp = torch.log_softmax(ref_row.detach().double(), dim=0)
    for (r, _), (m, _) in zip(ref.top, impl.top, strict=True):
        gap = float(lp[r] - lp[m])
        if gap > 4 * delta:
            return f"top id {m} for {r}: {gap:.3g} below it on the reference row, more than 4 x {delta:.3g}"
    return None
