"""P4 on greedy mixes: half or more of the rows are eligible for the batched argmax (greedy, no
grammar, no EOS hold, neutral penalties; the boot-argmax and fast-greedy levers mostly on) and the
others are not, each for one reason that changes what per-row sampling does. At most one fault hits
the argmax path: a logits row the per-row sampler refuses (a NaN logit, a +inf logit, nothing
finite: that row finishes, B9; the batched argmax refuses the batch and every row samples per row,
B7) or a failed `argmax_batch` (B7). General mixes rarely put such a row on an eligible row next to
another eligible one. The bad row is written into a copy of the decode's logits or into the very
tensor the decode returned (`FaultSpec.in_place`): a step that keeps what it derived from the
logits before the edit (a memo of the argmax, say) decides on stale numbers."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.call_checks import check_calls
from properties.compare import check_equivalence
from properties.faults import BAD_ROWS
from properties.harness import run_side_by_side
from properties.log_checks import check_logs
from properties.report import format_report
from properties.run_config import current
from properties.specs import FaultSpec, SeqSpec, WorldSpec
from properties.strategies import world_specs

RUN = current()


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
def greedy_worlds(draw: st.DrawFn) -> WorldSpec:
    """Every sequence bootstraps; one to half of them are ineligible, each for one reason (the
    reasons taken in turn from a drawn start), and the rest eligible (sampled ones among them when
    force_temp_zero makes every row greedy); the levers mostly engage the batched argmax; no fault,
    a refused row (any row, any kind of `BAD_ROWS`, in a copy or in place) or a failed `argmax_batch`."""
    spec = draw(world_specs(RUN, min_n=2))
    n = len(spec.seqs)
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

    def bad_decode_row() -> FaultSpec:
        kind, row, in_place = draw(st.sampled_from(BAD_ROWS)), draw(st.integers(0, n - 1)), draw(st.booleans())
        return FaultSpec("decode_batch", 0, kind, row, in_place)

    choices = (None, bad_decode_row(), bad_decode_row(), bad_decode_row(), FaultSpec("argmax_batch", 0, "err"))
    fault = draw(st.sampled_from(choices))
    faults = () if fault is None else (fault,)
    return replace(spec, seqs=seqs, bootstrap=tuple(range(len(seqs))), step=step, faults=faults)


@covers("P4 faults", "B4", "B5", "B6", "B7", "B8", "B9")
@given(spec=greedy_worlds())
def test_p4_argmax_path_faults(spec: WorldSpec) -> None:
    sbs = run_side_by_side(spec)
    mismatches = check_equivalence(sbs) + check_calls(sbs) + check_logs(sbs)
    assert not mismatches, format_report("P4 argmax path faults", sbs, mismatches)
