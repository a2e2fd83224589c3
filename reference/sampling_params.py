"""A request's sampling parameters, the one record of them: temperature, the top-k and top-p cuts,
and the three penalty strengths. Every layer that passes a request's sampling on speaks it (a client
`Request`, a row's `RowRequest`, a world's `SeqSpec.sampling`, a generation's
`RequestSpec.sampling`); the scheduler's `ActiveSeq` keeps the engine's own flat fields, read back
as one by `SamplingParams.of`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class HasSampling(Protocol):
    """Anything with the engine's six flat sampling fields (an `ActiveSeq`)."""

    temperature: float
    top_k: int
    top_p: float
    repetition_penalty: float
    frequency_penalty: float
    presence_penalty: float


def is_greedy(temperature: float, force_temp_zero: bool = False) -> bool:
    """Whether a row is decided by the argmax of its processed row (ties to the lowest id) instead of
    sampled: temperature 0, or the scheduler forcing temperature 0 for every row."""
    return temperature == 0.0 or force_temp_zero


@dataclass(slots=True, frozen=True)
class SamplingParams:
    """One request's sampling: `temperature` (0: greedy), `top_k` (0: off), `top_p` (1.0: off), and
    the repetition (1.0: off), frequency and presence (0.0: off) penalties."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0

    @classmethod
    def of(cls, a: HasSampling) -> SamplingParams:
        """The parameters a sequence (or any record with the engine's six fields) samples with."""
        return cls(a.temperature, a.top_k, a.top_p, a.repetition_penalty, a.frequency_penalty, a.presence_penalty)

    def greedy(self, force_temp_zero: bool = False) -> bool:
        """`is_greedy` of this request under the scheduler's `force_temp_zero`."""
        return is_greedy(self.temperature, force_temp_zero)

    def fields(self) -> dict[str, float | int]:
        """The six fields by the engine's names (`ActiveSeq(**params.fields(), ...)`)."""
        return {
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
            "repetition_penalty": self.repetition_penalty,
            "frequency_penalty": self.frequency_penalty,
            "presence_penalty": self.presence_penalty,
        }
