"""Worlds aimed at one path of the step, for the properties that check it: the propose-meta stride's
boundary, groups and proposing mixes (P3), the batched argmax's eligibility and its faults (P4), one
group launched ahead (the fully batched step), and pairs of worlds for a model that ran another.
Each takes the run's configuration. The gate's inputs and worlds (P2) are `properties.worlds.gate_worlds`."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from properties.config import RunConfig
from properties.worlds.draws import ONE_IN_8
from properties.worlds.fault_kinds import BAD_ROWS, ONCE_PER_STEP
from properties.worlds.specs import FaultSpec, SeqSpec, WorldSpec
from properties.worlds.strategies import world_specs
from properties.worlds.wide_worlds import wide_world_specs
from properties.worlds.world import draft_table_len


@st.composite
def world_pairs(draw: st.DrawFn, run: RunConfig) -> tuple[WorldSpec, WorldSpec]:
    """World A, and world B: A's sequences with other caches and block ids, slots rotated or not."""
    a = replace(draw(world_specs(run)), faults=())
    seqs = a.seqs
    if draw(st.booleans()) and len(seqs) >= 2:  # each slot handed to the next sequence
        slots = [s.slot_idx for s in seqs]
        seqs = tuple(replace(s, slot_idx=slots[(i + 1) % len(seqs)]) for i, s in enumerate(seqs))
    seed = a.cache_seed + draw(st.integers(1, 2**30))  # another seed: other caches and block ids
    return a, replace(a, seqs=seqs, cache_seed=seed)


@st.composite
def ahead_cases(draw: st.DrawFn, run: RunConfig) -> tuple[WorldSpec, int, bool, int]:
    """A world whose bootstrap rows (two or more) all propose the whole ladder (1-3) in one group, the
    confidences asked or not, and the row a change concerns."""
    spec = draw(world_specs(run, min_n=2))
    k = draw(st.sampled_from((1, 2, 3)))
    seqs = tuple(replace(s, spec="on", grammar=None, max_tokens_left=max(s.max_tokens_left, k + 2)) for s in spec.seqs)
    model = replace(spec.model, group_cap=64, max_batched_drafts=8, stash_capacity=64, meta_stride=64)
    step = replace(spec.step, ladder_nd=k)  # drafter tables sized for the ladder
    spec = replace(spec, seqs=seqs, model=model, step=step, bootstrap=tuple(range(len(seqs))), faults=())
    return spec, k, draw(st.booleans()), draw(st.integers(0, 63))


# Ways to make a row ineligible for the batched argmax, each one changing what per-row sampling
# does: held off EOS, inside the reasoning floor, under a grammar, penalized, sampled. Hypothesis
# draws small integers most often, so the reasons whose effect is hardest to see come first.
SPOILERS: tuple[dict, ...] = (
    {"min_tokens": 9},
    {"reasoning": True},
    {"grammar": "json"},
    # the row's favourite token before the tool-call end (out of scope) or after it (in scope)
    {"repetition": 1.3, "frequency": 0.5, "n_out": 4, "tool_call_end_at": 1, "echo": (0,)},
    {"repetition": 0.8, "presence": 0.7, "n_out": 4, "tool_call_end_at": 0, "echo": (2, 1)},
    {"repetition": 1.3, "frequency": 0.5, "presence": 0.7, "tool_call_end_at": 1},
    {"temperature": 1.0, "top_k": 0, "top_p": 1.0},
    {"temperature": 5.0, "top_k": 40, "top_p": 0.9},
)


def eligible(s: SeqSpec) -> SeqSpec:
    """`s` made eligible for the batched argmax: greedy, no grammar, no EOS hold, no penalties, no
    reasoning floor."""
    return replace(
        s, temperature=0.0, grammar=None, min_tokens=0, repetition=1.0, frequency=0.0, presence=0.0, reasoning=False
    )


@st.composite
def greedy_worlds(draw: st.DrawFn, run: RunConfig) -> WorldSpec:
    """Every sequence bootstraps; one to half of them are ineligible, each for one reason (the
    reasons taken in turn from a drawn start), and the rest eligible (sampled ones among them when
    force_temp_zero makes every row greedy); the levers mostly engage the batched argmax; no fault,
    a refused row (any kind of `BAD_ROWS`, in a copy or in place; mostly an eligible row, else any
    row) or a failed `argmax_batch`.
    One world in eight is wide in rows (past 16 or 64) with a refused row past that boundary or a
    failed `argmax_batch`: a batched argmax works rows in tiles, and its path for a refused or edited
    row is another than the common one (a wide world without a fault is P1's)."""
    spec = draw(wide_world_specs(run, st.just("rows")) if draw(ONE_IN_8) else world_specs(run, min_n=2))
    n = len(spec.seqs)
    past = max((b for b in (16, 64) if b < n), default=0)  # the last row tile boundary the mix passes
    spoiled = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=max(1, n // 2))))
    first = draw(st.integers(0, len(SPOILERS) - 1))
    reason = {i: SPOILERS[(first + k) % len(SPOILERS)] for k, i in enumerate(spoiled)}
    forced = draw(st.sampled_from((False, True, False)))  # force_temp_zero: sampled rows count as greedy
    seqs = tuple(
        replace(eligible(s), **reason[i])
        if i in reason
        else replace(eligible(s), temperature=draw(st.sampled_from((1.0, 0.0, 5.0))) if forced else 0.0)
        for i, s in enumerate(spec.seqs)
    )
    boot_argmax, fast_greedy = draw(
        st.sampled_from(((True, True), (True, True), (True, True), (False, True), (True, False)))
    )
    step = replace(
        spec.step,
        mtp_boot_argmax=boot_argmax,
        fast_greedy_grammar=fast_greedy,
        force_temp_zero=forced,
        min_reasoning_floor=12,
    )

    # The refused row is one the batched argmax takes three times in four (past the tile boundary
    # where the mix passes one): a refused row that no argmax reads leaves the argmax path unexercised.
    taken = [i for i in range(past, n) if i not in reason]

    def bad_decode_row() -> FaultSpec:
        kind = draw(st.sampled_from(BAD_ROWS))
        rows = st.sampled_from(taken) if taken and draw(st.integers(0, 3)) else st.integers(past, n - 1)
        return FaultSpec("decode_batch", 0, kind, draw(rows), draw(st.booleans()))

    faulted = (bad_decode_row(), bad_decode_row(), bad_decode_row(), FaultSpec("argmax_batch", 0, "err"))
    choices = faulted if past else (None, *faulted)
    fault = draw(st.sampled_from(choices))
    faults = () if fault is None else (fault,)
    return replace(spec, seqs=seqs, bootstrap=tuple(range(len(seqs))), step=step, faults=faults)


# Propose-side faults (operation, outcome), a group's results weighted up: most mixes have one group.
PROPOSE_FAULTS: tuple[tuple[str, str], ...] = (
    ("run_mtp_propose_batched", "empty"),
    ("run_mtp_propose_batched", "empty"),
    ("run_mtp_propose_batched", "empty"),
    ("run_mtp_propose_batched", "err"),
    ("run_mtp_propose_batched", "none"),
    ("run_mtp_propose_multi", "err"),
    ("run_mtp_propose_multi", "empty"),
    ("save_hidden_for_mtp_from_stash", "err"),
    ("stash_verify_hidden_rows", "err"),
)


CONFIDENCE_LEVERS = ((False, None), (False, -2.0), (True, None), (True, -2.0))  # (D-Cut, draft-stop logprob)


# One outcome for the first group call, the first per-sequence fallback or the first checkpoint
# (None: no fault).
GROUP_OUTCOMES: tuple[tuple[str, str] | None, ...] = (
    None,
    ("run_mtp_propose_batched", "empty"),
    ("run_mtp_propose_batched", "empty"),
    ("run_mtp_propose_batched", "none"),
    ("run_mtp_propose_batched", "err"),
    ("run_mtp_propose_multi", "err"),
    ("run_mtp_propose_multi", "empty"),
    ("save_hidden_for_mtp_from_stash", "err"),
    ("start_checkpoint_async", "err"),
)


@st.composite
def group_worlds(draw: st.DrawFn, run: RunConfig) -> WorldSpec:
    """Every sequence bootstraps and proposes the whole ladder (1-3, within the batched drafter's
    limit, or 0: no group may form) with no grammar, the stash and the stride fit, the cap is 2-4
    (or 0 or 1: every row falls back); at most one fault, on the first call of a propose-side
    operation or of the checkpoints. Three sequences or more where `--max-n` allows, so that a second
    group (or a short last one) is common."""
    spec = draw(world_specs(run, min_n=max(2, min(3, run.max_n))))
    ladder = draw(st.sampled_from((1, 2, 3, 0)))
    seqs = tuple(
        replace(s, spec="on", grammar=None, stop_ids=(), max_tokens_left=max(s.max_tokens_left, ladder + 2))
        for s in spec.seqs
    )
    dcut, draft_stop = draw(st.sampled_from(CONFIDENCE_LEVERS))
    model = replace(
        spec.model,
        group_cap=draw(st.sampled_from((2, 0, 3, 4, 1, 2))),
        max_batched_drafts=8,
        stash_capacity=64,
        meta_stride=64,
    )
    step = replace(spec.step, ladder_nd=ladder, dcut_enabled=dcut, draft_stop_logprob=draft_stop)
    outcome = draw(st.sampled_from(GROUP_OUTCOMES))
    faults = () if outcome is None else (FaultSpec(outcome[0], 0, outcome[1], draw(st.integers(0, 3))),)
    return replace(spec, seqs=seqs, bootstrap=tuple(range(len(seqs))), model=model, step=step, faults=faults)


@st.composite
def propose_faults(draw: st.DrawFn) -> tuple[FaultSpec, ...]:
    """Up to two faults on the propose-side calls, mostly at the first call, for any of the first
    members of a group."""
    faults = []
    for _ in range(draw(st.sampled_from((1, 1, 2, 0)))):
        op, kind = draw(st.sampled_from(PROPOSE_FAULTS))
        call = 0 if op in ONCE_PER_STEP else draw(st.sampled_from((0, 0, 0, 1, 2)))
        faults.append(FaultSpec(op, call, kind, draw(st.integers(0, 3))))
    return tuple(faults)


@st.composite
def proposing_worlds(draw: st.DrawFn, run: RunConfig) -> WorldSpec:
    """A general mix of two or more sequences in which about three rows in four are made to propose
    (speculation on, no grammar, room for the whole ladder); the rest stay as drawn (grammar rows,
    clamped or backed-off rows, rows that finish)."""
    spec = draw(world_specs(run, min_n=2))
    ladder = draw(st.sampled_from((1, 0, 2, 3, 4)))
    seqs = tuple(
        replace(s, spec="on", grammar=None, max_tokens_left=max(s.max_tokens_left, ladder + 2))
        if draw(st.sampled_from((True, True, True, False)))
        else s
        for s in spec.seqs
    )
    dcut, draft_stop = draw(st.sampled_from(CONFIDENCE_LEVERS))
    model = replace(
        spec.model,
        group_cap=draw(st.sampled_from((2, 0, 3, 4, 8, 1, 2))),
        max_batched_drafts=draw(st.sampled_from((8, 8, 2, 1))),
        stash_capacity=draw(st.sampled_from((64, 64, 64, 2))),
    )
    step = replace(spec.step, ladder_nd=ladder, dcut_enabled=dcut, draft_stop_logprob=draft_stop)
    return replace(spec, seqs=seqs, model=model, step=step, faults=draw(propose_faults()))


@st.composite
def stride_worlds(draw: st.DrawFn, run: RunConfig) -> WorldSpec:
    """Every sequence bootstraps and proposes a ladder of 1-3 (no grammar, room for it) with extra
    drafter blocks on some rows; groups of 2-4; the meta stride is the drafter table length of one
    row (the pivot) minus one, plus zero or plus one; slot ids past 64 and 256 in half of them (a
    refused group's members go through the per-row checks)."""
    spec = draw(world_specs(run, min_n=2, wide_slots=True))
    ladder = draw(st.integers(1, 3))
    seqs = tuple(
        replace(
            s,
            spec="on",
            grammar=None,
            stop_ids=(),
            max_tokens_left=max(s.max_tokens_left, ladder + 2),
            extra_draft_blocks=draw(st.sampled_from((1, 0, 2))),
        )
        for s in spec.seqs
    )
    pivot = draw(st.integers(0, len(seqs) - 1))
    stride = max(1, draft_table_len(seqs[pivot], spec.model, ladder) + draw(st.sampled_from((0, -1, 1))))
    model = replace(spec.model, group_cap=draw(st.sampled_from((2, 3, 4))), stash_capacity=64, meta_stride=stride)
    step = replace(spec.step, ladder_nd=ladder)
    return replace(spec, seqs=seqs, bootstrap=tuple(range(len(seqs))), model=model, step=step, faults=())
