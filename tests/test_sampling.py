"""sample_token_with_grammar: greedy, temperature, top-k, top-p, the fast-greedy branch and the
decisions it records, each against a plain-Python oracle of docs/semantics.md."""

from __future__ import annotations

import math
from collections import Counter

import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from reference.decisions import DecisionKey, DecisionLog, argmax_lowest
from reference.penalties import PenaltyParams, apply_penalties
from reference.sampling import processed_row, sample_token_with_grammar
from reference.sched_ctx import SamplingConfig
from tests.row_models import py_penalize

NEG_INF = float("-inf")


class CountingModel:
    """The model calls sampling makes: its vocabulary size and the per-row argmax, counted."""

    def __init__(self, vocab: int) -> None:
        self.vocab = vocab
        self.argmax_calls = 0

    def vocab_size(self) -> int:
        return self.vocab

    def argmax_on_device(self, row: torch.Tensor) -> int:
        self.argmax_calls += 1
        return argmax_lowest(row)


def logit_rows(min_vocab: int = 2, max_vocab: int = 24) -> st.SearchStrategy[list[float]]:
    value = st.one_of(st.floats(-30, 30, allow_nan=False), st.sampled_from([0.0, 1.0, -2.0]))
    return st.integers(min_vocab, max_vocab).flatmap(lambda v: st.lists(value, min_size=v, max_size=v))


penalties = st.builds(
    PenaltyParams,
    repetition=st.one_of(st.just(1.0), st.floats(0.5, 2.0)),
    frequency=st.one_of(st.just(0.0), st.floats(-1.0, 1.0)),
    presence=st.one_of(st.just(0.0), st.floats(-1.0, 1.0)),
)


def best_first(row: list[float]) -> list[int]:
    """Finite-or-not candidate ids, best first, ties to the lowest id, -inf dropped."""
    return sorted((i for i, x in enumerate(row) if x != NEG_INF), key=lambda i: (-row[i], i))


def sample(
    row: list[float] | torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    pen: PenaltyParams | None = None,
    history: tuple[int, ...] = (),
    seed: int = 0,
    position: int = 0,
    sampling: SamplingConfig | None = None,
    model: CountingModel | None = None,
) -> int:
    t = row if isinstance(row, torch.Tensor) else torch.tensor(row, dtype=torch.float64)
    return sample_token_with_grammar(
        model or CountingModel(t.shape[0]),
        t,
        temperature,
        top_k,
        top_p,
        (),
        None,
        pen or PenaltyParams(),
        history,
        sampling or SamplingConfig(),
        seq_id=7,
        seed=seed,
        position=position,
    )


@given(row=logit_rows(), pen=penalties, data=st.data(), fast=st.booleans())
def test_greedy_is_argmax_of_processed_row(
    row: list[float], pen: PenaltyParams, data: st.DataObject, fast: bool
) -> None:
    history = data.draw(st.lists(st.integers(0, len(row) - 1), max_size=10))
    banned = tuple(data.draw(st.sets(st.integers(0, len(row) - 1), max_size=len(row) - 1)))
    pen = PenaltyParams(pen.repetition, pen.frequency, pen.presence, banned)
    processed = py_penalize(row, pen, history)
    tok = sample(
        row,
        temperature=0.0,
        pen=pen,
        history=tuple(history),
        sampling=SamplingConfig(fast_greedy_grammar=fast),
    )
    assert tok == best_first(processed)[0]


@given(row=logit_rows(), temperature=st.floats(0.05, 5.0), seed=st.integers(0, 2**64 - 1))
def test_force_temp_zero_is_greedy(row: list[float], temperature: float, seed: int) -> None:
    tok = sample(row, temperature=temperature, seed=seed, sampling=SamplingConfig(force_temp_zero=True))
    assert tok == best_first(row)[0]


@given(
    row=logit_rows(),
    data=st.data(),
    temperature=st.floats(0.05, 5.0),
    seed=st.integers(0, 2**64 - 1),
    position=st.integers(0, 5000),
)
def test_top_k_never_picks_outside_the_k_best(
    row: list[float], data: st.DataObject, temperature: float, seed: int, position: int
) -> None:
    k = data.draw(st.integers(1, len(row)))
    tok = sample(row, temperature=temperature, top_k=k, seed=seed, position=position)
    assert tok in best_first(row)[:k]


def py_top_p_prefix(row: list[float], temperature: float, p: float) -> tuple[list[int], float]:
    """The kept prefix and how far the cut is from flipping (in probability mass)."""
    order = best_first(row)
    top = row[order[0]]
    weights = [math.exp((row[i] - top) / temperature) for i in order]
    total = sum(weights)
    mass, kept = 0.0, []
    for i, w in zip(order, weights, strict=True):
        kept.append(i)
        before, mass = mass, mass + w / total
        if mass >= p:
            return kept, min(mass - p, p - before)
    return kept, 1.0


@given(row=logit_rows(), temperature=st.floats(0.2, 5.0), p=st.floats(0.05, 0.99), seed=st.integers(0, 2**64 - 1))
def test_top_p_keeps_the_smallest_prefix_with_mass_p(row: list[float], temperature: float, p: float, seed: int) -> None:
    kept, margin = py_top_p_prefix(row, temperature, p)
    assume(margin > 1e-9)  # the oracle sums in another order: stay away from the cut
    assert sample(row, temperature=temperature, top_p=p, seed=seed) in kept


def frequencies(row: list[float], n: int, **kwargs: float) -> list[float]:
    counts = Counter(sample(row, seed=99, position=pos, **kwargs) for pos in range(n))
    return [counts.get(i, 0) / n for i in range(len(row))]


def softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    return [v / sum(e) for v in e]


def test_temperature_samples_the_softmax() -> None:
    row, n = [0.0, 0.5, 1.0, 2.0], 3000
    for temperature in (0.7, 2.0):
        expected = softmax([x / temperature for x in row])
        for f, q in zip(frequencies(row, n, temperature=temperature), expected, strict=True):
            assert abs(f - q) < 4 * math.sqrt(q * (1 - q) / n) + 1e-3


def test_top_k_and_top_p_renormalize() -> None:
    row, n = [0.0, 0.5, 1.0, 2.0], 3000
    # top-k 2 keeps ids 3 and 2; top-p 0.8 then keeps both (3 alone has 0.73 of their mass).
    expected = softmax([1.0, 2.0])
    got = frequencies(row, n, temperature=1.0, top_k=2, top_p=0.8)
    assert got[0] == got[1] == 0.0
    for f, q in zip(got[2:], expected, strict=True):
        assert abs(f - q) < 4 * math.sqrt(q * (1 - q) / n)
    # Alone, id 3 has 0.58 of the mass: top-p 0.55 keeps only it, 0.6 keeps ids 3 and 2.
    assert frequencies(row, 200, temperature=1.0, top_p=0.55) == [0.0, 0.0, 0.0, 1.0]
    assert set(sample(row, top_p=0.6, seed=99, position=pos) for pos in range(200)) == {2, 3}


def test_top_p_cut_includes_the_token_that_reaches_p() -> None:
    # Two equal tokens: the first alone has mass exactly 0.5, which is >= 0.5.
    assert {sample([0.0, 0.0], top_p=0.5, seed=s) for s in range(100)} == {0}
    assert {sample([0.0, 0.0], top_p=0.51, seed=s) for s in range(100)} == {0, 1}


def test_processing_is_in_float64() -> None:
    row = torch.tensor([1.1, -0.3, 2.7, 0.0], dtype=torch.float32)
    pen = PenaltyParams(repetition=3.0, frequency=0.1)
    out = processed_row(row, (3,), None, pen, [0, 1, 1])
    expected = apply_penalties(row.double(), pen, [0, 1, 1])
    expected[3] = NEG_INF
    assert out.dtype == torch.float64 and torch.equal(out, expected)


def test_ties_go_to_the_lowest_id() -> None:
    row = [1.0, 3.0, 3.0, 3.0, 0.0]
    assert sample(row, temperature=0.0) == 1
    assert sample(row, temperature=0.0, sampling=SamplingConfig(fast_greedy_grammar=False)) == 1
    # top-k 2 over a three-way tie keeps ids 1 and 2, never 3.
    assert {sample(row, top_k=2, seed=s) for s in range(300)} == {1, 2}


@given(row=logit_rows(), pen=penalties, greedy=st.booleans(), fast=st.booleans(), force=st.booleans())
def test_fast_greedy_branch_only_when_eligible(
    row: list[float], pen: PenaltyParams, greedy: bool, fast: bool, force: bool
) -> None:
    model = CountingModel(len(row))
    sample(
        row,
        temperature=0.0 if greedy else 1.0,
        pen=pen,
        history=(0,),
        model=model,
        sampling=SamplingConfig(fast_greedy_grammar=fast, force_temp_zero=force),
    )
    neutral = pen == PenaltyParams()
    assert model.argmax_calls == int((greedy or force) and fast and neutral)


def test_fast_greedy_skipped_while_eos_masked() -> None:
    model = CountingModel(4)
    t = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
    tok = sample_token_with_grammar(
        model, t, 0.0, 0, 1.0, (3,), None, PenaltyParams(), [], SamplingConfig(), seq_id=0, seed=0, position=0
    )
    assert (tok, model.argmax_calls) == (2, 0)


def test_decisions_record_token_and_cuts() -> None:
    row = [0.0, 1.0, 2.0, 3.5]
    with DecisionLog() as log:
        sample(row, temperature=0.0, position=4)
    [d] = log.records
    assert (d.key, d.chosen, d.runner_up, d.margin) == (DecisionKey(7, 4, "token"), 3, 2, 1.5)
    with DecisionLog() as log:
        sample(row, temperature=1.0, top_k=2, top_p=0.5, position=5)
    kinds = [d.key.kind for d in log.records]
    assert kinds == ["topk", "topp", "token"]
    topk = log.records[0]
    assert topk.margin == 1.0 and topk.chosen == 2  # last kept (2.0) minus first dropped (1.0), on T = 1
    assert 0.0 <= log.records[1].margin <= 0.5


def test_no_cut_no_record() -> None:
    with DecisionLog() as log:
        sample([0.0, 1.0, 2.0], temperature=1.0, top_k=3, top_p=1.0)
    assert [d.key.kind for d in log.records] == ["token"]


@given(row=logit_rows(min_vocab=3), data=st.data(), greedy=st.booleans(), fast=st.booleans())
def test_forced_choice_wins(row: list[float], data: st.DataObject, greedy: bool, fast: bool) -> None:
    forced = data.draw(st.integers(0, len(row) - 1))
    key = DecisionKey(7, 0, "token")
    with DecisionLog(forced={key: forced}) as log:
        tok = sample(row, temperature=0.0 if greedy else 1.0, sampling=SamplingConfig(fast_greedy_grammar=fast))
    assert tok == forced
    assert log.records[-1].forced and log.records[-1].chosen == forced
