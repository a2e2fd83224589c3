"""Hypothesis strategies for the model of a world (`properties.worlds.specs.ModelSpec`): sizes, the group
cap, the drafter kind, tied weights, and the model's organic failures (a stash under the batch, a
small cap, a shallow batched drafter, a small propose-meta stride), at most one a model.

Choices list the plain value first, so a model shrinks toward the default one."""

from __future__ import annotations

from hypothesis import strategies as st

from properties.config import MODEL_SIZES, RunConfig
from properties.worlds.draws import dtypes, ints, slots_for
from properties.worlds.specs import ModelSpec

BLOCK_SIZES = st.sampled_from((16, 8, 4))
VOCAB_SIZES = st.sampled_from((512, 601))  # 601: rows off 16-byte and 32-bit-word boundaries
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
# cut of those worlds meets exact ties, which untied random weights never produce. In every numerics
# mode: ids of one head row have one logit in any row a kernel computes, so between two of them the
# tie rule decides and rounding never does (the replay oracle refuses to force such a decision,
# `properties.sides.forcing.tied_alike`).
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
        tie_group=draw(TIE_GROUPS),
    )
