"""Discrete decisions and their margins, with optional forced choices (teacher forcing).

Every discrete choice the reference makes (a greedy argmax, a sampled token, a top-k or top-p cut,
each draft) goes through `decide`. When a `DecisionLog` is installed (a context manager), each
decision is recorded with its margin, and a forced choice for its key replaces the argmax. With no
log installed, `decide` is a plain argmax with ties to the lowest id.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from reference.installed import Installed

_current: contextvars.ContextVar[DecisionLog | None] = contextvars.ContextVar("decision_log", default=None)


@dataclass(slots=True, frozen=True)
class DecisionKey:
    """Which decision: whose, the output position it is for, its kind and index.

    kind: "token" (the emitted token), "topk" / "topp" (a cut), "draft" (index = draft number).
    owner: the sequence id for a token or a cut; the sequence slot for a draft (the model decides
    drafts and knows slots, not sequence ids).
    """

    owner: int
    position: int
    kind: str
    index: int = 0


@dataclass(slots=True)
class Decision:
    """One recorded decision. `scores` (kept when the log asks for them) is the score vector the
    choice was made on, so a margin between any two candidates can be read off later."""

    key: DecisionKey
    chosen: int
    runner_up: int | None
    margin: float  # best score minus second best; inf when there is no runner-up
    forced: bool = False
    scores: torch.Tensor | None = None


@dataclass(slots=True)
class DecisionLog(Installed):
    """Records decisions; `forced` maps a key to the choice to take instead of the argmax;
    `keep_scores` keeps each decision's score vector (float64)."""

    records: list[Decision] = field(default_factory=list)
    forced: dict[DecisionKey, int] = field(default_factory=dict)
    keep_scores: bool = False
    _token: contextvars.Token | None = None
    CURRENT: ClassVar[contextvars.ContextVar[DecisionLog | None]] = _current


def argmax_lowest(scores: torch.Tensor) -> int:
    """Index of the largest finite-or-inf value of a 1-D tensor; ties go to the lowest index.

    NaN is never chosen unless every entry is NaN (then 0)."""
    s = torch.nan_to_num(scores.detach().double(), nan=float("-inf"))
    return int(torch.argmax(s).item())


def top2_margin(scores: torch.Tensor) -> tuple[int, int | None, float]:
    """(best, runner-up, best - runner-up) of a 1-D score tensor, ties to the lowest id."""
    s = torch.nan_to_num(scores.detach().double(), nan=float("-inf"))
    if s.numel() < 2:
        return argmax_lowest(s), None, float("inf")
    best = torch.argmax(s)
    rest = s.index_fill(0, best, float("-inf"))
    second = torch.argmax(rest)
    # One host read for all four numbers (on a GPU each read waits for the device).
    b, r, top, run = torch.stack([best.double(), second.double(), s[best], rest[second]]).tolist()
    if run == float("-inf"):
        return int(b), None, float("inf")
    return int(b), int(r), top - run


def decide(key: DecisionKey, scores: torch.Tensor) -> int:
    """The argmax of `scores` (ties lowest), recorded with its margin when a log is installed;
    a forced choice for `key` wins."""
    log = _current.get()
    if log is None:
        return argmax_lowest(scores)
    best, second, margin = top2_margin(scores)
    forced = log.forced.get(key)
    chosen = best if forced is None else forced
    log.records.append(Decision(key, chosen, second, margin, forced is not None, _kept(log, scores)))
    return chosen


def observe(key: DecisionKey, scores: torch.Tensor, chosen: int) -> int:
    """Record a choice made elsewhere (the model's own argmax) with the margin of `scores`; a
    forced choice for `key` replaces it. With no log installed, `chosen`."""
    log = _current.get()
    if log is None:
        return chosen
    _, second, margin = top2_margin(scores)
    forced = log.forced.get(key)
    out = chosen if forced is None else forced
    log.records.append(Decision(key, out, second, margin, forced is not None, _kept(log, scores)))
    return out


def _kept(log: DecisionLog, scores: torch.Tensor) -> torch.Tensor | None:
    return scores.detach().to(torch.float64, copy=True) if log.keep_scores else None


def record_margin(key: DecisionKey, margin: float, chosen: int = -1) -> None:
    """Record a decision whose margin is computed elsewhere (a top-k or top-p cut)."""
    log = _current.get()
    if log is not None:
        log.records.append(Decision(key, chosen, None, margin))
