"""P3 with P1 and P7 at the propose-meta stride (B26): every row proposes, so the first group forms,
and the stride sits one below, at or one above the drafter block table of one of its members, whose
main block table is shorter. The general mixes rarely put a stride next to a table length, where a
bound that is off by one or read from the wrong table shows."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.call_checks import check_calls
from properties.compare import check_equivalence
from properties.harness import run_side_by_side
from properties.log_checks import check_logs
from properties.report import format_report
from properties.run_config import current
from properties.specs import WorldSpec
from properties.strategies import world_specs
from properties.world import draft_table_len

RUN = current()


@st.composite
def stride_worlds(draw: st.DrawFn) -> WorldSpec:
    """Every sequence bootstraps and proposes a ladder of 1-3 (no grammar, room for it) with extra
    drafter blocks on some rows; groups of 2-4; the meta stride is the drafter table length of one
    row (the pivot) minus one, plus zero or plus one."""
    spec = draw(world_specs(RUN, min_n=2))
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


@covers("P3 call accounting", "B21", "B25", "B26")
@given(spec=stride_worlds())
def test_p3_meta_stride_boundary(spec: WorldSpec) -> None:
    sbs = run_side_by_side(spec)
    mismatches = check_equivalence(sbs) + check_calls(sbs) + check_logs(sbs)
    assert not mismatches, format_report("P3 meta stride", sbs, mismatches)
