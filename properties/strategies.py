"""Hypothesis strategies for worlds: model configs, sequence mixes and step levers (fault plans in
`properties.fault_plans`, worlds at serving sizes in `properties.wide_worlds`).

The strategies are aimed at the batched paths: most examples bootstrap two rows or more, most form a
batched propose group that returns drafts, and a fair share form two groups (a cap of 2 is drawn
often for that); a third of the rows sample, at continuous temperatures (tiny ones too) with top-p
cuts; some grammar rows walk their grammar to its end, so that the step's token ends the grammar.
`docs/generators.md` gives the targets; `tests/test_generator_targets.py` asserts them and prints the figures.

Every strategy shrinks toward the plainest case: two greedy sequences with no grammar, no penalties
and no faults, in the default model. Choices list the plain value first (`sampled_from` shrinks to
its first element, `one_of` to its first branch). Constant strategies are built once, here, and the
few that depend on drawn values are cached by their bounds: building a strategy on every draw costs
more than the draw.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from hypothesis import strategies as st

from properties.config import MODEL_SIZES, RunConfig
from properties.fault_plans import fault_specs_for
from properties.specs import ModelSpec, SeqSpec, StepSpec, WorldSpec

GRAMMARS = ("json", "regex", "ebnf")
SLOT_BUCKETS = (8, 16, 64, 256)
# A history this long walks any of the ready-made grammars to its end (measured: at most 38 tokens),
# where only EOS is allowed; the walk stops there, so the step's token ends the grammar.
GRAMMAR_WALK_TO_END = 40


def slots_for(n: int) -> int:
    return next(b for b in SLOT_BUCKETS if b >= n)


@functools.lru_cache(maxsize=512)
def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """`st.integers(lo, hi)`, built once per pair of bounds."""
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=64)
def permutations_of(n: int) -> st.SearchStrategy[list[int]]:
    return st.permutations(range(n))


@functools.lru_cache(maxsize=64)
def index_sets(n: int, min_size: int) -> st.SearchStrategy[frozenset[int]]:
    return st.frozensets(st.integers(0, n - 1), min_size=min_size, max_size=n)


@functools.lru_cache(maxsize=64)
def mix_sizes(lo: int, hi: int) -> st.SearchStrategy[int]:
    """A size in [lo, hi], from the upper half of it two times in three: Hypothesis draws the lower
    bound of a range often, and two groups of a cap of 2 need four batchable rows or more."""
    anywhere, upper = st.integers(lo, hi), st.integers(max(lo, (lo + hi + 1) // 2), hi)
    return st.sampled_from((False, True, True)).flatmap(lambda up: upper if up else anywhere)


def one_in(k: int) -> st.SearchStrategy[bool]:
    """True once in `k` draws; shrinks to False."""
    return st.integers(0, k - 1).map(lambda x: x == k - 1)


BOOLS = st.booleans()
ONE_IN_3, ONE_IN_4, ONE_IN_8 = one_in(3), one_in(4), one_in(8)
# Two ways a row does not propose this step: its token is its last, or it is backed off.
NO_PROPOSE = st.sampled_from(({"max_tokens_left": 1}, {"spec": "backed_off"}))

# -- model ------------------------------------------------------------------------------------
BLOCK_SIZES = st.sampled_from((16, 8, 4))
VOCAB_SIZES = st.sampled_from((512, 600))
MAX_SEQ_LENS = st.sampled_from((64, 32, 128))
# A cap of 2 makes two groups out of four batchable rows (B16 chunking), so it is drawn most.
GROUP_CAPS = st.sampled_from((2, 4, 2, 3, 2, 2, 8))
# The model's organic failures, at most one a model, in about 30 % of the models (each one about
# 7 %): a stash smaller than the batch (B13), a cap of 1 or 0 (no batched propose, B14/B16), a
# group deeper than the batched drafter (it returns None, B20, for ladders above 2 or 1), a propose
# meta stride under the drafter table of a long sequence (B25/B26). Each one takes every group it
# meets off the path where groups return drafts, so together they stay a minority.
# ("none" also last: Hypothesis draws the ends of a choice more often than the middle.)
ORGANIC = st.sampled_from(
    ("none",) * 4 + ("small_cap", "none", "small_stash", "none", "deep_group", "none", "small_stride") + ("none",) * 4
)
SMALL_GROUP_CAPS = st.sampled_from((1, 0))
SMALL_BATCHED_DRAFTS = st.sampled_from((2, 1))
SMALL_META_STRIDES = st.sampled_from((4, 2, 6))
# DFlash drafter models: the gate (G5) reads them, the step does not.
DFLASH_GAMMAS = st.sampled_from((None, None, None, 4))
WEIGHT_SEEDS = st.integers(0, 3)
# Token ids sharing embedding rows in pairs or threes in two models of five: every argmax, draft and
# cut of those worlds meets exact ties, which untied random weights never produce. Exact numerics
# only: in fast numerics the two sides round a tie apart, and a tie within rounding is a decision
# the replay oracle forces (every row of such a model would be one), so the tie rule is checked
# where it is exact and fast numerics keeps the near-tie budget meaningful.
TIE_GROUPS = st.sampled_from((1, 1, 2, 1, 3))


@st.composite
def model_specs(draw: st.DrawFn, run: RunConfig, n: int) -> ModelSpec:
    """A model for a mix of `n` sequences on the run's device and numerics, of the run's size."""
    organic = draw(ORGANIC)
    dtype = draw(dtypes(run.dtypes))
    size = MODEL_SIZES[run.model]
    hidden, heads, vocab = size if size else (32, 2, draw(VOCAB_SIZES))
    return ModelSpec(
        dtype=dtype,
        numerics=run.numerics,
        device=run.device,
        reference_device=run.reference_device,
        hidden=hidden,
        n_heads=heads,
        vocab_size=vocab,
        block_size=draw(BLOCK_SIZES),
        max_seq_len=draw(MAX_SEQ_LENS),
        num_slots=slots_for(n),
        stash_capacity=draw(ints(1, max(n, 1))) if organic == "small_stash" else max(64, n),
        group_cap=draw(SMALL_GROUP_CAPS) if organic == "small_cap" else draw(GROUP_CAPS),
        max_batched_drafts=draw(SMALL_BATCHED_DRAFTS) if organic == "deep_group" else 8,
        meta_stride=draw(SMALL_META_STRIDES) if organic == "small_stride" else None,
        dflash_gamma=draw(DFLASH_GAMMAS),
        weights_seed=draw(WEIGHT_SEEDS),
        tie_group=draw(TIE_GROUPS) if run.numerics == "exact" else 1,
    )


@functools.lru_cache(maxsize=8)
def dtypes(choices: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(choices)


# -- sequences --------------------------------------------------------------------------------
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
TOKEN_SEEDS = st.integers(0, 2**16)
EXTRA_DRAFT_BLOCKS = st.sampled_from((0, 0, 0, 2))
# Room for the whole ladder most often (a group member needs effective drafts = ladder, B15).
MAX_TOKENS_LEFT = st.one_of(st.just(16), st.integers(2, 24))
HOLD_EXTRA = st.sampled_from((1, 3))  # min tokens past the history: held for this token, or longer
# Exact numerics: a sampled row's decision set on a hair two times in three, a penalised row's penalty
# one time in two (`properties.row_shaping`). Fast numerics leaves them out: there a near tie within
# rounding is what the replay oracle forgives.
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
    if m.numerics == "exact" and penalties and draw(BOOLS):
        near_tie = "penalty"
    elif m.numerics == "exact" and sampled:
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


# -- step -------------------------------------------------------------------------------------
MOSTLY_ON = st.sampled_from((True, True, True, False))
# Ladders of 1-4 drafts most often (a batched group needs effective drafts = ladder, B15); any
# depth up to the longest, 0 included (no batched propose, B16), besides.
# (3 also last, and 0 inside: Hypothesis draws the ends of a choice more often than the middle.)
LADDERS = st.sampled_from((3, 1, 2, 4, 1, 5, 0, 6, 2, 7, 8, 4, 3))
DRAFT_STOP_LOGPROBS = st.sampled_from((None, -2.0))
REASONING_FLOORS = st.sampled_from((0, 4, 12))


@st.composite
def step_specs(draw: st.DrawFn, ladder_max: int = 8) -> StepSpec:
    """Levers mostly at their serving defaults (so the batched paths engage), sometimes off."""
    conf_on = draw(BOOLS)
    return StepSpec(
        ladder_nd=draw(LADDERS if ladder_max == 8 else ints(0, ladder_max)),
        mtp_boot_argmax=draw(MOSTLY_ON),
        dcut_enabled=conf_on and draw(BOOLS),
        draft_stop_logprob=draw(DRAFT_STOP_LOGPROBS) if conf_on else None,
        fast_greedy_grammar=draw(MOSTLY_ON),
        force_temp_zero=draw(ONE_IN_4),
        min_reasoning_floor=draw(REASONING_FLOORS),
    )


STEP_SPECS = step_specs()


# -- worlds -----------------------------------------------------------------------------------
@st.composite
def world_specs(
    draw: st.DrawFn,
    run: RunConfig,
    *,
    min_n: int = 1,
    faults: bool = False,
    step: st.SearchStrategy[StepSpec] | None = None,
    model: st.SearchStrategy[ModelSpec] | None = None,
    no_proposer: bool = False,
) -> WorldSpec:
    """A whole example: n sequences (slots any permutation, some without an SSM slot), which of
    them bootstrap, the step's levers, and optionally a fault plan.

    Mixes of two or more sequences, all of them bootstrapping, most often; a single sequence (one
    in eight, where the run allows it) and a subset (one in three) besides. One world in four has
    sequences near `max_seq_len` and drafter tables with extra blocks: any one of them overflows the
    default propose-meta stride and fails its whole group (B26), so they stay out of the others.

    `no_proposer`: no bootstrapped row may propose (each ends with this step's token or is backed
    off), so work done for an empty set of proposers shows. Drawn row by row, such a world all but
    disappears as mixes grow (one row of 64 that proposes is enough), so it is a whole-world choice."""
    top = max(min_n, run.max_n)
    lo = max(min_n, 2) if top >= 2 and not draw(ONE_IN_8) else min_n
    n = draw(mix_sizes(lo, top))
    m = draw(model) if model is not None else draw(model_specs(run, n))
    slots = draw(permutations_of(m.num_slots))[:n]
    ssm = draw(permutations_of(m.num_slots))[:n]
    no_ssm = draw(index_sets(n, 0)) if draw(BOOLS) else frozenset()
    seq = seq_specs_for(m, draw(ONE_IN_4))
    seqs = tuple(replace(draw(seq), slot_idx=slots[i], ssm_slot=None if i in no_ssm else ssm[i]) for i in range(n))
    if n >= 2 and draw(ONE_IN_3):
        # a subset, of two rows or more mostly (a batch with rows that stay out of it)
        chosen = draw(index_sets(n, min(max(min_n, 1 if draw(ONE_IN_4) else 2), n)))
        bootstrap = tuple(sorted(chosen)) or (0,)
    else:
        bootstrap = tuple(range(n))
    if no_proposer:
        seqs = tuple(replace(q, **draw(NO_PROPOSE)) if i in bootstrap else q for i, q in enumerate(seqs))
    return WorldSpec(
        model=m,
        seqs=seqs,
        bootstrap=bootstrap,
        step=draw(step) if step is not None else draw(STEP_SPECS),
        cache_seed=draw(TOKEN_SEEDS),
        faults=draw(fault_specs_for(len(bootstrap), m.group_cap)) if faults else (),
    )
