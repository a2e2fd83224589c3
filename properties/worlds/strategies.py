"""Hypothesis strategies for worlds: step levers and whole mixes (models in
`properties.worlds.model_strategies`, sequences in `properties.worlds.seq_strategies`, fault plans in
`properties.worlds.fault_plans`, worlds at serving sizes in `properties.worlds.wide_worlds`).

The strategies are aimed at the batched paths: most examples bootstrap two rows or more, most form a
batched propose group that returns drafts, and a fair share form two groups (a cap of 2 is drawn
often for that); a third of the rows sample, at continuous temperatures (tiny ones too) with top-p
cuts; some grammar rows walk their grammar to its end, so that the step's token ends the grammar.
`docs/generators.md` gives the targets; `tests/test_generator_targets.py` asserts them and prints the figures.

Every strategy shrinks toward the plainest case: two greedy sequences with no grammar, no penalties
and no faults, in the default model. Choices list the plain value first (`sampled_from` shrinks to
its first element, `one_of` to its first branch). Constant strategies are built once, in these
modules, and the few that depend on drawn values are cached by their bounds: building a strategy on
every draw costs more than the draw.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from properties.config import RunConfig
from properties.worlds.draws import (
    BOOLS,
    MOSTLY_ON,
    ONE_IN_3,
    ONE_IN_4,
    ONE_IN_8,
    TOKEN_SEEDS,
    WIDE_SLOT_SPACE,
    index_sets,
    ints,
    mix_sizes,
    permutations_of,
)
from properties.worlds.fault_plans import fault_specs_for
from properties.worlds.model_strategies import model_specs
from properties.worlds.seq_strategies import NO_PROPOSE, seq_specs_for
from properties.worlds.specs import ModelSpec, StepSpec, WorldSpec
from properties.worlds.world import model_config

# -- step -------------------------------------------------------------------------------------
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
    wide_slots: bool = False,
) -> WorldSpec:
    """A whole example: n sequences (slots any permutation, some without an SSM slot), which of
    them bootstrap, the step's levers, and optionally a fault plan.

    Mixes of two or more sequences, all of them bootstrapping, most often; a single sequence (one
    in eight, where the run allows it) and a subset (one in three) besides. One world in four has
    sequences near `max_seq_len` and drafter tables with extra blocks: any one of them overflows the
    default propose-meta stride and fails its whole group (B26), so they stay out of the others.

    `no_proposer`: no bootstrapped row may propose (each ends with this step's token or is backed
    off), so work done for an empty set of proposers shows. Drawn row by row, such a world all but
    disappears as mixes grow (one row of 64 that proposes is enough), so it is a whole-world choice.

    `wide_slots`: half the worlds take their slot ids from `WIDE_SLOT_SPACE` (`in_wide_slot_space`),
    for the properties whose worlds are refused by the all-rows checks (a propose group past its meta
    stride, bad input), where the per-row checks run on those ids. Drawn last, so that the samples
    of every other world keep their draws."""
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
    world = WorldSpec(
        model=m,
        seqs=seqs,
        bootstrap=bootstrap,
        step=draw(step) if step is not None else draw(STEP_SPECS),
        cache_seed=draw(TOKEN_SEEDS),
        faults=draw(fault_specs_for(len(bootstrap), m.group_cap)) if faults else (),
    )
    if wide_slots and draw(BOOLS):
        return draw(in_wide_slot_space(world))
    return world


@st.composite
def aliasing_ids(draw: st.DrawFn, n: int) -> list[int]:
    """`n` distinct ids below `WIDE_SLOT_SPACE` that share their low six bits in pairs and more (a
    few low parts, any of the high ones): ids 64 or 256 apart, which an id kept in a 64-bit mask or
    in 8 bits makes one. Ids drawn anywhere in the space would rarely meet so in a group of a few."""
    high = WIDE_SLOT_SPACE // 64
    lows = draw(st.lists(ints(0, 63), min_size=-(-n // high), max_size=-(-n // high) + 2, unique=True))
    parts = st.tuples(st.sampled_from(lows), ints(0, high - 1))
    return [low + 64 * hi for low, hi in draw(st.lists(parts, min_size=n, max_size=n, unique=True))]


@st.composite
def in_wide_slot_space(draw: st.DrawFn, world: WorldSpec) -> WorldSpec:
    """`world` with its sequence and SSM slot ids drawn anew from `WIDE_SLOT_SPACE` (`aliasing_ids`:
    a slot kept in a 64-bit mask or an 8-bit id then meets the paths this world takes, not only the
    wide worlds' common ones), its caches still sized for its own mix."""
    n, sized = len(world.seqs), model_config(world.model)
    slots, ssm = draw(aliasing_ids(n)), draw(aliasing_ids(n))
    model = replace(
        world.model,
        num_slots=WIDE_SLOT_SPACE,
        num_blocks=sized.num_blocks,
        num_draft_blocks=sized.num_draft_blocks,
    )
    seqs = tuple(
        replace(q, slot_idx=slots[i], ssm_slot=None if q.ssm_slot is None else ssm[i]) for i, q in enumerate(world.seqs)
    )
    return replace(world, model=model, seqs=seqs)
