"""Hypothesis strategies for worlds: model configs, sequence mixes, step levers and fault plans.

Every strategy shrinks toward the plainest case: one or two greedy sequences with no grammar, no
penalties and no faults, in the default model.
"""

from __future__ import annotations

from hypothesis import strategies as st

from properties.faults import ALTERNATES, BATCHED_STEP_OPS, ONCE_PER_STEP
from properties.run_config import RunConfig
from properties.specs import FaultSpec, ModelSpec, SeqSpec, StepSpec, WorldSpec

GRAMMARS = ("json", "regex", "ebnf")
SLOT_BUCKETS = (8, 16, 64, 256)


def slots_for(n: int) -> int:
    return next(b for b in SLOT_BUCKETS if b >= n)


@st.composite
def model_specs(draw: st.DrawFn, run: RunConfig, n: int) -> ModelSpec:
    """A model for a mix of `n` sequences on the run's device and numerics."""
    block_size = draw(st.sampled_from((16, 8, 4)))
    return ModelSpec(
        dtype=draw(st.sampled_from(run.dtypes)),
        numerics=run.numerics,
        device=run.device,
        vocab_size=draw(st.sampled_from((512, 600))),
        block_size=block_size,
        max_seq_len=draw(st.sampled_from((64, 32, 128))),
        num_slots=slots_for(n),
        # The organic failures (a stash smaller than the batch, a group deeper than the batched
        # drafter, a drafter table over the stride) each take a minority of examples, so that the
        # batched propose groups (B16-B21) get most of them.
        stash_capacity=max(64, n) if draw(st.integers(0, 7)) else draw(st.integers(1, max(n, 1))),
        group_cap=draw(st.sampled_from((4, 2, 3, 8, 4, 2, 1, 0))),
        max_batched_drafts=draw(st.sampled_from((8, 8, 8, 2, 1))),
        meta_stride=draw(st.sampled_from((None, None, None, 2, 4, 6))),
        weights_seed=draw(st.integers(0, 3)),
    )


@st.composite
def cache_lengths(draw: st.DrawFn, m: ModelSpec) -> int:
    """Short, across a block boundary, or near `max_seq_len`."""
    bs, top = m.block_size, m.max_seq_len - 1
    kind = draw(st.sampled_from(("short", "boundary", "near_max")))
    if kind == "short":
        return draw(st.integers(1, min(12, top)))
    if kind == "boundary":
        k = draw(st.integers(1, max(1, top // bs - 1)))
        return min(top, k * bs + draw(st.integers(-1, 0)))
    return top - draw(st.integers(0, 3))


STYLES = ("greedy", "greedy", "greedy", "sampled", "penalized", "grammar", "held", "reasoning", "mixed", "mixed")


@st.composite
def seq_specs(draw: st.DrawFn, m: ModelSpec, slot_idx: int, ssm_slot: int | None) -> SeqSpec:
    """One sequence: sampling parameters, history, limits, grammar, speculation state.

    A style draws a plain greedy row most often (the batched argmax needs two of them), or one
    that varies a single aspect, or one that varies everything at once ("mixed")."""
    style = draw(st.sampled_from(STYLES))
    mixed = style == "mixed"
    n_out = draw(st.integers(0, 6))
    sampled = style == "sampled" or (mixed and draw(st.booleans()))
    temperature = draw(st.sampled_from((1.0, 0.3, 5.0))) if sampled else 0.0
    penalties = style == "penalized" or (mixed and draw(st.booleans()))
    grammar = draw(st.sampled_from(GRAMMARS)) if style == "grammar" or (mixed and draw(st.booleans())) else None
    held = style == "held" or (mixed and draw(st.booleans()))
    return SeqSpec(
        cache_len=draw(cache_lengths(m)),
        n_out=n_out,
        max_tokens_left=draw(st.integers(2, 24)) if draw(st.integers(0, 5)) else 1,  # 1: this token is the last
        temperature=temperature,
        top_k=draw(st.sampled_from((0, 1, 5, 40))) if sampled else 0,
        top_p=draw(st.sampled_from((1.0, 0.9, 0.5))) if sampled else 1.0,
        repetition=draw(st.sampled_from((1.3, 0.8, 1.0))) if penalties else 1.0,
        frequency=draw(st.sampled_from((0.0, 0.5))) if penalties else 0.0,
        presence=draw(st.sampled_from((0.0, 0.7))) if penalties else 0.0,
        min_tokens=draw(st.sampled_from((n_out + 1, n_out + 3))) if held else 0,
        reasoning=style == "reasoning" or (mixed and draw(st.booleans())),
        stop_ids=tuple(draw(st.lists(st.integers(3, m.vocab_size - 1), max_size=2))) if mixed else (),
        tool_call_end_at=draw(st.one_of(st.none(), st.integers(0, 5))),
        echo=tuple(draw(st.lists(st.integers(0, 4), unique=True, min_size=1, max_size=2))) if penalties else (),
        grammar=grammar,
        top_logprobs=draw(st.one_of(st.none(), st.integers(0, 5))),
        spec=draw(st.sampled_from(("on", "on", "backed_off", "reprobe"))),
        ssm_slot=ssm_slot,
        slot_idx=slot_idx,
        token_seed=draw(st.integers(0, 2**16)),
        extra_draft_blocks=draw(st.sampled_from((0, 0, 0, 2))),
    )


MOSTLY_ON = st.sampled_from((True, True, True, False))


@st.composite
def step_specs(draw: st.DrawFn, ladder_max: int = 8) -> StepSpec:
    """Levers mostly at their serving defaults (so the batched paths engage), sometimes off."""
    conf_on = draw(st.booleans())
    return StepSpec(
        ladder_nd=draw(st.one_of(st.sampled_from((3, 1, 2, 4)), st.integers(0, ladder_max))),
        mtp_boot_argmax=draw(MOSTLY_ON),
        dcut_enabled=conf_on and draw(st.booleans()),
        draft_stop_logprob=draw(st.sampled_from((None, -2.0))) if conf_on else None,
        fast_greedy_grammar=draw(MOSTLY_ON),
        force_temp_zero=not draw(MOSTLY_ON),
        min_reasoning_floor=draw(st.sampled_from((0, 4, 12))),
    )


@st.composite
def fault_specs(draw: st.DrawFn, max_faults: int = 2) -> tuple[FaultSpec, ...]:
    """Up to `max_faults` faults: an error or an alternate result of any model call the batched
    step makes, at its first few calls (the first, for an operation called once a step), for any
    member of a batched call."""
    faults = []
    for _ in range(draw(st.integers(0, max_faults))):
        op = draw(st.sampled_from(BATCHED_STEP_OPS))
        kind = draw(st.sampled_from(("err", *ALTERNATES[op])))
        call = 0 if op in ONCE_PER_STEP else draw(st.integers(0, 2))
        faults.append(FaultSpec(op, call, kind, draw(st.one_of(st.none(), st.integers(0, 7)))))
    return tuple(faults)


@st.composite
def world_specs(
    draw: st.DrawFn,
    run: RunConfig,
    *,
    min_n: int = 1,
    faults: bool = False,
    step: st.SearchStrategy[StepSpec] | None = None,
    model: st.SearchStrategy[ModelSpec] | None = None,
) -> WorldSpec:
    """A whole example: n sequences (slots any permutation, some without an SSM slot), which of
    them bootstrap, the step's levers, and optionally a fault plan."""
    n = draw(st.integers(min_n, max(min_n, run.max_n)))
    m = draw(model) if model is not None else draw(model_specs(run, n))
    slots = draw(st.permutations(range(m.num_slots)))[:n]
    ssm = draw(st.permutations(range(m.num_slots)))[:n]
    no_ssm = draw(st.sets(st.integers(0, n - 1), max_size=n))
    seqs = tuple(draw(seq_specs(m, slots[i], None if i in no_ssm else ssm[i])) for i in range(n))
    if draw(st.booleans()):
        bootstrap = tuple(range(n))
    else:
        chosen = draw(st.sets(st.integers(0, n - 1), min_size=min(min_n, n), max_size=n))
        bootstrap = tuple(sorted(chosen)) or (0,)
    return WorldSpec(
        model=m,
        seqs=seqs,
        bootstrap=bootstrap,
        step=draw(step) if step is not None else draw(step_specs()),
        cache_seed=draw(st.integers(0, 2**16)),
        faults=draw(fault_specs()) if faults else (),
    )
