"""Adaptive speculation: serial-step counting, backing off, the re-probe state machine, and that a
second spec_allowed call in one step is visible."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.adaptive_spec import record_verify_outcome, spec_allowed, tick_serial
from reference.sched_ctx import SchedCtx
from reference.state import ActiveSeq, AdaptiveSpeculation, SequenceState, SpeculationMode


def seq(spec: AdaptiveSpeculation | None = None) -> ActiveSeq:
    return ActiveSeq(
        seq_id=0,
        seq=SequenceState(0, None, 1),
        last_token=3,
        sampling_seed=0,
        max_tokens=50,
        eos_ids=(0,),
        adaptive_spec=spec or AdaptiveSpeculation(),
    )


def step(a: ActiveSeq, sched: SchedCtx) -> bool:
    """One serial step as the bootstrap takes it: tick, then spec_allowed exactly once."""
    tick_serial(a, sched)
    return spec_allowed(a, sched)


@given(n=st.integers(0, 20), backoff=st.integers(0, 6))
def test_on_is_always_allowed_and_unchanged(n: int, backoff: int) -> None:
    a, sched = seq(), SchedCtx(spec_backoff_steps=backoff)
    assert all(step(a, sched) for _ in range(n))
    assert a.adaptive_spec == AdaptiveSpeculation(serial_steps=n)


@given(backoff=st.integers(0, 6), n=st.integers(1, 30))
def test_backed_off_reprobes_every_backoff_steps(backoff: int, n: int) -> None:
    a, sched = seq(), SchedCtx(spec_backoff_steps=backoff)
    record_verify_outcome(a, 0, 4, sched)
    assert (a.adaptive_spec.mode, a.adaptive_spec.backoff_remaining) == (SpeculationMode.BACKED_OFF, backoff)
    allowed = [step(a, sched) for _ in range(n)]
    period = max(backoff, 1)
    assert allowed == [(i + 1) % period == 0 for i in range(n)]
    assert a.adaptive_spec.probes == n // period and a.adaptive_spec.serial_steps == n
    assert 0 <= a.adaptive_spec.backoff_remaining <= backoff and a.adaptive_spec.mode is SpeculationMode.BACKED_OFF


def test_a_second_call_in_the_same_step_is_visible() -> None:
    sched = SchedCtx(spec_backoff_steps=3)
    a = seq(AdaptiveSpeculation(mode=SpeculationMode.BACKED_OFF, backoff_remaining=1))
    tick_serial(a, sched)
    assert spec_allowed(a, sched)
    assert (a.adaptive_spec.probes, a.adaptive_spec.backoff_remaining) == (1, 3)
    assert not spec_allowed(a, sched)
    assert (a.adaptive_spec.probes, a.adaptive_spec.backoff_remaining) == (1, 3)
    # With no backoff a second call re-probes again: probes counts it.
    a = seq(AdaptiveSpeculation(mode=SpeculationMode.BACKED_OFF))
    assert spec_allowed(a, SchedCtx(spec_backoff_steps=0)) and spec_allowed(a, SchedCtx(spec_backoff_steps=0))
    assert a.adaptive_spec.probes == 2


def test_tick_never_goes_below_zero_and_leaves_on_alone() -> None:
    sched = SchedCtx()
    a = seq(AdaptiveSpeculation(mode=SpeculationMode.BACKED_OFF, backoff_remaining=0))
    tick_serial(a, sched)
    assert a.adaptive_spec == AdaptiveSpeculation(mode=SpeculationMode.BACKED_OFF, backoff_remaining=0, serial_steps=1)
    a = seq(AdaptiveSpeculation(mode=SpeculationMode.ON, backoff_remaining=2))
    tick_serial(a, sched)
    assert a.adaptive_spec.backoff_remaining == 2


def test_verify_outcomes() -> None:
    sched = SchedCtx(spec_backoff_steps=5)
    a = seq()
    record_verify_outcome(a, 1, 4, sched)
    assert (a.adaptive_spec.mode, a.adaptive_spec.backoff_remaining) == (SpeculationMode.BACKED_OFF, 5)
    record_verify_outcome(a, 0, 0, sched)
    assert (a.adaptive_spec.mode, a.adaptive_spec.backoff_remaining) == (SpeculationMode.BACKED_OFF, 5)
    record_verify_outcome(a, 2, 4, sched)
    assert (a.adaptive_spec.mode, a.adaptive_spec.backoff_remaining) == (SpeculationMode.ON, 0)
    for accepted, proposed in ((-1, 2), (3, 2)):
        with pytest.raises(ValueError):
            record_verify_outcome(a, accepted, proposed, sched)
