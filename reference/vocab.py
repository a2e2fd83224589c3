"""The model's vocabulary as raw byte strings: three special tokens, the 256 single bytes, a few
multi-byte tokens useful for JSON and text, then distinct filler words up to the size asked for."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

EOS_ID = 0
TOOL_CALL_END_ID = 1
REASONING_END_ID = 2
SPECIAL_TOKENS: tuple[bytes, ...] = (b"<eos>", b"</tool_call>", b"</think>")
FIRST_BYTE_ID = len(SPECIAL_TOKENS)

_JSON_PIECES: tuple[bytes, ...] = (
    b'{"',
    b'"}',
    b'":',
    b'": ',
    b'",',
    b'", "',
    b'","',
    b"{}",
    b"[]",
    b"[{",
    b"}]",
    b"},",
    b"}, {",
    b'["',
    b'"]',
    b"true",
    b"false",
    b"null",
    b"\\n",
    b'\\"',
    b"  ",
    b"    ",
    b"\n  ",
)
_WORDS: tuple[bytes, ...] = (
    b"name",
    b"age",
    b"ok",
    b"id",
    b"type",
    b"value",
    b"items",
    b"result",
    b"error",
    b"hello",
    b"world",
    b"yes",
    b"no",
    b"the",
    b" the",
    b" a",
    b" is",
    b" and",
    b" of",
    b" to",
    b"ing",
    b"tion",
    b"er",
    b"ed",
    b"com",
    b"org",
    b".com",
    b".org",
)
_DIGIT_PAIRS: tuple[bytes, ...] = tuple(f"{i:02d}".encode() for i in range(100))


@dataclass(slots=True, frozen=True)
class Vocab:
    """Token id -> bytes. Special tokens are not text: a grammar never allows `</tool_call>` or
    `</think>`, and EOS only as its stop token. `tokens` is a tuple because vocabularies are
    cached and shared."""

    tokens: tuple[bytes, ...]
    eos_id: int = EOS_ID
    tool_call_end_id: int = TOOL_CALL_END_ID
    reasoning_end_id: int = REASONING_END_ID
    special_ids: tuple[int, ...] = (EOS_ID, TOOL_CALL_END_ID, REASONING_END_ID)
    # (text token -> id, longest text token), built on the first `encode`.
    _text_index: tuple[dict[bytes, int], int] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def size(self) -> int:
        return len(self.tokens)

    def byte_id(self, byte: int) -> int:
        """The id of the single-byte token for `byte` (0..255)."""
        if not 0 <= byte <= 255:
            raise ValueError(f"byte {byte} is outside 0..255")
        return FIRST_BYTE_ID + byte

    def decode(self, ids: list[int] | tuple[int, ...]) -> bytes:
        """The bytes of `ids` concatenated; special tokens contribute nothing."""
        special = set(self.special_ids)
        return b"".join(self.tokens[i] for i in ids if i not in special)

    def encode(self, text: bytes) -> list[int]:
        """Greedy longest-match tokenization of `text` over the non-special tokens."""
        if self._text_index is None:
            special = set(self.special_ids)
            index = {tok: i for i, tok in enumerate(self.tokens) if i not in special}
            # A frozen dataclass: the lazily built index is set once, bypassing the freeze.
            object.__setattr__(self, "_text_index", (index, max(len(t) for t in index)))
        assert self._text_index is not None
        index, longest = self._text_index
        out: list[int] = []
        pos = 0
        while pos < len(text):
            for length in range(min(longest, len(text) - pos), 0, -1):
                tok = index.get(text[pos : pos + length])
                if tok is not None:
                    out.append(tok)
                    pos += length
                    break
        return out


def base_tokens() -> tuple[bytes, ...]:
    """The special tokens, the 256 single bytes and the multi-byte pieces, in id order."""
    return SPECIAL_TOKENS + tuple(bytes([b]) for b in range(256)) + _JSON_PIECES + _WORDS + _DIGIT_PAIRS


MIN_VOCAB_SIZE = len(base_tokens())


def _fillers(taken: set[bytes]) -> Iterator[bytes]:
    """Lowercase words of growing length, each bare and with a leading space, skipping `taken`."""
    letters = b"abcdefghijklmnopqrstuvwxyz"
    for length in itertools.count(2):
        for chars in itertools.product(letters, repeat=length):
            word = bytes(chars)
            for tok in (word, b" " + word):
                if tok not in taken:
                    yield tok


@lru_cache(maxsize=16)
def build_vocab(size: int) -> Vocab:
    """The vocabulary of exactly `size` tokens (cached per size): the base tokens, then fillers.

    Raises ValueError when `size` is below `MIN_VOCAB_SIZE`."""
    if size < MIN_VOCAB_SIZE:
        raise ValueError(
            f"vocab size {size} is too small: the base vocabulary (special tokens, 256 bytes and "
            f"multi-byte pieces) needs at least {MIN_VOCAB_SIZE} tokens"
        )
    base = base_tokens()
    if len(set(base)) != len(base):
        raise AssertionError("base vocabulary has duplicate tokens")
    fill = itertools.islice(_fillers(set(base)), size - len(base))
    return Vocab(tokens=base + tuple(fill))
