"""Worlds for the oracles on a step's own draws: a generated world (mixes of at most `MAX_N`, the
step's `force_temp_zero` off) and one or two of its bootstrapped sequences to copy (the sources),
each made a sampled row.

A source keeps the generators' sampling parameters one time in four (tiny temperatures, top-k 1 and
top-p cuts that keep one token included); otherwise it takes parameters that keep several tokens
with real mass, on which a wrong draw shows: a row that keeps one token tests the support alone. One
world in six has a vocabulary of a serving model's size (32000 ids on the CPU, 129280 on a GPU), so
that the samplers' paths for wide rows (chunked sorts, 16-bit packing, vectorized tails) are drawn
too. Ties (tied embedding rows) and hairs (`properties.worlds.row_shaping`) come from the generators, in
every numerics mode.
"""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from properties.config import RunConfig
from properties.worlds.draws import ONE_IN_4
from properties.worlds.model_strategies import model_specs
from properties.worlds.seq_strategies import TEMPERATURES, TOP_KS, TOP_PS
from properties.worlds.specs import SeqSpec, WorldSpec
from properties.worlds.strategies import STEP_SPECS, world_specs

MAX_N = 6  # the world's own sequences: the copies are the draws, the rest only the batch around them
MAX_SOURCES = 2
WIDE_VOCAB = {"cpu": 32000, "cuda": 129280}
SAMPLED_STEPS = STEP_SPECS.map(lambda s: dataclasses.replace(s, force_temp_zero=False))
SPREAD_TEMPERATURES = st.one_of(st.sampled_from((1.0, 0.7, 1.5)), st.floats(0.3, 3.0))
SPREAD_TOP_KS = st.sampled_from((0, 40, 5, 2))
SPREAD_TOP_PS = st.one_of(st.sampled_from((1.0, 0.95, 0.9)), st.floats(0.8, 1.0))
WIDE = st.sampled_from((False, False, False, False, False, True))
# A copy draws its own seed, so a "noise" hair (a seed picked for its near tie) means nothing here.
SOURCE_NEAR_TIES = st.sampled_from(("", "", "top_p"))


def wide_vocab(run: RunConfig) -> int:
    """The serving-sized vocabulary of the run's device."""
    return WIDE_VOCAB["cuda" if run.on_gpu else "cpu"]


@st.composite
def draw_specs(draw: st.DrawFn, run: RunConfig) -> tuple[WorldSpec, tuple[int, ...]]:
    """A world and its sources (module docstring)."""
    small = dataclasses.replace(run, max_n=min(run.max_n, MAX_N))
    model = None
    if run.model == "small" and draw(WIDE):
        model = model_specs(small, MAX_N).map(lambda m: dataclasses.replace(m, vocab_size=wide_vocab(run)))
    spec = draw(world_specs(small, step=SAMPLED_STEPS, model=model), label="world")
    count = draw(st.integers(1, min(MAX_SOURCES, len(spec.bootstrap))), label="sources")
    sources = tuple(sorted(draw(st.permutations(spec.bootstrap), label="source order")[:count]))
    seqs = list(spec.seqs)
    for j in sources:
        seqs[j] = draw(sampled_source(seqs[j]), label=f"seq[{j}] sampling")
    return dataclasses.replace(spec, seqs=tuple(seqs)), sources


@st.composite
def sampled_source(draw: st.DrawFn, s: SeqSpec) -> SeqSpec:
    """`s` as a sampled row: spread parameters three times in four, else the generators' own."""
    if draw(ONE_IN_4):
        temperature, top_k, top_p = draw(TEMPERATURES), draw(TOP_KS), draw(TOP_PS)
    else:
        temperature, top_k, top_p = draw(SPREAD_TEMPERATURES), draw(SPREAD_TOP_KS), draw(SPREAD_TOP_PS)
    near_tie = s.near_tie if s.near_tie == "penalty" else draw(SOURCE_NEAR_TIES)
    return dataclasses.replace(s, temperature=temperature, top_k=top_k, top_p=top_p, near_tie=near_tie)
