"""Hypothesis strategies for whole generations: the engines' world, requests and planned faults.

Sizes are chosen so generations cross KV blocks (blocks of 4 or 8 positions, up to 32 tokens), slots
run out and are reused (2 to 4 slots, blocks sometimes scarcer than slots), and requests finish by
every reason: length (max tokens), stop (a stop id taken from the request's own solo decode, or
EOS), grammar (a grammar request without EOS ids), abort, and an error (an injected decode fault).
Everything shrinks toward one greedy request without grammar, penalties or faults.
"""

from __future__ import annotations

from hypothesis import strategies as st

from properties.config import RunConfig
from properties.generations.spec import GenerationSpec, RequestSpec
from properties.worlds.fault_kinds import ALTERNATES, BATCHED_STEP_OPS, ONCE_PER_STEP
from properties.worlds.fault_plans import in_place_edits
from properties.worlds.specs import FaultSpec, ModelSpec, StepSpec

GRAMMARS = ("regex", "ebnf", "json")
# Tokens of a prompt: plain tokens present in every vocabulary the strategies use.
PROMPT_TOKENS = st.integers(3, 409)
# The bootstrap operations a fault may hit in P9: those of the batched step and of the loop, except
# the fast-greedy argmax (its translation needs the call plan of a single-step run).
FAULT_OPS = (*(op for op in BATCHED_STEP_OPS if op != "argmax_on_device"), "decode", "save_hidden_for_mtp")
MOSTLY = st.sampled_from((True, True, True, False))


@st.composite
def generation_specs(draw: st.DrawFn, run: RunConfig) -> GenerationSpec:
    """The world: model sizes and envelope, step levers, cache garbage, block supply."""
    block_size = draw(st.sampled_from((4, 8)))
    max_seq_len = draw(st.sampled_from((32, 24, 48)))
    num_slots = draw(st.sampled_from((3, 2, 4)))
    model = ModelSpec(
        dtype=draw(st.sampled_from(run.dtypes)),
        numerics=run.numerics,
        device=run.device,
        vocab_size=512,
        block_size=block_size,
        max_seq_len=max_seq_len,
        num_slots=num_slots,
        stash_capacity=draw(st.sampled_from((64, 64, 64, 2))),
        group_cap=draw(st.sampled_from((4, 2, 3, 1, 0))),
        max_batched_drafts=draw(st.sampled_from((8, 8, 8, 2))),
        meta_stride=draw(st.sampled_from((None, None, None, None, 2))),
        weights_seed=draw(st.integers(0, 3)),
    )
    conf = draw(st.booleans())
    step = StepSpec(
        ladder_nd=draw(st.sampled_from((3, 1, 2, 4, 0))),
        mtp_batch_bootstrap=draw(MOSTLY),
        mtp_boot_argmax=draw(MOSTLY),
        dcut_enabled=conf and draw(st.booleans()),
        draft_stop_logprob=draw(st.sampled_from((None, -2.0))) if conf else None,
        fast_greedy_grammar=draw(MOSTLY),
        force_temp_zero=not draw(MOSTLY),
        min_reasoning_floor=draw(st.sampled_from((0, 0, 4))),
        spec_backoff_steps=draw(st.sampled_from((1, 0, 4))),
    )
    per_request = -(-max_seq_len // block_size)
    scarce = draw(st.sampled_from((None, None, None, per_request + per_request // 2)))
    return GenerationSpec(model, step, draw(st.integers(0, 2**16)), scarce)


STYLES = ("greedy", "greedy", "sampled", "sampled", "penalized", "grammar", "held", "stop", "mixed")


@st.composite
def request_specs(draw: st.DrawFn) -> RequestSpec:
    """One request. A style varies one aspect (or, "mixed", several at once)."""
    style = draw(st.sampled_from(STYLES))
    mixed = style == "mixed"
    sampled = style == "sampled" or (mixed and draw(st.booleans()))
    penalized = style == "penalized" or (mixed and draw(st.booleans()))
    grammar = style == "grammar" or (mixed and draw(st.booleans()))
    held = style == "held" or (mixed and draw(st.booleans()))
    return RequestSpec(
        prompt=tuple(draw(st.lists(PROMPT_TOKENS, min_size=1, max_size=12))),
        max_tokens=draw(st.integers(1, 24)),
        temperature=draw(st.sampled_from((1.0, 0.5, 5.0))) if sampled else 0.0,
        top_k=draw(st.sampled_from((0, 5, 40))) if sampled else 0,
        top_p=draw(st.sampled_from((1.0, 0.9))) if sampled else 1.0,
        repetition=draw(st.sampled_from((1.3, 0.8))) if penalized else 1.0,
        frequency=draw(st.sampled_from((0.0, 0.5))) if penalized else 0.0,
        presence=draw(st.sampled_from((0.0, 0.7))) if penalized else 0.0,
        grammar=draw(st.sampled_from(GRAMMARS)) if grammar else None,
        min_tokens=draw(st.integers(1, 6)) if held else 0,
        eos=draw(st.booleans()) if grammar else True,
        eos_at=draw(st.integers(0, 6)) if held and draw(st.booleans()) else None,
        stop_at=draw(st.integers(0, 8)) if style == "stop" or (mixed and draw(st.booleans())) else None,
        tool_call_end=penalized and draw(st.booleans()),
        reasoning=mixed and draw(st.booleans()),
        top_logprobs=draw(st.one_of(st.none(), st.integers(0, 3))),
        seed=draw(st.integers(0, 2**16)),
        ssm=draw(MOSTLY),
    )


@st.composite
def fault_specs(draw: st.DrawFn) -> FaultSpec:
    """One fault for the next step's bootstrap: an error or an alternate result of one of its
    calls (the first, for an operation called once a step), for any member of a batched call."""
    op = draw(st.sampled_from(FAULT_OPS))
    kind = draw(st.sampled_from(("err", *ALTERNATES[op])))
    call = 0 if op in ONCE_PER_STEP else draw(st.integers(0, 2))
    return FaultSpec(op, call, kind, draw(st.one_of(st.none(), st.integers(0, 3))), draw(in_place_edits(op, kind)))
