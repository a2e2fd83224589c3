"""What a P9 run did, counted for its report and the measured figures."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from properties.generations.oracle import ForcedTally
from properties.generations.reach import Reach


@dataclass(slots=True)
class PairStats:
    """The counts of one run of an engine pair."""

    steps: int = 0
    batched_bootstraps: int = 0
    generations: int = 0
    tokens: int = 0
    engine_steps_per_generation: list[int] = field(default_factory=list)
    verifies: int = 0
    drafts_proposed: int = 0
    drafts_accepted: int = 0
    bonus_tokens: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    faults_fired: int = 0
    slots_reused: int = 0
    crossed_blocks: int = 0
    d1_opened: int = 0
    d1_reads: int = 0
    d1_closed_by_rewrite: int = 0
    tally: ForcedTally = field(default_factory=ForcedTally)  # fast numerics: decisions and those forced
    solo_decisions: int = 0  # of them, the solo decodes' (fast numerics)
    top_ids_explained: int = 0  # top-logprob ids that differ from the solo decode's by rounding
    reach: Reach = field(default_factory=Reach)  # requests' states at their bootstraps through the implementation
