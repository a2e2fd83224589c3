"""Sampling penalties: which apply to a sequence, over which history, and how they change a row."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import torch

from reference.state import ActiveSeq


class PositionKind(Enum):
    """VERIFY: a position where the target model's token is sampled (the bootstrap's only kind).
    DRAFT: a drafter position."""

    VERIFY = "verify"
    DRAFT = "draft"


class PenaltyGate(Enum):
    """NEUTRAL: the penalties change no logit; ACTIVE: they may."""

    NEUTRAL = "neutral"
    ACTIVE = "active"


@dataclass(slots=True, frozen=True)
class PenaltyParams:
    """repetition: seen tokens' positive logits are divided by it, negative ones multiplied;
    frequency: minus count * frequency; presence: minus presence once seen; banned_ids: -inf."""

    repetition: float = 1.0
    frequency: float = 0.0
    presence: float = 0.0
    banned_ids: tuple[int, ...] = ()


def reasoning_floor_holds(a: ActiveSeq, min_reasoning_floor: int) -> bool:
    """True while the sequence reasons (has a reasoning-end token it has not emitted) and has fewer
    than `min_reasoning_floor` output tokens."""
    return (
        a.reasoning_end_token is not None
        and a.reasoning_end_token not in a.output_tokens
        and len(a.output_tokens) < min_reasoning_floor
    )


def penalty_params_for(a: ActiveSeq, kind: PositionKind, min_reasoning_floor: int) -> PenaltyParams:
    """The penalties for the sequence's next position.

    VERIFY: the sequence's repetition, frequency and presence penalties. DRAFT: none of those (the
    drafter proposes greedily; the penalties apply when its drafts are verified). Both kinds ban
    the reasoning-end token and the EOS ids (sorted, unique) while the reasoning floor holds."""
    banned: tuple[int, ...] = ()
    if reasoning_floor_holds(a, min_reasoning_floor):
        assert a.reasoning_end_token is not None
        banned = tuple(sorted({a.reasoning_end_token, *a.eos_ids}))
    if kind is PositionKind.DRAFT:
        return PenaltyParams(banned_ids=banned)
    return PenaltyParams(a.repetition_penalty, a.frequency_penalty, a.presence_penalty, banned)


def classify_penalties(p: PenaltyParams) -> PenaltyGate:
    """NEUTRAL iff the penalties have no effect at all: repetition 1, frequency 0, presence 0 and
    nothing banned. Any other value (even an invalid one) is ACTIVE."""
    neutral = p.repetition == 1.0 and p.frequency == 0.0 and p.presence == 0.0 and not p.banned_ids
    return PenaltyGate.NEUTRAL if neutral else PenaltyGate.ACTIVE


def penalty_history_scope(output_tokens: Sequence[int], tool_call_end_token: int | None) -> list[int]:
    """The tokens penalties see: the output tokens after the last tool-call-end token (all of them
    when there is none or it was never emitted)."""
    tokens = list(output_tokens)
    if tool_call_end_token is None:
        return tokens
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] == tool_call_end_token:
            return tokens[i + 1 :]
    return tokens


def check_penalty_params(p: PenaltyParams, vocab_size: int) -> None:
    """Raise ValueError unless repetition is finite and > 0, frequency and presence are finite, and
    every banned id is in the vocabulary."""
    if not (math.isfinite(p.repetition) and p.repetition > 0.0):
        raise ValueError(f"repetition penalty {p.repetition} must be finite and > 0")
    if not (math.isfinite(p.frequency) and math.isfinite(p.presence)):
        raise ValueError(f"frequency {p.frequency} and presence {p.presence} penalties must be finite")
    bad = [i for i in p.banned_ids if not 0 <= i < vocab_size]
    if bad:
        raise ValueError(f"banned ids {bad} outside the vocabulary of {vocab_size}")


def apply_penalties(logits: torch.Tensor, p: PenaltyParams, history: Sequence[int]) -> torch.Tensor:
    """A new tensor: `logits` [V] with the penalties applied over `history` (never in place).

    Repetition first (on the input values), then frequency and presence, then banned ids to -inf.
    Raises ValueError for invalid parameters (`check_penalty_params`) or a history id outside the
    vocabulary."""
    vocab = logits.shape[-1]
    check_penalty_params(p, vocab)
    out = logits.clone()
    if p.repetition != 1.0 or p.frequency != 0.0 or p.presence != 0.0:
        hist = torch.as_tensor(list(history), dtype=torch.int64, device=logits.device)
        if hist.numel() and (int(hist.min()) < 0 or int(hist.max()) >= vocab):
            raise ValueError(f"history holds a token outside the vocabulary of {vocab}")
        counts = torch.bincount(hist, minlength=vocab)  # [V] int64, exact on every device
        seen = counts > 0
        if p.repetition != 1.0:
            out = torch.where(seen, torch.where(out > 0, out / p.repetition, out * p.repetition), out)
        if p.frequency != 0.0:
            out = out - counts.to(out.dtype) * p.frequency
        if p.presence != 0.0:
            out = out - seen.to(out.dtype) * p.presence
    if p.banned_ids:
        out[torch.as_tensor(p.banned_ids, dtype=torch.int64, device=out.device)] = float("-inf")
    return out
