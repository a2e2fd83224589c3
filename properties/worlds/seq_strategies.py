"""Hypothesis strategies for one sequence of a mix (`properties.worlds.specs.SeqSpec`): its style (greedy,
sampled, penalised, under a grammar, held, reasoning, or everything at once), sampling parameters at
continuous values and on hairs, history, limits, cache length and speculation state.

Choices list the plain value first (`sampled_from` shrinks to its first element, `one_of` to its
first branch), so a sequence shrinks toward a greedy row with no grammar and no penalties."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from properties.worlds.draws import BOOLS, MOSTLY_ON, ONE_IN_3, ONE_IN_8, TOKEN_SEEDS, ints
from properties.worlds.specs import ModelSpec, SeqSpec

GRAMMARS = ("json", "regex", "ebnf")
# A history this long walks any of the ready-made grammars to its end (measured: at most 38 tokens),
# where only EOS is allowed; the walk stops there, so the step's token ends the grammar.
GRAMMAR_WALK_TO_END = 40
# Two ways a row does not propose this step: its token is its last, or it is backed off.
NO_PROPOSE = st.sampled_from(({"max_tokens_left": 1}, {"spec": "backed_off"}))

CACHE_KINDS = st.sampled_from(("short", "boundary", "near_max"))
FITTING_CACHE_KINDS = st.sampled_from(("short", "boundary"))


@st.composite
def _cache_lengths(draw: st.DrawFn, block_size: int, max_seq_len: int, near_max: bool) -> int:
    bs, top = block_size, max_seq_len - 1
    kind = draw(CACHE_KINDS if near_max else FITTING_CACHE_KINDS)
    if kind == "short":
        return draw(ints(1, min(12, top)))
    if kind == "boundary":
        k = draw(ints(1, max(1, top // bs - 1)))
        return min(top, k * bs + draw(ints(-1, 0)))
    return top - draw(ints(0, 3))


@functools.lru_cache(maxsize=64)
def _cache_lengths_for(block_size: int, max_seq_len: int, near_max: bool) -> st.SearchStrategy[int]:
    return _cache_lengths(block_size, max_seq_len, near_max)


def cache_lengths(m: ModelSpec, near_max: bool = True) -> st.SearchStrategy[int]:
    """Short, across a block boundary, or near `max_seq_len` (unless `near_max` is false)."""
    return _cache_lengths_for(m.block_size, m.max_seq_len, near_max)


# A plain greedy row or a sampled one most often (the batched argmax needs two greedy rows; a third
# of the rows sample), or one that varies a single aspect, or everything at once ("mixed").
STYLES = (
    "greedy",
    "sampled",
    "greedy",
    "sampled",
    "penalized",
    "greedy",
    "sampled",
    "grammar",
    "held",
    "sampled",
    "reasoning",
    "mixed",
    "greedy",
)
STYLE = st.sampled_from(STYLES)
N_OUT = st.integers(0, 6)
# Temperatures are continuous: the usual range, tiny positive ones (near greedy, the scores of a row
# spread far apart), hot ones (near uniform), and ones within 5 % of 1, where code that special-cases
# 1 (or rounds to it) differs from the reference by a hair; the round values first, for shrinking.
TEMPERATURES = st.one_of(
    st.sampled_from((1.0, 0.3, 5.0)),
    st.floats(0.05, 5.0),
    st.floats(1e-3, 0.05),
    st.floats(0.95, 1.05),
)
TOP_KS = st.sampled_from((0, 1, 5, 40, 2))
# Top-p: off, round cuts, any cut, and cuts within 1 % of 1 (a path that treats p >= 0.99 as off).
TOP_PS = st.one_of(
    st.just(1.0), st.sampled_from((0.9, 0.5)), st.floats(0.01, 0.99), st.floats(0.99, 1.0, exclude_max=True)
)
# Penalties: round values, and values within a hair of neutral (1, 0, 0), which are not neutral.
REPETITIONS = st.one_of(st.sampled_from((1.3, 0.8, 1.0)), st.floats(0.97, 1.03))
FREQUENCIES = st.one_of(st.sampled_from((0.0, 0.5)), st.floats(0.0, 0.03))
PRESENCES = st.one_of(st.sampled_from((0.0, 0.7)), st.floats(0.0, 0.03))
GRAMMAR_KINDS = st.sampled_from(GRAMMARS)
TOOL_CALL_END_AT = st.one_of(st.none(), st.integers(0, 5))
ECHO = st.lists(st.integers(0, 4), unique=True, min_size=1, max_size=2).map(tuple)
TOP_LOGPROBS = st.one_of(st.none(), st.integers(0, 5))
SPEC_STATES = st.sampled_from(("on", "on", "on", "on", "backed_off", "reprobe"))
EXTRA_DRAFT_BLOCKS = st.sampled_from((0, 0, 0, 2))
# Room for the whole ladder most often (a group member needs effective drafts = ladder, B15).
MAX_TOKENS_LEFT = st.one_of(st.just(16), st.integers(2, 24))
HOLD_EXTRA = st.sampled_from((1, 3))  # min tokens past the history: held for this token, or longer
# A sampled row's decision set on a hair two times in three, a penalised row's penalty one time in two
# (`properties.worlds.row_shaping`), in every numerics mode: in fast numerics a hair is the finest margin the
# replay oracle holds rather than forgives (the rows' rounding can move it by less), so hairs stay out
# of the near-tie budget there.
NEAR_TIES = st.sampled_from(("", "noise", "top_p"))


@functools.lru_cache(maxsize=8)
def stop_id_lists(vocab_size: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(3, vocab_size - 1), max_size=2).map(tuple)


@st.composite
def seq_specs(
    draw: st.DrawFn, m: ModelSpec, slot_idx: int = 0, ssm_slot: int | None = 0, long_tables: bool = True
) -> SeqSpec:
    """One sequence: sampling parameters, history, limits, grammar, speculation state.

    A style draws a plain greedy row most often (the batched argmax needs two of them), a sampled
    one next, or one that varies a single aspect, or one that varies everything at once ("mixed").
    A grammar row walks its grammar to the end once in three. Without `long_tables`, the drafter
    block table fits the model's default propose-meta stride: no cache near `max_seq_len`, no extra
    drafter blocks."""
    style = draw(STYLE)
    mixed = style == "mixed"
    sampled = style == "sampled" or (mixed and draw(BOOLS))
    penalties = style == "penalized" or (mixed and draw(BOOLS))
    grammar = draw(GRAMMAR_KINDS) if style == "grammar" or (mixed and draw(BOOLS)) else None
    held = style == "held" or (mixed and draw(BOOLS))
    n_out = GRAMMAR_WALK_TO_END if grammar is not None and draw(ONE_IN_3) else draw(N_OUT)
    near_tie = ""
    if penalties and draw(BOOLS):
        near_tie = "penalty"
    elif sampled:
        near_tie = draw(NEAR_TIES)
    return SeqSpec(
        cache_len=draw(cache_lengths(m, long_tables)),
        n_out=n_out,
        max_tokens_left=1 if draw(ONE_IN_8) else draw(MAX_TOKENS_LEFT),  # 1: this token is the last
        temperature=draw(TEMPERATURES) if sampled else 0.0,
        top_k=draw(TOP_KS) if sampled else 0,
        top_p=draw(TOP_PS) if sampled else 1.0,
        repetition=draw(REPETITIONS) if penalties else 1.0,
        frequency=draw(FREQUENCIES) if penalties else 0.0,
        presence=draw(PRESENCES) if penalties else 0.0,
        min_tokens=n_out + draw(HOLD_EXTRA) if held else 0,
        reasoning=style == "reasoning" or (mixed and draw(BOOLS)),
        stop_ids=draw(stop_id_lists(m.vocab_size)) if mixed else (),
        tool_call_end=draw(MOSTLY_ON),
        tool_call_end_at=draw(TOOL_CALL_END_AT),
        echo=draw(ECHO) if penalties else (),
        grammar=grammar,
        top_logprobs=draw(TOP_LOGPROBS),
        spec=draw(SPEC_STATES),
        ssm_slot=ssm_slot,
        slot_idx=slot_idx,
        token_seed=draw(TOKEN_SEEDS),
        extra_draft_blocks=draw(EXTRA_DRAFT_BLOCKS) if long_tables else 0,
        eos_top=held and draw(BOOLS),
        near_tie=near_tie,
    )


@functools.lru_cache(maxsize=64)
def seq_specs_for(m: ModelSpec, long_tables: bool) -> st.SearchStrategy[SeqSpec]:
    return seq_specs(m, long_tables=long_tables)
