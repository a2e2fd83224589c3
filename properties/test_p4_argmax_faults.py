"""P4 on greedy mixes: about three rows in four are eligible for the batched argmax (greedy, no
grammar, no EOS hold, neutral penalties, the boot-argmax and fast-greedy levers on), and at most one
fault hits the argmax path: a NaN logits row (that row finishes, B9; the batched argmax refuses the
batch and every row samples per row, B7) or a failed `argmax_batch` (B7). General mixes rarely put
the NaN row on an eligible row next to another eligible one."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks import check_calls, check_equivalence, check_logs
from properties.harness import run_side_by_side
from properties.report import format_report
from properties.run_config import current
from properties.specs import FaultSpec, SeqSpec, WorldSpec
from properties.strategies import world_specs

RUN = current()


def eligible(s: SeqSpec) -> SeqSpec:
    """`s` made eligible for the batched argmax: greedy, no grammar, no EOS hold, no penalties, no
    reasoning floor."""
    return replace(
        s, temperature=0.0, grammar=None, min_tokens=0, repetition=1.0, frequency=0.0, presence=0.0, reasoning=False
    )


@st.composite
def greedy_worlds(draw: st.DrawFn) -> WorldSpec:
    """Every sequence bootstraps, most of them eligible; the batched argmax engaged by the levers;
    no fault, a NaN row (any row) or a failed `argmax_batch`."""
    spec = draw(world_specs(RUN, min_n=2))
    seqs = tuple(eligible(s) if draw(st.sampled_from((True, True, True, False))) else s for s in spec.seqs)
    step = replace(spec.step, mtp_boot_argmax=True, fast_greedy_grammar=True)
    fault = draw(
        st.sampled_from(
            (
                None,
                FaultSpec("decode_batch", 0, "nan_row", draw(st.integers(0, 7))),
                FaultSpec("decode_batch", 0, "nan_row", draw(st.integers(0, 7))),
                FaultSpec("argmax_batch", 0, "err"),
            )
        )
    )
    faults = () if fault is None else (fault,)
    return replace(spec, seqs=seqs, bootstrap=tuple(range(len(seqs))), step=step, faults=faults)


@covers("P4 faults", "B5", "B6", "B7", "B9")
@given(spec=greedy_worlds())
def test_p4_argmax_path_faults(spec: WorldSpec) -> None:
    sbs = run_side_by_side(spec)
    mismatches = check_equivalence(sbs) + check_calls(sbs) + check_logs(sbs)
    assert not mismatches, format_report("P4 argmax path faults", sbs, mismatches)
