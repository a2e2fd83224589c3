"""Structured generation over the model's vocabulary: xgrammar specs, compiled once, and a matcher state.

The grammar sees the vocabulary's special tokens as non-text: `</tool_call>` and `</think>` are never
allowed, EOS only where the grammar may end (it is the matcher's stop token).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import torch

from reference.vocab import build_vocab

if TYPE_CHECKING:
    import xgrammar as xgr

# xgrammar is imported where it is first used, never at import: importing it imports transformers,
# seconds on a large environment, which a process that builds no grammar (the verification job's
# controller, which only starts the workers) need not wait for.

GRAMMAR_KINDS = ("json_schema", "regex", "ebnf")


@dataclass(slots=True, frozen=True)
class GrammarSpec:
    """A grammar: `kind` is "json_schema" (compact JSON: no free whitespace, so the language is
    bounded by the schema), "regex" or "ebnf" (root rule `root`); `source` is its text."""

    kind: str
    source: str

    def __post_init__(self) -> None:
        if self.kind not in GRAMMAR_KINDS:
            raise ValueError(f"grammar kind {self.kind!r}: expected one of {', '.join(GRAMMAR_KINDS)}")


@lru_cache(maxsize=8)
def tokenizer_info(vocab_size: int) -> xgr.TokenizerInfo:
    """xgrammar's view of `build_vocab(vocab_size)`, cached per size."""
    import xgrammar as xgr

    vocab = build_vocab(vocab_size)
    special = set(vocab.special_ids)
    # xgrammar treats an empty token as special (never text); EOS stays usable as the stop token.
    encoded = [b"" if i in special else tok for i, tok in enumerate(vocab.tokens)]
    return xgr.TokenizerInfo(encoded, xgr.VocabType.RAW, vocab_size=vocab_size, stop_token_ids=[vocab.eos_id])


@lru_cache(maxsize=8)
def _compiler(vocab_size: int) -> xgr.GrammarCompiler:
    import xgrammar as xgr

    return xgr.GrammarCompiler(tokenizer_info(vocab_size))


@lru_cache(maxsize=256)
def compile_spec(vocab_size: int, spec: GrammarSpec) -> xgr.CompiledGrammar:
    """`spec` compiled for the vocabulary of `vocab_size` tokens, cached per (size, spec).

    Raises ValueError when the source does not compile."""
    compiler = _compiler(vocab_size)
    try:
        if spec.kind == "json_schema":
            return compiler.compile_json_schema(spec.source, any_whitespace=False)
        if spec.kind == "regex":
            return compiler.compile_regex(spec.source)
        return compiler.compile_grammar(spec.source)
    except (RuntimeError, ValueError) as e:
        raise ValueError(f"{spec.kind} grammar does not compile: {e}") from e


def _unpack_bitmask(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """int32 [ceil(V/32)] words -> bool [V]; bit j of word i is token 32*i + j."""
    shifts = torch.arange(32, dtype=torch.int32)
    bits = (bitmask.unsqueeze(1) >> shifts) & 1
    return bits.flatten()[:vocab_size].bool()


@dataclass(slots=True)
class GrammarState:
    """A sequence's position in its grammar: the matcher and the tokens it accepted.

    Two states are equal when they have the same spec, vocabulary size and accepted tokens: the
    matcher's state is a function of those. `copy.deepcopy` forks the matcher."""

    spec: GrammarSpec
    vocab_size: int
    matcher: xgr.GrammarMatcher = field(repr=False, compare=False)
    accepted: list[int] = field(default_factory=list)

    def allowed_mask(self, device: torch.device | str | None = None) -> torch.Tensor:
        """Bool [vocab], True where the grammar allows the token next; all False once terminated."""
        if self.matcher.is_terminated():
            return torch.zeros(self.vocab_size, dtype=torch.bool, device=device)
        import xgrammar as xgr

        bitmask = xgr.allocate_token_bitmask(1, self.vocab_size)
        self.matcher.fill_next_token_bitmask(bitmask)
        return _unpack_bitmask(bitmask[0], self.vocab_size).to(device)

    def accept(self, token: int) -> bool:
        """Advance by `token`; False (state unchanged) when the grammar rejects it, it is out of the
        vocabulary or the grammar has terminated."""
        if not 0 <= token < self.vocab_size or self.matcher.is_terminated():
            return False
        if not self.matcher.accept_token(token):
            return False
        self.accepted.append(token)
        return True

    def is_terminated(self) -> bool:
        """True once the grammar accepted its stop token (EOS): it accepts nothing more."""
        return self.matcher.is_terminated()

    def is_completed(self) -> bool:
        """True when the accepted text is a complete sentence of the grammar (EOS is allowed)."""
        return self.matcher.is_completed()

    def fork(self) -> GrammarState:
        """An independent copy: advancing one never changes the other."""
        return GrammarState(self.spec, self.vocab_size, self.matcher.fork(), list(self.accepted))

    def same_as(self, other: GrammarState | None) -> bool:
        """Equality that also compares the matchers' termination (a consistency check)."""
        return (
            other is not None
            and self == other
            and self.is_terminated() == other.is_terminated()
            and self.is_completed() == other.is_completed()
        )

    def __deepcopy__(self, memo: dict[int, object]) -> GrammarState:
        return self.fork()


def start_grammar(spec: GrammarSpec, vocab_size: int, tokens: list[int] | tuple[int, ...] = ()) -> GrammarState:
    """A fresh state for `spec` over `build_vocab(vocab_size)`, advanced by `tokens` (a replay).

    Raises ValueError when the grammar rejects one of `tokens`."""
    import xgrammar as xgr

    state = GrammarState(spec, vocab_size, xgr.GrammarMatcher(compile_spec(vocab_size, spec)))
    for i, tok in enumerate(tokens):
        if not state.accept(tok):
            raise ValueError(f"replay: the grammar rejects token {tok} at index {i}")
    return state


# Ready-made specs whose languages are finite, so random generation under them always ends.
JSON_PERSON = GrammarSpec(
    "json_schema",
    json.dumps(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 6},
                "age": {"type": "integer", "minimum": 0, "maximum": 120},
                "ok": {"type": "boolean"},
            },
            "required": ["name", "age", "ok"],
            "additionalProperties": False,
        }
    ),
)
REGEX_EMAIL = GrammarSpec("regex", r"[a-z]{1,6}@[a-z]{1,6}\.(com|org)")
# The same language as EBNF_LIST_REGEX, as EBNF.
EBNF_LIST = GrammarSpec("ebnf", 'root ::= "[" item ("," item){0,3} "]"\nitem ::= [0-9]{1,3} | "true" | "null"')
EBNF_LIST_REGEX = r"\[([0-9]{1,3}|true|null)(,([0-9]{1,3}|true|null)){0,3}\]"
READY_SPECS: tuple[GrammarSpec, ...] = (JSON_PERSON, REGEX_EMAIL, EBNF_LIST)
