"""Grammar states for generated sequences: which ready-made grammar a kind names, and a seeded
walk that gives a sequence a history its grammar accepted."""

from __future__ import annotations

import torch

from reference.grammar import EBNF_LIST, JSON_PERSON, REGEX_EMAIL, GrammarSpec, GrammarState, start_grammar
from reference.vocab import EOS_ID

SPECS: dict[str, GrammarSpec] = {"json": JSON_PERSON, "regex": REGEX_EMAIL, "ebnf": EBNF_LIST}


def random_walk(state: GrammarState, n: int, gen: torch.Generator) -> list[int]:
    """Advance `state` by up to `n` tokens drawn uniformly among those it allows (never EOS);
    stops early where only EOS is allowed. Returns the tokens accepted."""
    out: list[int] = []
    for _ in range(n):
        allowed = state.allowed_mask()
        allowed[EOS_ID] = False
        ids = allowed.nonzero().flatten()
        if ids.numel() == 0:
            break
        tok = int(ids[int(torch.randint(ids.numel(), (1,), generator=gen))])
        if not state.accept(tok):
            raise AssertionError(f"grammar rejected token {tok} that its own mask allowed")
        out.append(tok)
    return out


def grammar_history(kind: str, vocab_size: int, n: int, gen: torch.Generator) -> tuple[GrammarState, list[int]]:
    """A fresh state for the grammar `kind` names, walked `n` tokens."""
    if kind not in SPECS:
        raise ValueError(f"grammar kind {kind!r}: expected one of {sorted(SPECS)}")
    state = start_grammar(SPECS[kind], vocab_size)
    return state, random_walk(state, n, gen)
