"""The model's vocabulary: layout, sizes, distinct tokens, caching, and encode/decode."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.vocab import MIN_VOCAB_SIZE, build_vocab


def test_layout() -> None:
    v = build_vocab(MIN_VOCAB_SIZE)
    assert v.tokens[:3] == (b"<eos>", b"</tool_call>", b"</think>")
    assert (v.eos_id, v.tool_call_end_id, v.reasoning_end_id, v.special_ids) == (0, 1, 2, (0, 1, 2))
    assert [v.tokens[3 + b] for b in range(256)] == [bytes([b]) for b in range(256)]
    assert all(v.tokens[v.byte_id(b)] == bytes([b]) for b in range(256))
    for piece in (b'{"', b'":', b'", "', b"true", b"false", b"null", b"42"):
        assert piece in v.tokens
    assert all(len(t) > 1 for t in v.tokens[259:])


@pytest.mark.parametrize("size", [MIN_VOCAB_SIZE, MIN_VOCAB_SIZE + 1, 1000, 32768, 151936])
def test_sizes_and_distinct_tokens(size: int) -> None:
    v = build_vocab(size)
    assert v.size == len(v.tokens) == size
    assert len(set(v.tokens)) == size and all(v.tokens)
    assert build_vocab(size) is v
    assert build_vocab(MIN_VOCAB_SIZE).tokens == v.tokens[:MIN_VOCAB_SIZE]


def test_too_small() -> None:
    with pytest.raises(ValueError, match=f"too small.*at least {MIN_VOCAB_SIZE}"):
        build_vocab(MIN_VOCAB_SIZE - 1)
    with pytest.raises(ValueError):
        v = build_vocab(MIN_VOCAB_SIZE)
        v.byte_id(256)


@given(text=st.binary(max_size=60), size=st.sampled_from([MIN_VOCAB_SIZE, 4096]))
def test_encode_decode_round_trip(text: bytes, size: int) -> None:
    v = build_vocab(size)
    ids = v.encode(text)
    assert v.decode(ids) == text
    assert not set(ids) & set(v.special_ids)
    assert len(ids) <= len(text)


def test_decode_skips_specials_and_encode_prefers_long_tokens() -> None:
    v = build_vocab(MIN_VOCAB_SIZE)
    assert v.decode([0, *v.encode(b"true"), 1, 2]) == b"true"
    assert [v.tokens[i] for i in v.encode(b'{"name": true}')] == [b'{"', b"name", b'": ', b"true", b"}"]
