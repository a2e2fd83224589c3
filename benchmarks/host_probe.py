"""How fast the host ran around each benchmark round: a fixed piece of host work (Python over lists
and dicts, and a few CPU tensor operations, the kinds of work a step's host side does) timed in
the round's setup, outside the timed region.

A step bound by its host work slows down with the host: on a shared machine, other tenants or a
lower clock can slow every round of a stretch by a third. The probe tells those rounds apart from a
slower step: when a stretch of slow rounds comes with slow probes, the host was slowed, not the
step. Benchmarks record one probe per round (`extra_info["host_probe_s"]`, in round order, as
`stats.data`); `host_speed` summarizes them. The verdicts on targets still use every round.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from time import perf_counter

import torch

SLOWED = 1.2  # a probe slower than this times the fastest probe of the run marks its round as slowed
_ITEMS = [(i, (7 * i) % 13) for i in range(256)]
_SMALL = torch.zeros(8)


def _work() -> int:
    d: dict[int, int] = {}
    for a, b in _ITEMS:
        d[a] = b + len(d)
    x = _SMALL
    for _ in range(8):
        x = x + 1  # the dispatcher's cost per operator, which a step pays hundreds of times
    return sum(v for v in d.values() if v & 1) + int(x[0])


def host_probe_s(repeats: int = 3) -> float:
    """Seconds the fixed host work takes, the best of `repeats` runs (about 30 µs on the development CPU)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = perf_counter()
        _work()
        best = min(best, perf_counter() - t0)
    return best


@dataclass(slots=True, frozen=True)
class HostSpeed:
    """The probes of one benchmark's rounds, against the round times."""

    rounds: int
    slowed: int  # rounds whose probe was over SLOWED times the fastest probe
    steady_median_s: float | None  # the median time of the other rounds; None when no round was steady

    def describe(self) -> str:
        steady = "-" if self.steady_median_s is None else f"{self.steady_median_s * 1e3:.3g} ms"
        return f"{self.slowed} of {self.rounds} (others' median {steady})"


def host_speed(times_s: list[float], probes_s: list[float]) -> HostSpeed:
    """Which of the rounds (times in `times_s`, probes in `probes_s`, both in round order) ran on a
    slowed host, and the median time of the others. ValueError when the lists differ in length."""
    if len(times_s) != len(probes_s):
        raise ValueError(f"{len(times_s)} round times against {len(probes_s)} host probes")
    if not probes_s:
        return HostSpeed(0, 0, None)
    limit = SLOWED * min(probes_s)
    steady = [t for t, p in zip(times_s, probes_s, strict=True) if p <= limit]
    return HostSpeed(len(times_s), len(times_s) - len(steady), statistics.median(steady) if steady else None)
