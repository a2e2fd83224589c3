"""Random sampling rows and requests for the sampler tests: logits on a grid (exact ties within a
row are common), requests with cuts, penalties, banned ids and EOS masks, and the support check."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import torch

from reference.penalties import PenaltyParams
from reference.row_request import RowRequest, kept_scores
from reference.sampling import SamplingError
from reference.sampling_params import SamplingParams

V = 24
NEUTRAL = PenaltyParams()


def request(seed: int = 0, **kw: object) -> RowRequest:
    """A sampled request (temperature 1, no cut, no penalty) with `kw` in place."""
    params = {k: kw.pop(k) for k in ("temperature", "top_k", "top_p") if k in kw}
    base = RowRequest(SamplingParams(temperature=1.0), False, NEUTRAL, (), (), None, seed, 3)
    return replace(base, params=replace(base.params, **params), **kw)  # type: ignore[arg-type]


def grid_row(rng: random.Random, vocab: int = V) -> torch.Tensor:
    """[V] float32 logits on a grid of 1/4 (ties within the row)."""
    return torch.tensor([round(rng.gauss(0.0, 2.0) * 4) / 4 for _ in range(vocab)], dtype=torch.float32)


def random_request(rng: random.Random, row: torch.Tensor, seed: int) -> RowRequest:
    """A request with random cuts, penalties over a history of the row's best tokens, banned ids and
    an EOS mask on tokens lifted to the top of the row (so a mask that does not hold shows)."""
    best = torch.sort(row, descending=True, stable=True).indices.tolist()
    history = tuple(rng.choice(best[:4]) for _ in range(rng.randint(0, 5)))
    pen = PenaltyParams(
        repetition=rng.choice([1.0, 1.0, 1.6, 0.7]),
        frequency=rng.choice([0.0, 0.0, 0.9]),
        presence=rng.choice([0.0, 1.5]),
        banned_ids=tuple(rng.sample(range(V), rng.choice([0, 0, 1, 2]))),
    )
    eos = tuple(rng.sample(range(V), rng.choice([0, 1, 2])))
    for t in (*eos, *pen.banned_ids):
        row[t] = float(row.max()) + 2.0
    return RowRequest(
        params=SamplingParams(
            temperature=rng.choice([0.3, 0.6, 1.0, 1.7]),
            top_k=rng.choice([0, 0, 1, 3, 8, 40]),
            top_p=rng.choice([1.0, 0.9, 0.6, 0.3]),
        ),
        greedy=rng.random() < 0.15,
        pen=pen,
        history=history,
        eos_mask=eos,
        grammar=None,
        seed=seed,
        position=rng.randint(0, 50),
    )


def random_batch(rng: random.Random, rows: int, seeds: int) -> tuple[torch.Tensor, list[RowRequest]]:
    """`rows` random rows and requests, each repeated under `seeds` different seeds."""
    logits, reqs = [], []
    for _ in range(rows):
        row = grid_row(rng)
        req = random_request(rng, row, 0)
        for _ in range(seeds):
            logits.append(row)
            reqs.append(replace(req, seed=rng.getrandbits(64)))
    return torch.stack(logits), reqs


def assert_in_support(logits: torch.Tensor, reqs: Sequence[RowRequest], got: list[int | SamplingError]) -> None:
    """Every row sampled (no refusal), each token inside the reference's support for its row."""
    for i, (row, req, tok) in enumerate(zip(logits, reqs, got, strict=True)):
        assert isinstance(tok, int), f"row {i}: refused ({tok}) a row the reference samples"
        kept = torch.isfinite(kept_scores(row, req))
        assert bool(kept[tok]), f"row {i}: token {tok} outside the support {kept.nonzero().flatten().tolist()} of {req}"
