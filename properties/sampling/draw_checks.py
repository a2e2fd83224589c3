"""The oracles on a step's own draws (`properties.sampling.step_draws`), each on the reference's exact
distribution of the row the implementation drew from (its own row, with the reference's request):

- support: every draw is a token the reference can draw there, or the reference's refusal where it
  refuses (the row finished with no token), never nothing;
- distribution: a source's independent draws (base copies and partners) pooled, against the mean
  of their rows' distributions (`properties.sampling.statistics.goodness_of_fit`; rows that differ
  within rounding make the pooled counts a sum of unlike multinomials, which spreads less than one
  multinomial of the mean: the test stays at or under its level);
- independence: a partner's token agrees with its base's with probability sum_t p(t) q(t) under a
  correct sampler (the two rows' distributions); the agreements of all pairs of one kind are a sum of
  independent Bernoulli variables, whose exact upper tail (`agreement_tail`) is the p-value. A
  sampler that truncates seeds to 32 bits, or ignores the position, agrees nearly always;
- invariance: the same request on the same row bits draws the same token: a twin and its base in one
  call, a copy and itself in another call (`properties.sampling.test_step_invariance`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch

from properties.sampling.statistics import GofResult, goodness_of_fit, token_counts
from properties.sampling.step_draws import Draw
from reference.row_request import kept_scores
from reference.sampling import SamplingError

INDEPENDENT = ("base", "bits", "position")


@dataclass(slots=True)
class Distributions:
    """The reference's kept scores' softmax and support of each (source, shift, row bits), or its
    refusal: the rows of one source and shift share a request but for the seed."""

    cache: dict[tuple[int, int, bytes], tuple[torch.Tensor, torch.Tensor] | SamplingError] = field(default_factory=dict)

    def of(self, d: Draw) -> tuple[torch.Tensor, torch.Tensor] | SamplingError | None:
        """(probabilities float64 [V] on the CPU, support bool [V]) of `d`'s row, its refusal, or
        None when the implementation decoded no row for it."""
        if d.row is None:
            return None
        key = (d.copy.source, d.copy.shift, d.row_key)
        if key not in self.cache:
            try:
                kept = kept_scores(d.row, d.request).cpu()
                self.cache[key] = (torch.softmax(kept, dim=0), torch.isfinite(kept))
            except SamplingError as e:
                self.cache[key] = e
        return self.cache[key]


def what(d: Draw) -> str:
    c = d.copy
    return f"call {d.call}, copy of seq[{c.source}] ({d.role.kind}) in slot {d.slot}, seed {c.seed}, shift {c.shift}"


def support_faults(draws: Iterable[Draw], dists: Distributions) -> list[str]:
    """Every draw that is not a token of its row's support, nor the reference's refusal of it."""
    out: list[str] = []
    for d in draws:
        got = dists.of(d)
        if got is None:
            out.append(f"{what(d)}: the step decoded no row for it and emitted {d.token}")
        elif isinstance(got, SamplingError):
            if d.token is not None or not d.finished:
                out.append(f"{what(d)}: the reference refuses its row ({got}); the step gave token {d.token}")
        elif d.token is None:
            out.append(f"{what(d)}: no token for a row the reference samples (finished {d.finished})")
        elif not 0 <= d.token < got[1].shape[0] or not bool(got[1][d.token]):
            out.append(f"{what(d)}: token {d.token} is outside the reference's support ({int(got[1].sum())} kept)")
    return out


def sampled(draws: Iterable[Draw], dists: Distributions) -> list[tuple[Draw, torch.Tensor]]:
    """The independent draws that drew a token from a row the reference samples, with its probabilities."""
    out = []
    for d in draws:
        got = dists.of(d)
        if d.role.kind in INDEPENDENT and d.token is not None and isinstance(got, tuple):
            out.append((d, got[0]))
    return out


def pooled_fit(draws: Sequence[tuple[Draw, torch.Tensor]]) -> GofResult:
    """The goodness of fit of one source's draws to the mean of their rows' distributions."""
    probs = torch.stack([p for _, p in draws]).mean(dim=0)
    tokens = torch.tensor([d.token for d, _ in draws], dtype=torch.int64)
    return goodness_of_fit(token_counts(tokens, probs.shape[0]), probs / probs.sum())


@dataclass(slots=True, frozen=True)
class Agreement:
    """Pairs of one kind: how many, how many agreed, how many a correct sampler makes agree on
    average, and P(at least that many) under a correct sampler."""

    kind: str
    pairs: int
    agreed: int
    expected: float
    p_value: float

    def describe(self) -> str:
        return (
            f"{self.kind} pairs: {self.agreed} of {self.pairs} drew the same token, {self.expected:.3g} expected "
            f"of independent draws: p = {self.p_value:.3g}"
        )


def agreement_tail(q: Sequence[float], agreed: int) -> float:
    """P(K >= agreed) for K a sum of independent Bernoulli(q_i) (the Poisson-binomial law, exactly)."""
    dist = torch.zeros(len(q) + 1, dtype=torch.float64)
    dist[0] = 1.0
    for i, qi in enumerate(q):
        dist[1 : i + 2] = dist[1 : i + 2] * (1.0 - qi) + dist[: i + 1] * qi
        dist[0] *= 1.0 - qi
    return float(dist[agreed:].sum().clamp(max=1.0))


def agreements(draws: Sequence[Draw], dists: Distributions, kind: str) -> Agreement:
    """The pairs of `kind` ("bits" or "position") among `draws`: each partner with its base, where
    both drew a token from a row the reference samples."""
    q: list[float] = []
    agreed = 0
    for members in by_call(draws).values():
        for d in members:
            if d.role.kind != kind or d.role.of is None:
                continue
            base = members[d.role.of]
            pa, pb = dists.of(d), dists.of(base)
            if d.token is None or base.token is None or not isinstance(pa, tuple) or not isinstance(pb, tuple):
                continue
            q.append(float((pa[0] * pb[0]).sum().clamp(max=1.0)))
            agreed += int(d.token == base.token)
    return Agreement(kind, len(q), agreed, sum(q), agreement_tail(q, agreed) if q else 1.0)


def twin_faults(draws: Sequence[Draw]) -> tuple[list[str], int]:
    """Twins whose token differs from their base's on the same row bits, and how many twins were
    comparable (their rows' bits equal: always in exact numerics)."""
    out: list[str] = []
    compared = 0
    for call, members in by_call(draws).items():
        for d in members:
            if d.role.kind != "twin" or d.role.of is None:
                continue
            base = members[d.role.of]
            if base.row_key != d.row_key or not base.row_key:
                continue
            compared += 1
            if base.token != d.token:
                out.append(
                    f"call {call}: seq[{d.copy.source}] seed {d.copy.seed} drew {base.token} in slot {base.slot} "
                    f"and {d.token} in slot {d.slot}, on the same row bits"
                )
    return out, compared


def by_call(draws: Sequence[Draw]) -> dict[int, list[Draw]]:
    """The draws of each call, in copy order."""
    out: dict[int, list[Draw]] = {}
    for d in draws:
        out.setdefault(d.call, []).append(d)
    return out
