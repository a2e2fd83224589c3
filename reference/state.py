"""The state one bootstrap step works on: the scheduler's `ActiveSeq` and the model's `SequenceState`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reference.grammar import GrammarState


class FinishReason(StrEnum):
    """Why a sequence finished. A sequence ended by an error has `finished` set and no reason,
    as the engine's step sets only the flag."""

    STOP = "stop"  # an unheld EOS or stop id
    LENGTH = "length"  # max tokens reached
    GRAMMAR = "grammar"  # the grammar terminated


@dataclass(slots=True)
class SequenceState:
    """The model's view of a sequence: where its caches live and how long it is.

    `block_table` maps positions to blocks of the main paged KV cache, `draft_block_table` those of
    the drafter's own paged KV. The scheduler allocates blocks before the step; the model never does.
    """

    slot_idx: int
    ssm_slot: int | None
    seq_len: int
    block_table: list[int] = field(default_factory=list)
    draft_block_table: list[int] = field(default_factory=list)


class SpeculationMode(StrEnum):
    ON = "on"
    BACKED_OFF = "backed_off"


@dataclass(slots=True)
class AdaptiveSpeculation:
    """Adaptive speculation of one sequence. While backed off, `backoff_remaining` counts serial
    steps down to the next re-probe; `probes` counts re-probes taken."""

    mode: SpeculationMode = SpeculationMode.ON
    backoff_remaining: int = 0
    serial_steps: int = 0
    probes: int = 0


@dataclass(slots=True, frozen=True)
class TokenLogprobs:
    """The chosen token's log-probability and the top-k (id, logprob) pairs, best first."""

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...]


@dataclass(slots=True)
class ActiveSeq:
    """The scheduler's view of one running sequence."""

    seq_id: int
    seq: SequenceState
    last_token: int
    sampling_seed: int
    max_tokens: int
    eos_ids: tuple[int, ...]
    output_tokens: list[int] = field(default_factory=list)
    output_logprobs: list[TokenLogprobs | None] = field(default_factory=list)
    temperature: float = 0.0
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1.0: off
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    grammar_state: GrammarState | None = None
    top_logprobs: int | None = None
    pending_drafts: list[int] = field(default_factory=list)
    pending_draft_conf: list[float] = field(default_factory=list)
    finished: bool = False
    finish_reason: FinishReason | None = None
    stop_ids: tuple[int, ...] = ()
    min_tokens: int = 0  # EOS is held while fewer output tokens than this
    tool_call_end_token: int | None = None
    reasoning_end_token: int | None = None  # the sequence reasons until it emits this token
    adaptive_spec: AdaptiveSpeculation = field(default_factory=AdaptiveSpeculation)
