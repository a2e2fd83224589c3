"""effective_drafts_under_grammar and the drafter's grammar mask."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from reference.grammar import JSON_PERSON, start_grammar
from reference.spec_step import GRAMMAR_MAX_DRAFTS, effective_drafts_under_grammar, mtp_grammar_mask_for
from reference.state import ActiveSeq, SequenceState
from reference.vocab import MIN_VOCAB_SIZE

VOCAB = MIN_VOCAB_SIZE


def seq(n_out: int, max_tokens: int, grammar: bool) -> ActiveSeq:
    return ActiveSeq(
        seq_id=0,
        seq=SequenceState(0, None, 1),
        last_token=3,
        sampling_seed=0,
        max_tokens=max_tokens,
        eos_ids=(0,),
        output_tokens=[5] * n_out,
        grammar_state=start_grammar(JSON_PERSON, VOCAB) if grammar else None,
    )


@given(ladder=st.integers(0, 8), n_out=st.integers(0, 12), max_tokens=st.integers(0, 12), grammar=st.booleans())
def test_effective_drafts(ladder: int, n_out: int, max_tokens: int, grammar: bool) -> None:
    a = seq(n_out, max_tokens, grammar)
    eff = effective_drafts_under_grammar(a, ladder)
    expected = max(0, min(ladder, max_tokens - n_out))
    assert eff == (min(expected, GRAMMAR_MAX_DRAFTS) if grammar else expected)
    assert 0 <= eff <= ladder and len(a.output_tokens) + eff <= max(max_tokens, len(a.output_tokens))


def test_grammar_mask_for_the_drafter() -> None:
    assert mtp_grammar_mask_for(seq(0, 5, False)) is None
    a = seq(0, 5, True)
    assert a.grammar_state is not None
    mask = mtp_grammar_mask_for(a)
    assert mask is not None and mask.dtype == torch.bool and torch.equal(mask, a.grammar_state.allowed_mask())
    assert a.grammar_state.accepted == []
