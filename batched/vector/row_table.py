"""The row classes of a bootstrap batch in one pass over the rows: the EOS hold and the batched-argmax
eligibility (B4, B5), with exactly the per-row semantics of `reference.eos_hold.presample_hold_for`,
`reference.penalties.classify_penalties` (of `penalty_params_for(a, VERIFY, floor)`) and
`batched.step.greedy_eligible`.

Two comprehensions, not tensor columns. At a batch's sizes a CPU tensor operation costs more than a
comprehension over every row: the nine columns this module built and the dozen elementwise operations
over them took 94 µs for 64 rows on the development CPU (three times that on the GPU's host, ahead of
the drafter pass's launch), the comprehensions 9 µs.
"""

from __future__ import annotations

from reference.penalties import reasoning_floor_holds
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq


def row_classes(
    refs: list[ActiveSeq], min_reasoning_floor: int, sched: SchedCtx, verify_ctx: LogitsContext
) -> tuple[list[bool], list[bool]]:
    """(held, greedy) per row of refs: EOS held before sampling (fewer output tokens than min tokens,
    and EOS ids), and the batched argmax may serve the row (the boot-argmax lever and fast greedy on,
    temperature 0 or forced to 0, no grammar, no EOS hold, neutral verify penalties: repetition 1,
    frequency 0, presence 0 and no reasoning-floor ban; a NaN parameter is not neutral)."""
    held = [len(a.output_tokens) < a.min_tokens and len(a.eos_ids) > 0 for a in refs]
    sampling = verify_ctx.sampling
    if not (sched.levers.mtp_boot_argmax and sampling.fast_greedy_grammar):
        return held, [False] * len(refs)
    force = sampling.force_temp_zero
    greedy = [
        (a.temperature == 0.0 or force)
        and a.grammar_state is None
        and not h
        and a.repetition_penalty == 1.0
        and a.frequency_penalty == 0.0
        and a.presence_penalty == 0.0
        and not reasoning_floor_holds(a, min_reasoning_floor)
        for a, h in zip(refs, held, strict=True)
    ]
    return held, greedy
