"""What a side-by-side run of one example leaves: each side's world, calls, logs and captured rows,
and what the comparison found along the way (the plan, the translated faults, the decisions forced
onto the reference with what explains them, the replay oracle's results, what the step changed
outside its world). `properties.sides.harness` makes it; the checks read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from properties.config import DEFAULT_REPLAYS
from properties.impl import Impl
from properties.sides.call_plan import Plan
from properties.sides.faults import FaultyModel
from properties.sides.mismatch import Mismatch
from properties.sides.translate import Translation
from properties.worlds.specs import WorldSpec
from properties.worlds.world import World
from reference.decisions import Decision, DecisionKey, DecisionLog
from reference.state import ActiveSeq, TokenLogprobs
from reference.telemetry import LogRecord


@dataclass(slots=True, frozen=True)
class ForcedDecision:
    """A decision the reference was forced onto, with what explains it: both margins (each side's
    choice over the other's, on its own scores), the largest difference of the two rows, and how
    far that difference can move a margin (`bound`), all in `units`."""

    key: DecisionKey
    ref_choice: int
    impl_choice: int
    ref_margin: float
    impl_margin: float
    row_difference: float
    bound: float
    units: str

    def text(self) -> str:
        k = self.key
        what = f"{k.kind} of seq {k.owner}" if k.kind == "token" else f"draft {k.index} of slot {k.owner}"
        return (
            f"{what} at position {k.position}: reference {self.ref_choice}, implementation {self.impl_choice}; "
            f"margins {self.ref_margin:.3g} (reference) and {self.impl_margin:.3g} (implementation) {self.units}, "
            f"row difference {self.row_difference:.3g}, explains up to {self.bound:.3g}"
        )


@dataclass(slots=True)
class Replay:
    """The reference semantics on the implementation's row of one sequence: the token (None when
    the sampler refuses the row, with its error), the decision log with scores, and the logprobs."""

    token: int | None
    error: str | None
    log: DecisionLog
    logprobs: TokenLogprobs | None = None


@dataclass(slots=True)
class Side:
    """One side after its run: the world, the recording model, the logs, any exception that escaped
    the step, the decisions recorded (reference) and the drafter rows each draft was decided on
    (with, for rows a mask was applied to, the rows before it)."""

    world: World
    model: FaultyModel
    logs: list[LogRecord]
    error: BaseException | None = None
    decisions: list[Decision] = field(default_factory=list)
    draft_rows: dict[tuple[int, int, int], torch.Tensor] = field(default_factory=dict)
    unmasked_draft_rows: dict[tuple[int, int, int], torch.Tensor] = field(default_factory=dict)


@dataclass(slots=True)
class SideBySide:
    spec: WorldSpec
    before: World
    ref: Side
    impl: Side
    translation: Translation
    under_test: Impl
    plan: Plan = field(default_factory=Plan)
    forced: dict[DecisionKey, int] = field(default_factory=dict)
    forced_decisions: list[ForcedDecision] = field(default_factory=list)  # near ties (the budget's)
    own_draws: list[ForcedDecision] = field(default_factory=list)  # own-noise draws inside the support
    unexplained: list[str] = field(default_factory=list)  # divergences the replay oracle could not explain
    replays: dict[int, Replay] = field(default_factory=dict)  # by slot: the reference semantics on its rows
    rounds: int = 1  # reference runs
    outside: list[Mismatch] = field(default_factory=list)  # what the step changed outside its world
    replay_dir: Path = DEFAULT_REPLAYS  # where a failure's replay file goes


def bootstrapped(sbs: SideBySide) -> list[tuple[ActiveSeq, ActiveSeq]]:
    """(before, implementation after) of every bootstrapped sequence, in index order."""
    return [(sbs.before.active[i], sbs.impl.world.active[i]) for i in sbs.before.idxs]


def emitted(b: ActiveSeq, a: ActiveSeq) -> int | None:
    """The token the step emitted for the sequence, if it emitted one."""
    n = len(b.output_tokens)
    return a.output_tokens[n] if len(a.output_tokens) > n else None
