"""The distribution oracle's statistic (`properties.sampling.statistics`) on known counts and textbook
chi-square values, and its draws (`properties.sampling.draws`): the reference's row sampler gives the
reference's tokens, `draw` makes one call, and a sampler off by one top-p token is caught."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import pytest
import torch

from properties.sampling.draws import check_row, draw, inverse_cdf_sampler, reference_row_sampler
from properties.sampling.statistics import (
    bins_for,
    chi2_sf,
    goodness_of_fit,
    merge_bins,
    poisson_sf,
    row_alpha,
    token_counts,
)
from reference.penalties import PenaltyParams
from reference.row_request import RowRequest, distribution
from reference.sampling import SamplingError, processed_row, sample_token_with_grammar
from reference.sampling_params import SamplingParams
from reference.sched_ctx import SamplingConfig
from tests.row_models import ArgmaxModel

# (x, dof, P(chi2_dof >= x)) from the standard tables of critical values.
TEXTBOOK = [
    (3.841459, 1, 0.05),
    (6.634897, 1, 0.01),
    (10.827566, 1, 0.001),
    (5.991465, 2, 0.05),
    (18.307038, 10, 0.05),
    (23.209251, 10, 0.01),
    (124.342113, 100, 0.05),
    (135.806723, 100, 0.01),
]


def request(**kw: object) -> RowRequest:
    params = SamplingParams(
        temperature=float(kw.pop("temperature", 1.0)),  # type: ignore[arg-type]
        top_k=int(kw.pop("top_k", 0)),  # type: ignore[call-overload]
        top_p=float(kw.pop("top_p", 1.0)),  # type: ignore[arg-type]
    )
    base = dict(
        params=params,
        greedy=False,
        pen=PenaltyParams(),
        history=(),
        eos_mask=(),
        grammar=None,
        seed=0,
        position=0,
    )
    return RowRequest(**(base | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(("x", "dof", "p"), TEXTBOOK)
def test_chi2_survival_matches_the_tables(x: float, dof: int, p: float) -> None:
    assert chi2_sf(x, dof) == pytest.approx(p, rel=1e-5)


def test_chi2_survival_closed_forms() -> None:
    for x in (0.5, 2.0, 30.0, 80.0):
        assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12)  # 2 dof: an exponential
        assert chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-10)
    assert chi2_sf(0.0, 5) == 1.0
    assert chi2_sf(3.0, 0) == 1.0


def test_row_alpha_is_the_bonferroni_share() -> None:
    assert row_alpha(100) == pytest.approx(1e-8)
    assert row_alpha(1) == pytest.approx(1e-6)
    with pytest.raises(ValueError):
        row_alpha(0)


def test_g_statistic_on_known_counts() -> None:
    counts = torch.tensor([30.0, 20.0, 50.0])
    probs = torch.tensor([0.25, 0.25, 0.5], dtype=torch.float64)
    g = 2 * (30 * math.log(30 / 25) + 20 * math.log(20 / 25))
    q = 1 + 4 / 600  # Williams: 1 + (k + 1) / (6 N)
    r = goodness_of_fit(counts, probs)
    assert (r.dof, r.bins, r.draws, r.outside) == (2, 3, 100, ())
    assert r.statistic == pytest.approx(g / q, rel=1e-12)
    assert r.p_value == pytest.approx(math.exp(-g / q / 2), rel=1e-10)
    assert (r.worst.token, r.worst.observed, r.worst.expected) == (0, 30, 25.0)
    assert r.worst.residual == pytest.approx(1.0)
    assert r.passed(0.05)


def test_counts_at_expectation_give_p_one() -> None:
    probs = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    r = goodness_of_fit(probs * 1000, probs)
    assert r.statistic == 0.0
    assert r.p_value == 1.0


def test_bins_merge_small_expected_counts_in_probability_order() -> None:
    expected = torch.tensor([3.0, 50.0, 8.0, 0.0, 7.0, 2.0], dtype=torch.float64)
    # 50 alone; 8 + 7 reach 10; 3 + 2 fall short: the rare tokens
    assert merge_bins(expected) == ([[1], [2, 4]], [0, 5])
    assert merge_bins(torch.tensor([4.0, 3.0], dtype=torch.float64)) == ([], [0, 1])
    assert merge_bins(torch.tensor([12.0, 11.0], dtype=torch.float64)) == ([[0], [1]], [])


def test_rare_tokens_join_the_last_bin_for_g() -> None:
    probs = torch.tensor([0.9, 0.06, 0.03, 0.01], dtype=torch.float64)
    counts = torch.tensor([180.0, 10.0, 6.0, 4.0])  # N = 200: expected 180, 12, 6, 2
    r = goodness_of_fit(counts, probs)
    assert r.bins == 2  # [0] and [1, 2, 3]: 20 observed where 20 are expected
    assert r.statistic == 0.0
    assert r.rare is not None and (r.rare.tokens, r.rare.observed, r.rare.expected) == (2, 10, 8.0)
    assert r.rare.p_value == pytest.approx(poisson_sf(10, 8.0))


def test_poisson_survival() -> None:
    assert poisson_sf(0, 3.0) == 1.0
    assert poisson_sf(1, 3.0) == pytest.approx(1 - math.exp(-3.0), rel=1e-12)
    assert poisson_sf(3, 2.0) == pytest.approx(1 - math.exp(-2.0) * (1 + 2 + 2), rel=1e-12)
    assert poisson_sf(1, 0.0) == 0.0


def test_rare_tokens_drawn_too_often_fail_even_in_one_bin() -> None:
    # the best token holds all but 1e-9: one bin for G, and the rest drawn 400 times in 2000
    probs = torch.tensor([1 - 1e-9, 5e-10, 5e-10], dtype=torch.float64)
    r = goodness_of_fit(torch.tensor([1600.0, 300.0, 100.0]), probs)
    assert r.bins == 1 and r.p_g == 1.0
    assert r.rare is not None and (r.rare.tokens, r.rare.observed) == (2, 400)
    assert r.p_value == 0.0 or r.p_value < 1e-100
    # drawn as expected (never), nothing to see
    r = goodness_of_fit(torch.tensor([2000.0, 0.0, 0.0]), probs)
    assert r.p_value == 1.0


def test_the_rare_share_of_alpha() -> None:
    probs = torch.tensor([0.5, 0.497, 0.002, 0.001], dtype=torch.float64)  # N = 1000: rare expect 3
    r = goodness_of_fit(torch.tensor([500.0, 490.0, 7.0, 3.0]), probs)
    assert r.rare is not None and r.rare.observed == 10
    assert r.rare.p_value == pytest.approx(poisson_sf(10, 3.0))
    assert r.p_value == pytest.approx(min(1.0, r.p_g / 0.9, r.rare.p_value / 0.1))


def test_a_token_outside_the_support_fails_at_once() -> None:
    probs = torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64)
    r = goodness_of_fit(torch.tensor([1000.0, 999.0, 1.0]), probs)
    assert r.p_value == 0.0
    assert r.outside == (2,)
    assert (r.worst.token, r.worst.observed, r.worst.residual) == (2, 1, math.inf)
    assert "outside the support" in r.describe()


def test_one_bin_has_nothing_to_test() -> None:
    r = goodness_of_fit(torch.tensor([0.0, 40.0]), torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert (r.p_value, r.dof, r.bins) == (1.0, 0, 1)
    assert r.worst.token == 1


def test_a_clear_misfit_has_a_tiny_p_value() -> None:
    probs = torch.tensor([0.5, 0.5], dtype=torch.float64)
    r = goodness_of_fit(torch.tensor([1200.0, 800.0]), probs)
    assert r.p_value < 1e-15
    assert r.worst.token == 0


def test_precomputed_bins_give_the_same_result() -> None:
    probs = torch.softmax(torch.linspace(0, 6, 50, dtype=torch.float64), 0)
    counts = token_counts(
        torch.multinomial(probs, 1000, replacement=True, generator=torch.Generator().manual_seed(0)), 50
    )
    assert goodness_of_fit(counts, probs, bins_for(probs, 1000)) == goodness_of_fit(counts, probs)
    with pytest.raises(ValueError):
        goodness_of_fit(counts, probs, bins_for(probs, 999))


def test_token_counts_refuse_ids_outside_the_vocabulary() -> None:
    assert token_counts(torch.tensor([0, 2, 2]), 3).tolist() == [1.0, 0.0, 2.0]
    with pytest.raises(ValueError):
        token_counts(torch.tensor([0, 3]), 3)


# -- draws ------------------------------------------------------------------------------------
def random_requests(vocab: int, gen: torch.Generator) -> list[tuple[torch.Tensor, RowRequest]]:
    """Rows and requests with penalties, EOS masks, cuts and tiny temperatures."""
    out = []
    for i in range(24):
        row = torch.randn(vocab, generator=gen, dtype=torch.float64) * (1 + i % 4)
        if i % 5 == 0:
            row = torch.round(row)  # ties
        history = tuple(torch.randint(0, vocab, (i % 7,), generator=gen).tolist())
        pen = PenaltyParams(1.3, 0.2, 0.1, (5,)) if i % 3 == 0 else PenaltyParams()
        req = request(
            temperature=(0.01, 0.7, 1.0, 3.0)[i % 4],
            top_k=(0, 1, 5, 40)[i % 4 if i % 2 else 0],
            top_p=(1.0, 0.9, 0.5, 0.999)[(i // 2) % 4],
            pen=pen,
            history=history,
            eos_mask=(0,) if i % 4 == 1 else (),
            seed=int(torch.randint(0, 2**31, (1,), generator=gen)),
            position=i,
        )
        out.append((row, req))
    return out


def test_the_reference_row_sampler_gives_the_reference_tokens() -> None:
    vocab = 96
    model = ArgmaxModel(vocab)
    for row, req in random_requests(vocab, torch.Generator().manual_seed(1)):
        seeds = [replace(req, seed=req.seed + j) for j in range(6)]
        got = reference_row_sampler(row.expand(6, -1), seeds)
        want = [
            sample_token_with_grammar(
                model, row, r.temperature, r.top_k, r.top_p, r.eos_mask, r.grammar, r.pen, r.history,
                SamplingConfig(), seq_id=0, seed=r.seed, position=r.position,
            )
            for r in seeds
        ]  # fmt: skip
        assert got == want


def test_the_reference_row_sampler_returns_refusals() -> None:
    row = torch.zeros(8, dtype=torch.float64)
    row[3] = math.nan
    out = reference_row_sampler(row.expand(2, -1), [request(), request(seed=1)])
    assert all(isinstance(e, SamplingError) for e in out)


def test_draw_makes_one_call_with_consecutive_seeds() -> None:
    calls: list[tuple[int, list[int]]] = []

    def sampler(logits: torch.Tensor, reqs: Sequence[RowRequest]) -> list[int | SamplingError]:
        calls.append((logits.shape[0], [r.seed for r in reqs]))
        assert all(r.position == 7 for r in reqs)
        return [r.seed % 3 for r in reqs]

    tokens = draw(sampler, torch.zeros(3), request(position=7, seed=99), 5, 10)
    assert calls == [(5, [10, 11, 12, 13, 14])]
    assert tokens.tolist() == [1, 2, 0, 1, 2]


def test_draw_raises_a_refusal() -> None:
    def refuses(logits: torch.Tensor, reqs: Sequence[RowRequest]) -> list[int | SamplingError]:
        return [0] * (len(reqs) - 1) + [SamplingError("no token is allowed")]

    with pytest.raises(SamplingError, match="copy 3"):
        draw(refuses, torch.zeros(3), request(), 4, 0)


def test_a_correct_sampler_passes_and_keeps_to_the_support() -> None:
    row = torch.linspace(-3, 3, 64, dtype=torch.float64)
    req = request(temperature=0.8, top_p=0.9, top_k=30)
    for sampler in (reference_row_sampler, inverse_cdf_sampler()):
        r = check_row(sampler, row, req, 4000, 123)
        assert r.p_value > 1e-4, r.describe()
        assert not r.outside


def keep_one_more(row: torch.Tensor, req: RowRequest) -> torch.Tensor:
    """The distribution of a top-p that keeps one token more than the reference (no top-k here)."""
    p = distribution(row, req)
    proc = processed_row(row, req.eos_mask, req.grammar, req.pen, req.history)
    order = torch.sort(proc, descending=True, stable=True).indices[: int((p > 0).sum()) + 1]
    scores = torch.full_like(proc, -math.inf)
    scores[order] = (proc[order] - proc.max()) / req.temperature
    return torch.softmax(scores, 0)


def test_the_oracle_catches_a_top_p_off_by_one() -> None:
    row = torch.linspace(0, 2, 16, dtype=torch.float64)
    req = request(top_p=0.5)
    broken = inverse_cdf_sampler(keep_one_more)
    r = check_row(broken, row, req, 2000, 0)
    assert r.p_value == 0.0 and r.outside, r.describe()
