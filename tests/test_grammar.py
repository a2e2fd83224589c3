"""Grammar states over the model's vocabulary: generation under a mask stays in the grammar and
parses, EOS only where the grammar may end, special tokens never, and forks are independent."""

from __future__ import annotations

import copy
import json
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.decisions import argmax_lowest
from reference.grammar import (
    EBNF_LIST,
    EBNF_LIST_REGEX,
    JSON_PERSON,
    READY_SPECS,
    REGEX_EMAIL,
    GrammarSpec,
    GrammarState,
    compile_spec,
    start_grammar,
)
from reference.penalties import PenaltyParams
from reference.sampling import SamplingError, sample_token_with_grammar
from reference.sched_ctx import SamplingConfig
from reference.state import ActiveSeq, SequenceState
from reference.vocab import MIN_VOCAB_SIZE, build_vocab

VOCAB = MIN_VOCAB_SIZE + 100
MAX_STEPS = 300


class ArgmaxModel:
    def vocab_size(self) -> int:
        return VOCAB

    def argmax_on_device(self, row: torch.Tensor) -> int:
        return argmax_lowest(row)


def ids(text: bytes) -> list[int]:
    return build_vocab(VOCAB).encode(text)


def generate(spec: GrammarSpec, seed: int, temperature: float, top_k: int) -> tuple[list[int], GrammarState]:
    """Sample token by token under the grammar from random logits until EOS."""
    state = start_grammar(spec, VOCAB)
    gen = torch.Generator().manual_seed(seed)
    out: list[int] = []
    for position in range(MAX_STEPS):
        completed = state.is_completed()
        row = torch.randn(VOCAB, generator=gen, dtype=torch.float64) * 4.0
        tok = sample_token_with_grammar(
            ArgmaxModel(),
            row,
            temperature,
            top_k,
            1.0,
            (),
            state,
            PenaltyParams(),
            out,
            SamplingConfig(),
            seq_id=0,
            seed=seed,
            position=position,
        )
        assert tok not in (1, 2), "special tokens are never text"
        assert tok != 0 or completed, "EOS only where the grammar may end"
        assert state.accept(tok), "the mask only allows tokens the grammar accepts"
        if tok == 0:
            assert state.is_terminated()
            return out, state
        out.append(tok)
    raise AssertionError(f"no EOS after {MAX_STEPS} tokens")


def check_person(text: bytes) -> None:
    # xgrammar's JSON strings admit raw control characters other than CR and LF: parse leniently.
    obj = json.loads(text, strict=False)
    assert set(obj) == {"name", "age", "ok"}
    assert isinstance(obj["name"], str) and len(obj["name"]) <= 6
    assert type(obj["age"]) is int and 0 <= obj["age"] <= 120
    assert isinstance(obj["ok"], bool)


CHECKS = {
    JSON_PERSON: check_person,
    REGEX_EMAIL: lambda text: re.fullmatch(REGEX_EMAIL.source.encode(), text) is not None or pytest.fail(text),
    EBNF_LIST: lambda text: re.fullmatch(EBNF_LIST_REGEX.encode(), text) is not None or pytest.fail(text),
}


@settings(deadline=None)
@given(
    spec=st.sampled_from(READY_SPECS),
    seed=st.integers(0, 2**32),
    temperature=st.sampled_from([0.0, 0.7, 1.0, 3.0]),
    top_k=st.sampled_from([0, 1, 5]),
)
def test_generation_stays_in_the_grammar_and_parses(
    spec: GrammarSpec, seed: int, temperature: float, top_k: int
) -> None:
    out, state = generate(spec, seed, temperature, top_k)
    assert state.accepted == [*out, 0]
    CHECKS[spec](build_vocab(VOCAB).decode(out))


def test_multi_byte_tokens_are_used() -> None:
    state = start_grammar(JSON_PERSON, VOCAB, ids(b'{"name": "ab", "age": 42, "ok": true}'))
    assert state.is_completed() and not state.is_terminated()
    assert len(state.accepted) < len(b'{"name": "ab", "age": 42, "ok": true}')


def test_masks_and_special_tokens() -> None:
    state = start_grammar(REGEX_EMAIL, VOCAB)
    mask = state.allowed_mask()
    assert mask.dtype == torch.bool and mask.shape == (VOCAB,)
    vocab = build_vocab(VOCAB)
    allowed = {vocab.tokens[i] for i in mask.nonzero().flatten().tolist()}
    assert bytes([ord("a")]) in allowed and b"@" not in allowed and b"name" in allowed
    assert not bool(mask[0] | mask[1] | mask[2])
    for tok in ids(b"ab@cd.org"):
        assert state.accept(tok)
    mask = state.allowed_mask()
    assert bool(mask[0]) and not bool(mask[1] | mask[2])
    assert not state.accept(1) and not state.accept(VOCAB) and not state.accept(-1)
    assert state.accept(0) and state.is_terminated()
    assert not bool(state.allowed_mask().any()) and not state.accept(vocab.byte_id(ord("a")))


def test_special_tokens_are_not_text() -> None:
    # A grammar that admits the bytes of `</tool_call>` and `</think>` still never allows their tokens.
    state = start_grammar(GrammarSpec("regex", "[</>a-z_]{0,20}"), VOCAB)
    mask = state.allowed_mask()
    assert bool(mask[vocab_byte(ord("<"))]) and bool(mask[0]) and not bool(mask[1] | mask[2])
    assert not state.accept(1) and not state.accept(2)


def test_rejected_token_leaves_the_state() -> None:
    state = start_grammar(EBNF_LIST, VOCAB, ids(b"[1"))
    before = state.allowed_mask()
    assert not state.accept(vocab_byte(ord("x")))
    assert state.accepted == ids(b"[1") and torch.equal(state.allowed_mask(), before)


def vocab_byte(b: int) -> int:
    return build_vocab(VOCAB).byte_id(b)


@given(
    prefix=st.sampled_from([b"", b"[1", b"[12", b"[12,true"]),
    branch=st.sampled_from([b"]", b",7]", b",null]"]),
)
def test_fork_is_independent(prefix: bytes, branch: bytes) -> None:
    state = start_grammar(EBNF_LIST, VOCAB, ids(prefix))
    mask = state.allowed_mask()
    fork = state.fork()
    assert fork == state and fork.same_as(state) and fork.matcher is not state.matcher
    for tok in ids(branch if prefix else b"[5" + branch):
        assert fork.accept(tok)
    assert fork != state and state.accepted == ids(prefix)
    assert torch.equal(state.allowed_mask(), mask)
    # Replaying the fork's tokens gives an equal state.
    assert start_grammar(EBNF_LIST, VOCAB, fork.accepted).same_as(fork)


def test_deepcopy_of_a_world_forks() -> None:
    a = ActiveSeq(
        seq_id=1,
        seq=SequenceState(0, None, 3),
        last_token=5,
        sampling_seed=1,
        max_tokens=20,
        eos_ids=(0,),
        grammar_state=start_grammar(REGEX_EMAIL, VOCAB, ids(b"ab")),
    )
    world = [a]
    twin = copy.deepcopy(world)
    assert twin == world
    g, h = world[0].grammar_state, twin[0].grammar_state
    assert g is not None and h is not None and h.matcher is not g.matcher
    assert h.accept(vocab_byte(ord("@")))
    assert g.accepted == ids(b"ab") and not bool(g.allowed_mask()[vocab_byte(ord("."))])
    assert twin != world


def test_sampling_under_a_terminated_grammar_fails() -> None:
    state = start_grammar(REGEX_EMAIL, VOCAB, [*ids(b"a@b.com"), 0])
    with pytest.raises(SamplingError, match="no token is allowed"):
        sample_token_with_grammar(
            ArgmaxModel(),
            torch.zeros(VOCAB),
            1.0,
            0,
            1.0,
            (),
            state,
            PenaltyParams(),
            [],
            SamplingConfig(),
            seq_id=0,
            seed=0,
            position=0,
        )


def test_specs_and_compile_cache() -> None:
    assert compile_spec(VOCAB, JSON_PERSON) is compile_spec(VOCAB, GrammarSpec("json_schema", JSON_PERSON.source))
    with pytest.raises(ValueError, match="kind"):
        GrammarSpec("lark", "start: x")
    for kind, source in (("regex", "[a-"), ("ebnf", "root ::= "), ("json_schema", "{bad")):
        with pytest.raises(ValueError, match="does not compile"):
            compile_spec(VOCAB, GrammarSpec(kind, source))
    with pytest.raises(ValueError, match="rejects token"):
        start_grammar(REGEX_EMAIL, VOCAB, ids(b"a@@"))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_mask_on_cuda() -> None:
    state = start_grammar(JSON_PERSON, VOCAB)
    assert torch.equal(state.allowed_mask("cuda").cpu(), state.allowed_mask())
