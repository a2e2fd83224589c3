"""Hypothesis strategies for wide worlds: sizes past every tile and word boundary an implementation may have inside."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from properties.config import RunConfig
from properties.worlds.draws import TOKEN_SEEDS, WIDE_SLOT_SPACE, ints, permutations_of
from properties.worlds.fault_plans import fault_specs_for
from properties.worlds.model_strategies import model_specs
from properties.worlds.seq_strategies import seq_specs_for
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import STEP_SPECS

# Sizes past every tile and word boundary an implementation may have inside: mixes past 16 and 64
# rows, sequence and SSM slots past 64 and 256 (of 512), token ids past 32767 and 65535 (vocabularies
# of 2**17 and of a tokenizer's 151665). A large vocabulary costs the CPU about as much as 10 rows do,
# so a world is wide in rows, in vocabulary, or in both at 17-20 rows. Caches hold what the world
# needs, not every slot's longest sequence. About half the worlds hold rows without an SSM slot, whose
# sort and duplicate keys are then their slot ids, among the SSM slots of the other rows.
WIDE_SLOTS = WIDE_SLOT_SPACE
WIDE_SHAPES = st.sampled_from(("rows", "vocab", "both"))
WIDE_ROWS = st.one_of(st.integers(17, 24), st.integers(65, 72))
WIDE_VOCABS = st.sampled_from((131072, 151665))
WIDE_GROUP_CAPS = st.sampled_from((8, 2, 16, 64, 4))


@st.composite
def wide_world_specs(draw: st.DrawFn, run: RunConfig, shapes: st.SearchStrategy[str] = WIDE_SHAPES) -> WorldSpec:
    """A world at serving sizes (see above) of one of `shapes` ("rows", "vocab", "both"), with a
    fault plan over all its rows most of the time."""
    shape = draw(shapes)
    n = draw({"rows": WIDE_ROWS, "vocab": ints(2, 8), "both": ints(17, 20)}[shape])
    m = draw(model_specs(run, n))
    m = replace(
        m,
        vocab_size=m.vocab_size if shape == "rows" else draw(WIDE_VOCABS),
        num_slots=WIDE_SLOTS,
        stash_capacity=max(64, n),
        group_cap=draw(WIDE_GROUP_CAPS),
    )
    step = draw(STEP_SPECS)
    seq = seq_specs_for(m, False)
    slots = draw(permutations_of(WIDE_SLOTS))[:n]
    ssm = draw(permutations_of(WIDE_SLOTS))[:n]
    seqs = tuple(replace(draw(seq), slot_idx=slots[i], ssm_slot=ssm[i]) for i in range(n))
    blocks = sum(-(-(s.cache_len + 1 + step.ladder_nd) // m.block_size) + 2 for s in seqs)
    m = replace(m, num_blocks=blocks + 8, num_draft_blocks=blocks + 8)
    cache_seed, faults = draw(TOKEN_SEEDS), draw(fault_specs_for(n, m.group_cap))
    # Drawn last, so that every earlier draw of a derandomized sample stays where it was.
    bare = draw(st.sets(st.integers(0, n - 1), max_size=max(1, n // 4)) | st.just(frozenset()))
    return WorldSpec(
        model=m,
        seqs=tuple(replace(s, ssm_slot=None) if i in bare else s for i, s in enumerate(seqs)),
        bootstrap=tuple(range(n)),
        step=step,
        cache_seed=cache_seed,
        faults=faults,
    )
