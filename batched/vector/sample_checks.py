"""The per-row sampler's refusals, for many rows: which `SamplingError` text each row gets.

`reference.sampling.sample_token_with_grammar` refuses a row in a fixed order: its shape, a NaN
logit, a +inf logit (both read from the row), then its parameters (temperature, top-k, top-p, the
penalties and history, the EOS ids, the grammar's vocabulary: all known on the host), then what the
processed row holds (NaN or +inf from the penalties, no finite logit left). `host_error` gives the
first parameter refusal without touching a tensor; `first_error` merges it with the row flags the
batched pass computed on the device, in the per-row order, so every row fails with exactly the text
the per-row sampler would raise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from reference.grammar import GrammarState
from reference.penalties import PenaltyParams, check_penalty_params

NAN_ROW = "row has NaN logits"
POSINF_ROW = "row has +inf logits"
BAD_PENALTIES = "penalties produced NaN or +inf logits"
NONE_ALLOWED = "no token is allowed: banned ids, the EOS mask and the grammar mask exclude all"


def penalties_active(pen: PenaltyParams) -> bool:
    """Whether repetition, frequency or presence changes a logit (the history is read)."""
    return pen.repetition != 1.0 or pen.frequency != 0.0 or pen.presence != 0.0


def host_error(
    vocab: int,
    temperature: float,
    top_k: int,
    top_p: float,
    pen: PenaltyParams,
    history: Sequence[int],
    eos_mask: Sequence[int],
    grammar: GrammarState | None,
) -> str | None:
    """The first refusal the per-row sampler raises from a row's parameters (after its NaN and +inf
    checks), or None."""
    if not (math.isfinite(temperature) and temperature >= 0.0):
        return f"temperature {temperature} must be finite and >= 0"
    if top_k < 0:
        return f"top_k {top_k} must be >= 0 (0: off)"
    if not (math.isfinite(top_p) and 0.0 < top_p <= 1.0):
        return f"top_p {top_p} must be in (0, 1] (1: off)"
    try:
        check_penalty_params(pen, vocab)
    except ValueError as e:
        return f"penalties: {e}"
    if penalties_active(pen) and history and (min(history) < 0 or max(history) >= vocab):
        return f"penalties: history holds a token outside the vocabulary of {vocab}"
    bad = [i for i in eos_mask if not 0 <= i < vocab]
    if bad:
        return f"EOS mask ids {bad} outside the vocabulary of {vocab}"
    if grammar is not None and grammar.vocab_size != vocab:
        return f"grammar mask has {grammar.vocab_size} tokens, the row {vocab}"
    return None


def first_error(host: str | None, nan: bool, posinf: bool, bad_processed: bool, none_finite: bool) -> str | None:
    """The per-row sampler's refusal of a row from its host refusal and its device flags."""
    if nan:
        return NAN_ROW
    if posinf:
        return POSINF_ROW
    if host is not None:
        return host
    if bad_processed:
        return BAD_PENALTIES
    if none_finite:
        return NONE_ALLOWED
    return None
