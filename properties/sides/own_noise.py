"""The support oracle of an implementation with its own noise (`Impl.noise == "own"`).

Such an implementation samples with its own generators, so its sampled tokens cannot equal the
reference's draw. Each sampled token it emits is checked instead: it must have a positive
probability under the reference semantics replayed on the implementation's own row (penalties over
the scoped history, the EOS hold, the grammar, temperature, top-k and top-p:
`reference.row_request.support`). A token inside the support is forced onto the reference (its draw,
not a near tie: it does not count against the near-tie budget) and everything downstream of it is
compared exactly as for coupled noise; a masked, cut or held token fails at once. Where the
implementation declares its step's sampler (`ROW_SAMPLER`), every own draw must also be exactly that
sampler's token for the same row (the implementation's own) and the reference's request for it,
alone in a call of its own: the declared sampler is then a fast path of the oracles on the step's
draws (`properties.sampling.test_distribution`), and a step that draws otherwise than it declares
(greedily, at another temperature, with noise keyed by its batch row) fails here, in every numerics
mode. Whether the step's draws follow the reference's distribution, are independent across seeds and
positions and do not depend on their batch is `properties.sampling`'s (`test_step_draws`,
`test_step_invariance`).
"""

from __future__ import annotations

import math

import torch

from properties.sides.mismatch import Mismatch, short
from properties.sides.side_by_side import ForcedDecision, SideBySide, bootstrapped, emitted
from properties.tolerance import logprobs_match
from reference.decisions import DecisionKey
from reference.logprobs import extract_single_logprobs
from reference.row_request import RowRequest, request_for, support
from reference.sampling import SamplingError
from reference.state import ActiveSeq

OWN_DRAW = "own noise: a draw inside the reference's support on the implementation's row"


def request_of(sbs: SideBySide, b: ActiveSeq) -> RowRequest:
    """The sampling request of sequence `b` (as before the step)."""
    world = sbs.before
    return request_for(b, world.sched.watchdog.min_reasoning_floor, world.verify_ctx.sampling)


def own_sampled(sbs: SideBySide, b: ActiveSeq) -> bool:
    """Whether `b`'s token is the implementation's own draw: own noise and a sampled (not greedy) row."""
    return sbs.under_test.noise == "own" and not request_of(sbs, b).greedy


def outside_support(sbs: SideBySide, b: ActiveSeq, token: int) -> str | None:
    """Why `token` cannot be `b`'s draw under the reference semantics on the implementation's row,
    or None when it can."""
    row = sbs.impl.model.rows.get(b.seq.slot_idx)
    if row is None:
        return f"token {token} of seq {b.seq_id}: the row it was drawn from was not captured"
    req = request_of(sbs, b)
    try:
        kept = support(row, req)
    except SamplingError as e:
        return f"token {token} of seq {b.seq_id}: the reference refuses its row ({e})"
    if not 0 <= token < kept.shape[0] or not bool(kept[token]):
        n = int(kept.sum())
        return (
            f"token {token} of seq {b.seq_id} is outside the reference's support on its own row ({n} tokens kept; "
            f"temperature {req.temperature}, top-k {req.top_k}, top-p {req.top_p}, EOS mask {list(req.eos_mask)}, "
            f"grammar {'on' if req.grammar is not None else 'off'})"
        )
    return None


def own_draws(sbs: SideBySide) -> tuple[list[ForcedDecision], list[str]]:
    """The implementation's own draws to force onto the reference (each inside the support), and
    why each other differing draw cannot be one. Empty for coupled noise."""
    if sbs.under_test.noise != "own":
        return [], []
    ref_tokens = {d.key: d.chosen for d in sbs.ref.decisions if d.key.kind == "token"}
    forced: list[ForcedDecision] = []
    refused: list[str] = []
    for b, a in bootstrapped(sbs):
        tok = emitted(b, a)
        key = DecisionKey(a.seq_id, len(b.output_tokens), "token")
        if tok is None or key in sbs.forced or ref_tokens.get(key, tok) == tok or not own_sampled(sbs, b):
            continue
        why = outside_support(sbs, b, tok)
        if why is None:
            forced.append(ForcedDecision(key, ref_tokens[key], tok, math.nan, math.nan, 0.0, 0.0, OWN_DRAW))
        else:
            refused.append(why)
    return forced, refused


def declared_draw(sbs: SideBySide, b: ActiveSeq, row: torch.Tensor) -> int | str | None:
    """The implementation's declared sampler's token for `b` on `row` alone (its refusal's text), or
    None when it declares none."""
    sampler = sbs.under_test.sampler
    if sampler is None:
        return None
    got = sampler(row[None], [request_of(sbs, b)])
    return str(got[0]) if isinstance(got[0], SamplingError) else int(got[0])


def own_token_replay(sbs: SideBySide, b: ActiveSeq, a: ActiveSeq, token: int) -> list[Mismatch]:
    """Check 2 of the replay oracle for an own draw: the token inside the support on its own row, the
    declared sampler's token there (where one is declared), and its logprobs those of that token on
    that row."""
    why = outside_support(sbs, b, token)
    if why is not None:
        return [Mismatch(b.seq_id, "token (its own draw)", "a token inside the reference's support", why, ("B5", "B6"))]
    row = sbs.impl.model.rows[b.seq.slot_idx]
    declared = declared_draw(sbs, b, row)
    if declared is not None and declared != token:
        what = "token (its own draw) against its declared row sampler on the same row and request"
        return [Mismatch(b.seq_id, what, f"the sampler's {declared}", f"the step's {token}", ("B8",))]
    k = b.top_logprobs
    want = extract_single_logprobs(sbs.before.model, row, token, k) if k is not None else None
    got = a.output_logprobs[len(b.output_tokens)]
    if not logprobs_match(got, want):
        return [Mismatch(b.seq_id, "logprobs of its own draw (on its own row)", short(want), short(got), ("B10",))]
    return []
