"""emit_token: appends, advances the grammar, and finishes with the documented reason and priority:
GRAMMAR (rejected) > STOP (unheld EOS or stop id) > GRAMMAR (terminated) > LENGTH."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.emit import emit_token
from reference.grammar import REGEX_EMAIL, start_grammar
from reference.sched_ctx import SchedCtx
from reference.state import ActiveSeq, FinishReason, SequenceState, TokenLogprobs
from reference.vocab import MIN_VOCAB_SIZE, build_vocab

VOCAB = MIN_VOCAB_SIZE
EOS, STOP_ID = 0, 9
LP = TokenLogprobs(7, -0.5, ((7, -0.5),))


def seq(**kwargs: object) -> ActiveSeq:
    fields: dict[str, object] = {
        "seq_id": 1,
        "seq": SequenceState(0, None, 5),
        "last_token": 4,
        "sampling_seed": 0,
        "max_tokens": 10,
        "eos_ids": (EOS,),
        "stop_ids": (STOP_ID,),
        "pending_drafts": [11, 12],
        "pending_draft_conf": [0.5, 0.25],
    }
    fields.update(kwargs)
    return ActiveSeq(**fields)  # type: ignore[arg-type]


def ids(text: bytes) -> list[int]:
    return build_vocab(VOCAB).encode(text)


def emit(a: ActiveSeq, tok: int, lp: TokenLogprobs | None = None) -> FinishReason | None:
    emit_token(a, tok, lp, SchedCtx())
    assert a.finished is (a.finish_reason is not None)
    return a.finish_reason


@given(
    out=st.lists(st.integers(3, 8), max_size=5),
    tok=st.integers(3, 8),
    lp=st.sampled_from([None, LP]),
    max_tokens=st.integers(7, 12),
)
def test_an_ordinary_token_appends_and_only_that(
    out: list[int], tok: int, lp: TokenLogprobs | None, max_tokens: int
) -> None:
    a = seq(output_tokens=list(out), output_logprobs=[None] * len(out), max_tokens=max_tokens)
    assert emit(a, tok, lp) is None
    assert a.output_tokens == [*out, tok] and a.output_logprobs == [*([None] * len(out)), lp]
    assert (a.last_token, a.pending_drafts, a.pending_draft_conf) == (4, [11, 12], [0.5, 0.25])


def test_stop_on_eos_and_stop_ids() -> None:
    assert emit(seq(), EOS) is FinishReason.STOP
    assert emit(seq(), STOP_ID) is FinishReason.STOP
    assert emit(seq(eos_ids=()), EOS) is None


def test_eos_hold_counts_the_output_before_the_token() -> None:
    # min_tokens 3: EOS as the third token is held (2 before it), as the fourth it stops.
    assert emit(seq(min_tokens=3, output_tokens=[5, 6]), EOS) is None
    assert emit(seq(min_tokens=3, output_tokens=[5, 6, 7]), EOS) is FinishReason.STOP
    # A stop id is never held.
    assert emit(seq(min_tokens=3), STOP_ID) is FinishReason.STOP


def test_length() -> None:
    assert emit(seq(max_tokens=3, output_tokens=[5, 6]), 7) is FinishReason.LENGTH
    assert emit(seq(max_tokens=3, output_tokens=[5]), 7) is None
    # STOP beats LENGTH.
    assert emit(seq(max_tokens=3, output_tokens=[5, 6]), EOS) is FinishReason.STOP


def test_grammar_reasons_and_priority() -> None:
    grammar = start_grammar(REGEX_EMAIL, VOCAB, ids(b"ab@cd.org"))
    # A rejected token finishes with GRAMMAR, even a stop id; it is still appended.
    a = seq(grammar_state=grammar.fork())
    assert emit(a, STOP_ID) is FinishReason.GRAMMAR and a.output_tokens == [STOP_ID]
    assert emit(seq(grammar_state=start_grammar(REGEX_EMAIL, VOCAB)), EOS) is FinishReason.GRAMMAR
    # An accepted EOS terminates the grammar, and STOP beats GRAMMAR.
    a = seq(grammar_state=grammar.fork())
    assert emit(a, EOS) is FinishReason.STOP and a.grammar_state is not None and a.grammar_state.is_terminated()
    # Held, the accepted EOS does not stop, but the grammar terminated: GRAMMAR, before LENGTH.
    a = seq(grammar_state=grammar.fork(), min_tokens=5, max_tokens=1)
    assert emit(a, EOS) is FinishReason.GRAMMAR
    # An accepted ordinary token advances the grammar; LENGTH still applies.
    a = seq(grammar_state=start_grammar(REGEX_EMAIL, VOCAB), max_tokens=1)
    assert emit(a, ids(b"a")[0]) is FinishReason.LENGTH and a.grammar_state is not None
    assert a.grammar_state.accepted == ids(b"a")


def test_emit_on_a_finished_sequence_is_an_error() -> None:
    a = seq()
    emit(a, EOS)
    with pytest.raises(ValueError, match="finished"):
        emit_token(a, 5, None, SchedCtx())
    assert a.output_tokens == [EOS]
