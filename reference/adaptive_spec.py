"""Adaptive speculation per sequence: count serial steps, back off after poor acceptance, re-probe.

`spec_allowed` changes state when it re-probes, so the step calls it exactly once per row.
"""

from __future__ import annotations

from reference.sched_ctx import SchedCtx
from reference.state import ActiveSeq, SpeculationMode

# A verify accepting fewer than this fraction of its drafts backs speculation off.
MIN_ACCEPT_RATE = 0.5


def tick_serial(a: ActiveSeq, sched: SchedCtx) -> None:
    """Count one serial step: `serial_steps` += 1; while BACKED_OFF, `backoff_remaining` counts
    down to 0 (never below)."""
    a.adaptive_spec.serial_steps += 1
    if a.adaptive_spec.mode is SpeculationMode.BACKED_OFF and a.adaptive_spec.backoff_remaining > 0:
        a.adaptive_spec.backoff_remaining -= 1


def spec_allowed(a: ActiveSeq, sched: SchedCtx) -> bool:
    """ON: True, no change. BACKED_OFF with `backoff_remaining` > 0: False, no change. BACKED_OFF
    with `backoff_remaining` == 0: a re-probe: True, `probes` += 1 and `backoff_remaining` =
    `sched.spec_backoff_steps` (the mode stays BACKED_OFF until a verify outcome turns it ON), so a
    second call in the same step returns False (or re-probes again when the backoff is 0 steps)."""
    if a.adaptive_spec.mode is SpeculationMode.ON:
        return True
    if a.adaptive_spec.backoff_remaining > 0:
        return False
    a.adaptive_spec.probes += 1
    a.adaptive_spec.backoff_remaining = sched.spec_backoff_steps
    return True


def record_verify_outcome(
    a: ActiveSeq, accepted: int, proposed: int, sched: SchedCtx, min_rate: float = MIN_ACCEPT_RATE
) -> None:
    """After a verify of `proposed` drafts of which `accepted` were accepted: a rate below
    `min_rate` backs off (BACKED_OFF, `backoff_remaining` = `sched.spec_backoff_steps`), any other
    turns speculation ON (`backoff_remaining` = 0). No drafts proposed: no change.
    Raises ValueError unless 0 <= accepted <= proposed."""
    if not 0 <= accepted <= proposed:
        raise ValueError(f"accepted {accepted} of {proposed} proposed drafts")
    if proposed == 0:
        return
    if accepted < min_rate * proposed:
        a.adaptive_spec.mode = SpeculationMode.BACKED_OFF
        a.adaptive_spec.backoff_remaining = sched.spec_backoff_steps
    else:
        a.adaptive_spec.mode = SpeculationMode.ON
        a.adaptive_spec.backoff_remaining = 0
