"""The own-noise samplers (`batched.vector.own_noise`) against `reference.row_request`: draws inside
the support, greedy argmax, the reference's refusals, near frequencies, per-request generators
batch-invariant (one generator not), the step's tokens its sampler's. FlashInfer's own:
`tests/test_flashinfer_sampler.py`."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import replace

import pytest
import torch

from batched.step import select_rows
from batched.vector.own_noise import (
    cut_rows,
    generator_seed,
    sample_rows_one_generator,
    sample_rows_torch_generators,
    step_one_generator,
    step_torch_generators,
)
from batched.vector.rows import column, divisors, int_column
from batched.vector.step import prepare_model
from properties.impl import load
from properties.worlds.world import build_world
from reference.penalties import PenaltyParams
from reference.row_request import RowRequest, RowSampler, distribution, distributions, request_for
from reference.sampling import SamplingError, cut_scores, processed_row
from tests.sampler_rows import assert_in_support, grid_row, random_batch, random_request, request
from tests.test_batched_step_mixes import mix, world

SAMPLERS = {"vector-torch": sample_rows_torch_generators, "vector-torch-batch": sample_rows_one_generator}


def test_the_registry_entries_are_these_samplers() -> None:
    for name, sampler in SAMPLERS.items():
        impl = load(name)
        assert impl.noise == "own" and impl.sampler is sampler
        assert impl.prepare is prepare_model and not impl.per_row_fast_greedy_calls
    assert load("vector-torch").step is step_torch_generators
    assert load("vector-torch-batch").step is step_one_generator


def test_the_generator_seed_is_a_63_bit_mix_of_seed_and_position() -> None:
    seeds = {generator_seed(s, p) for s in (0, 1, -1, 2**64 + 1) for p in (0, 1, 7)}
    assert len(seeds) == 9 and all(0 <= s < 2**63 for s in seeds)  # -1 and 2**64 + 1: modulo 2**64
    assert generator_seed(2**64 + 1, 7) == generator_seed(1, 7)


def test_the_cut_keeps_the_references_scores_bit_for_bit() -> None:
    rng = random.Random(5)
    procs, reqs = [], []
    for _ in range(60):
        row = grid_row(rng)
        req = replace(random_request(rng, row, 0), greedy=False)
        procs.append(processed_row(row, req.eos_mask, None, req.pen, req.history))
        reqs.append(req)
    proc = torch.stack(procs)  # [m, V] float64
    temps = column(divisors([r.temperature for r in reqs], proc.device), proc.device)
    got = cut_rows(
        proc, temps, int_column([r.top_k for r in reqs], proc.device), column([r.top_p for r in reqs], proc.device)
    )
    for i, (row, req) in enumerate(zip(procs, reqs, strict=True)):
        want = cut_scores(row, req.temperature, req.top_k, req.top_p, -1, req.position)
        assert torch.equal(got[i], want), f"row {i} ({req}): {got[i].tolist()} != {want.tolist()}"


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_every_draw_is_inside_the_references_support(name: str) -> None:
    rng = random.Random(11)
    for _ in range(6):
        logits, reqs = random_batch(rng, rows=12, seeds=8)
        assert_in_support(logits, reqs, SAMPLERS[name](logits, reqs))


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_a_greedy_row_is_the_argmax_of_its_processed_row(name: str) -> None:
    row = torch.tensor([1.0, 3.0, 3.0, 2.5, 0.0, 3.0])
    pen = PenaltyParams(frequency=1.0)
    reqs = [
        request(greedy=True, temperature=0.0),  # ties to the lowest id: 1
        request(greedy=True, pen=pen, history=(1, 2)),  # 1 and 2 penalised below 5
        request(greedy=True, eos_mask=(5,), pen=pen, history=(1, 2)),  # and 5 masked: 3
        request(),  # a sampled row beside them
    ]
    got = SAMPLERS[name](torch.stack([row] * 4), reqs)
    assert got[:3] == [1, 5, 3]


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_refusals_are_the_references(name: str) -> None:
    ok = torch.linspace(-1.0, 1.0, 8)
    nan, posinf = ok.clone(), ok.clone()
    nan[3], posinf[2] = float("nan"), float("inf")
    cases = [
        (ok, request()),
        (nan, request()),
        (posinf, request(greedy=True)),
        (ok, request(temperature=-1.0)),
        (ok, request(top_k=-2)),
        (ok, request(top_p=0.0)),
        (ok, request(top_p=1.5)),
        (ok, request(eos_mask=(9,))),
        (ok, request(pen=PenaltyParams(banned_ids=(8,)))),
        (ok, request(pen=PenaltyParams(repetition=0.0))),
        (ok, request(pen=PenaltyParams(presence=1.0), history=(8,))),
        (ok, request(eos_mask=tuple(range(8)))),
        (ok, request(greedy=True, temperature=0.0, pen=PenaltyParams(banned_ids=tuple(range(8))))),
        (ok, request(top_k=3, top_p=0.5)),
    ]
    logits = torch.stack([row for row, _ in cases])
    reqs = [r for _, r in cases]
    want = [str(d) if isinstance(d, SamplingError) else None for d in distributions(logits, reqs)]
    got = [str(t) if isinstance(t, SamplingError) else None for t in SAMPLERS[name](logits, reqs)]
    assert got == want
    assert want.count(None) == 2


def frequency_row() -> tuple[torch.Tensor, RowRequest]:
    """A row whose top-k keeps 4 tokens of mass about (0.4, 0.3, 0.2, 0.1) at temperature 0.8 and
    whose top-p (0.65) keeps the first two: the token that reaches p holds 43 % of the draws."""
    probs = torch.tensor([0.4, 0.3, 0.2, 0.1, 0.05, 0.05], dtype=torch.float64)
    row = (torch.log(probs) * 0.8).to(torch.float32)
    return row, request(temperature=0.8, top_k=4, top_p=0.65, eos_mask=(5,))


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_frequencies_follow_the_distribution(name: str) -> None:
    row, req = frequency_row()
    n = 4000
    reqs = [replace(req, seed=s, position=s % 7) for s in range(n)]
    got = SAMPLERS[name](row.expand(n, -1).contiguous(), reqs)
    counts = torch.bincount(torch.tensor(got), minlength=row.numel()).tolist()
    q = distribution(row, req).tolist()
    for t, (c, p) in enumerate(zip(counts, q, strict=True)):
        bound = 6.0 * math.sqrt(n * p * (1.0 - p)) + 3.0  # six standard deviations and a margin
        assert abs(c - n * p) <= bound, f"token {t}: {c} draws of {n}, expected {n * p:.1f} (q {p:.4f})"


def test_vector_torch_tokens_do_not_depend_on_the_batch() -> None:
    rng = random.Random(3)
    others, other_reqs = random_batch(rng, rows=10, seeds=4)  # 40 rows
    for trial in range(8):
        row = grid_row(rng)
        req = replace(random_request(rng, row, rng.getrandbits(64)), greedy=False)
        alone = sample_rows_torch_generators(row[None], [req])
        at_row_3 = sample_rows_torch_generators(
            torch.cat([others[:3], row[None], others[3:5]]), [*other_reqs[:3], req, *other_reqs[3:5]]
        )[3]
        in_40 = sample_rows_torch_generators(
            torch.cat([others[:17], row[None], others[17:]]), [*other_reqs[:17], req, *other_reqs[17:]]
        )[17]
        assert alone[0] == at_row_3 == in_40, f"trial {trial}: {alone[0]} alone, {at_row_3} at row 3, {in_40} in 41"


def test_vector_torch_batch_tokens_depend_on_the_batch_position() -> None:
    row = torch.zeros(16)  # uniform: two draws differ unless their noise agrees
    ahead = request(seed=10**6)
    moved = [
        s
        for s in range(20)
        if sample_rows_one_generator(row[None], [request(seed=s)])
        != sample_rows_one_generator(torch.stack([row, row]), [ahead, request(seed=s)])[1:]
    ]
    assert moved, "the one-generator sampler gave every request the same token at row 0 and at row 1"


@pytest.mark.parametrize(
    ("step", "sampler"),
    [(step_torch_generators, sample_rows_torch_generators), (step_one_generator, sample_rows_one_generator)],
)
def test_the_step_emits_its_row_samplers_tokens(step: Callable[..., None], sampler: RowSampler) -> None:
    seqs = mix(4, temperature=0.9, top_k=6, top_p=0.8, repetition=1.4, n_out=4, echo=(1,))
    spec = world(tuple(replace(s, min_tokens=5 if i == 1 else 0, eos_top=i == 1) for i, s in enumerate(seqs)))
    w = build_world(spec)
    before = w.clone()
    w.model = prepare_model(w.model)
    step(w.model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)

    refs = select_rows(before.active, before.idxs)
    floor, sampling = before.sched.watchdog.min_reasoning_floor, before.verify_ctx.sampling
    reqs = [request_for(a, floor, sampling) for a in refs]
    logits = before.model.decode_batch([a.last_token for a in refs], [a.seq for a in refs], 0)
    want = sampler(logits, reqs)
    after = {a.seq_id: a for a in w.active}
    got = [after[a.seq_id].output_tokens[len(a.output_tokens)] for a in refs]
    assert got == want
    assert_in_support(logits, reqs, got)  # type: ignore[arg-type]
