"""Which requests whole generations bootstrap through the implementation both before and after
their per-request state changed: the EOS hold ended, the grammar advanced, the penalised history
grew, the speculation state moved. An implementation that keeps such state from one bootstrap to
the next (a cache by request) differs from the reference only at the second of two such bootstraps,
which a single-step world never has; P9 reaches them, and `tests/test_generation_reach.py` holds the
generators to it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from reference.eos_hold import presample_hold_for
from reference.penalties import PenaltyGate, PositionKind, classify_penalties, penalty_params_for
from reference.state import ActiveSeq

# What changed between two bootstraps of one request through the implementation.
CHANGES = ("hold ended", "grammar advanced", "penalised history grew", "speculation state changed")


@dataclass(slots=True, frozen=True)
class RequestState:
    """A request's per-request state as one bootstrap finds it."""

    held: bool
    grammar: int | None  # tokens the grammar accepted; None: no grammar
    history: int | None  # output tokens the penalties see; None: neutral penalties
    speculation: tuple[str, int, int]  # mode, backoff remaining, probes


def state_of(a: ActiveSeq, min_reasoning_floor: int) -> RequestState:
    pen = penalty_params_for(a, PositionKind.VERIFY, min_reasoning_floor)
    spec = a.adaptive_spec
    return RequestState(
        held=presample_hold_for(a, len(a.output_tokens)).any(),
        grammar=None if a.grammar_state is None else len(a.grammar_state.accepted),
        history=None if classify_penalties(pen) is PenaltyGate.NEUTRAL else len(a.output_tokens),
        speculation=(str(spec.mode), spec.backoff_remaining, spec.probes),
    )


@dataclass(slots=True)
class Reach:
    """Every request's states at its bootstraps through the implementation."""

    states: dict[int, list[RequestState]] = field(default_factory=dict)

    def record(self, a: ActiveSeq, min_reasoning_floor: int) -> None:
        self.states.setdefault(a.seq_id, []).append(state_of(a, min_reasoning_floor))

    def counts(self) -> Counter[str]:
        """Requests by change (`CHANGES`) seen between two of their bootstraps."""
        out: Counter[str] = Counter()
        for states in self.states.values():
            for change in changes(states):
                out[change] += 1
        return out


def changes(states: list[RequestState]) -> set[str]:
    """The changes (`CHANGES`) between any two of one request's bootstraps, in order."""
    out = set()
    if any(s.held for s in states) and not states[-1].held:
        out.add("hold ended")
    if len({s.grammar for s in states if s.grammar is not None}) >= 2:
        out.add("grammar advanced")
    if len({s.history for s in states if s.history is not None}) >= 2:
        out.add("penalised history grew")
    if len({s.speculation for s in states}) >= 2:
        out.add("speculation state changed")
    return out
