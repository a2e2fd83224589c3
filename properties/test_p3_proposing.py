"""P3 with P1 and P7 on mixes where most rows propose: group caps mostly of 2 and more, ladders from 0 up
(some above the batched drafter's limit, so groups return None), confidences asked for by D-Cut, by
a draft-stop logprob, by both or by neither, and faults aimed at the stash, the group proposes and
the per-sequence fallbacks; and on mixes where every row proposes, so that the first group always
forms and its one outcome (drafts, an empty member, None, an error) or a fallback's is what varies.
General mixes reach a group of two proposing rows too rarely to show a wrong chunking, a wrong
confidence source or a mishandled group result."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.call_checks import check_calls
from properties.compare import check_equivalence
from properties.faults import ONCE_PER_STEP
from properties.harness import run_side_by_side
from properties.log_checks import check_logs
from properties.report import format_report
from properties.run_config import current
from properties.specs import FaultSpec, WorldSpec
from properties.strategies import world_specs

RUN = current()

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
def group_worlds(draw: st.DrawFn) -> WorldSpec:
    """Every sequence bootstraps and proposes the whole ladder (1-3, within the batched drafter's
    limit, or 0: no group may form) with no grammar, the stash and the stride fit, the cap is 2-4
    (or 0 or 1: every row falls back); at most one fault, on the first call of a propose-side
    operation or of the checkpoints. Three sequences or more where `--max-n` allows, so that a second
    group (or a short last one) is common."""
    spec = draw(world_specs(RUN, min_n=max(2, min(3, RUN.max_n))))
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


@covers("P3 call accounting", "B14", "B16", "B17", "B18", "B19", "B20", "B21", "B22", "B23", "D4")
@given(spec=group_worlds())
def test_p3_group_outcomes(spec: WorldSpec) -> None:
    sbs = run_side_by_side(spec)
    mismatches = check_equivalence(sbs) + check_calls(sbs) + check_logs(sbs)
    assert not mismatches, format_report("P3 group outcomes", sbs, mismatches)


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
def proposing_worlds(draw: st.DrawFn) -> WorldSpec:
    """A general mix of two or more sequences in which about three rows in four are made to propose
    (speculation on, no grammar, room for the whole ladder); the rest stay as drawn (grammar rows,
    clamped or backed-off rows, rows that finish)."""
    spec = draw(world_specs(RUN, min_n=2))
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


@covers(
    "P3 call accounting",
    "B13",
    "B14",
    "B15",
    "B16",
    "B17",
    "B18",
    "B19",
    "B20",
    "B21",
    "B22",
    "B23",
    "B24",
    "B25",
    "B26",
    "D4",
)
@given(spec=proposing_worlds())
def test_p3_proposing_mixes(spec: WorldSpec) -> None:
    sbs = run_side_by_side(spec)
    mismatches = check_equivalence(sbs) + check_calls(sbs) + check_logs(sbs)
    assert not mismatches, format_report("P3 proposing mixes", sbs, mismatches)
