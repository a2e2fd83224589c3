"""The one-pass sampler (`batched.vector.sampling_pass`), its logprobs and noise against the per-row
reference, bit for bit: random rows and parameters with penalties, banned ids, EOS holds, grammar
bitmasks, top-k/top-p, tiny temperatures, ties, NaN/+inf/all -inf rows and invalid parameters.

The same checks run on a CUDA device when one is visible (marked `gpu`): there they measure whether
the batched kernels give the per-row kernels' bits on that device."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from batched.vector.logprobs import logprob_pass, to_logprobs
from batched.vector.noise import gumbel_rows
from batched.vector.rows import RowProcessing, divide_rows
from batched.vector.sampling_pass import SampleRequest, host_error, read_together, sample_rows
from batched.vector.static_passes import PassCache
from properties.worlds.grammars import SPECS, random_walk
from reference.errors import ModelError
from reference.grammar import GrammarState, start_grammar
from reference.logprobs import extract_single_logprobs
from reference.penalties import PenaltyParams
from reference.sampling import gumbel_noise, sample_token_with_grammar
from reference.sampling_params import is_greedy
from reference.sched_ctx import SamplingConfig
from tests.row_models import ArgmaxModel

NEG_INF = float("-inf")
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
ROW_KINDS = ("plain",) * 6 + ("ties", "ties", "masked", "masked", "one_finite", "huge", "nan", "posinf", "all_neginf")


@dataclass(slots=True)
class RowCase:
    """One row's sampling inputs, as the per-row sampler takes them."""

    temperature: float
    top_k: int
    top_p: float
    pen: PenaltyParams
    history: list[int]
    eos_mask: tuple[int, ...]
    grammar: GrammarState | None
    seed: int
    position: int


def make_row(kind: str, vocab: int, gen: torch.Generator, scale: float) -> torch.Tensor:
    """A float64 logits row [V] of the given kind."""
    x = torch.randn(vocab, generator=gen, dtype=torch.float64) * scale
    if kind == "ties":
        x = torch.round(x / scale * 2)  # few distinct values: many ties
    elif kind == "masked":
        x[torch.rand(vocab, generator=gen) < 0.9] = NEG_INF
        x[int(torch.randint(vocab, (1,), generator=gen))] = 1.0
    elif kind == "one_finite":
        x.fill_(NEG_INF)
        x[int(torch.randint(vocab, (1,), generator=gen))] = -3.0
    elif kind == "nan":
        x[int(torch.randint(vocab, (1,), generator=gen))] = float("nan")
    elif kind == "posinf":
        x[int(torch.randint(vocab, (1,), generator=gen))] = float("inf")
    elif kind == "all_neginf":
        x.fill_(NEG_INF)
    elif kind == "huge":
        x = x * 1e300  # penalties can overflow these to -inf or +inf
    return x


INVALID = ("temperature", "top_k", "top_p", "repetition", "history", "banned", "eos")


@st.composite
def row_cases(draw: st.DrawFn, vocab: int, row: torch.Tensor) -> RowCase:
    """Parameters for one row: valid, or (one case in four) with one invalid parameter."""
    bad = draw(st.sampled_from((None,) * 21 + INVALID))
    top = torch.nan_to_num(row, nan=NEG_INF).topk(3).indices.tolist()  # the row's favourites
    n_hist = draw(st.integers(0, 12))
    history = [draw(st.one_of(st.integers(3, vocab - 1), st.sampled_from(top))) for _ in range(n_hist)]
    if bad == "history":
        history.append(vocab + 2)
    banned = tuple(sorted(set(draw(st.lists(st.sampled_from([*top, 0, 2, 7]), max_size=3)))))
    if bad == "banned":
        banned = (*banned, vocab)
    grammar = None
    kind = draw(st.sampled_from((None, None, None, None, "json", "regex", "ebnf")))
    if kind is not None:
        grammar = start_grammar(SPECS[kind], vocab)
        random_walk(grammar, draw(st.integers(0, 5)), torch.Generator().manual_seed(draw(st.integers(0, 99))))
    pick = draw  # one draw per parameter, the invalid one from its invalid values
    return RowCase(
        temperature=pick(
            st.sampled_from(
                (-1.0, math.nan, math.inf) if bad == "temperature" else (0.0, 0.0, 1.0, 0.3, 5.0, 1e-3, 1e-300)
            )
        ),
        top_k=-1 if bad == "top_k" else pick(st.sampled_from((0, 0, 1, 2, 5, 40, vocab + 3))),
        top_p=pick(st.sampled_from((0.0, 1.5, math.nan) if bad == "top_p" else (1.0, 1.0, 0.9, 0.5, 0.999, 1e-9))),
        pen=PenaltyParams(
            repetition=pick(st.sampled_from((0.0, math.inf, -1.0) if bad == "repetition" else (1.0, 1.0, 1.3, 0.8))),
            frequency=pick(st.sampled_from((0.0, 0.0, 0.5, -0.5, -0.0))),
            presence=pick(st.sampled_from((0.0, 0.0, 0.7, -0.3))),
            banned_ids=banned,
        ),
        history=history,
        eos_mask=(vocab + 4,) if bad == "eos" else pick(st.sampled_from(((), (), (0,), (0, 2)))),
        grammar=grammar,
        seed=pick(st.sampled_from((0, 1, 2**64 + 5, -7, 2**40 + 3))),
        position=pick(st.integers(0, 60)),
    )


@st.composite
def batches(draw: st.DrawFn) -> tuple[torch.Tensor, list[RowCase], SamplingConfig]:
    """Logits [m, V] (float64 or float32), one case per row, and the sampling config."""
    vocab = draw(st.sampled_from((512, 600, 509, 1021)))  # odd widths: rows off 16-byte boundaries
    m = draw(st.integers(1, 6))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    rows = [
        make_row(draw(st.sampled_from(ROW_KINDS)), vocab, gen, draw(st.sampled_from((1.0, 8.0, 30.0))))
        for _ in range(m)
    ]
    logits = torch.stack(rows).to(draw(st.sampled_from((torch.float64, torch.float32))))
    cases = [draw(row_cases(vocab, logits[j].double())) for j in range(m)]
    return logits, cases, SamplingConfig(draw(st.booleans()), draw(st.sampled_from((False, False, True))))


def request(j: int, c: RowCase, sampling: SamplingConfig, vocab: int) -> SampleRequest:
    return SampleRequest(
        row=j,
        temperature=c.temperature,
        top_k=c.top_k,
        top_p=c.top_p,
        greedy=is_greedy(c.temperature, sampling.force_temp_zero),
        processing=RowProcessing(c.pen, c.history, c.eos_mask, c.grammar),
        seed=c.seed,
        position=c.position,
        host_error=host_error(vocab, c.temperature, c.top_k, c.top_p, c.pen, c.history, c.eos_mask, c.grammar),
    )


def per_row(model: ArgmaxModel, row: torch.Tensor, c: RowCase, sampling: SamplingConfig, j: int) -> int | str:
    try:
        return sample_token_with_grammar(
            model,
            row,
            c.temperature,
            c.top_k,
            c.top_p,
            c.eos_mask,
            c.grammar,
            c.pen,
            c.history,
            sampling,
            seq_id=j,
            seed=c.seed,
            position=c.position,
        )
    except ModelError as e:
        return str(e)


def check_batch(
    logits: torch.Tensor, cases: list[RowCase], sampling: SamplingConfig, device: str, graphs: bool = False
) -> None:
    """The one-pass sampler's result for every row equals the per-row sampler's; with `graphs`, the
    pass is run eagerly once, then captured as a CUDA graph and replayed twice, with the same results."""
    logits = logits.to(device)
    vocab = logits.shape[1]
    model = ArgmaxModel(vocab)
    before = logits.clone()
    accepted = [list(c.grammar.accepted) if c.grammar else None for c in cases]
    requests = [request(j, c, sampling, vocab) for j, c in enumerate(cases)]
    cache = PassCache(torch.device(device), 1) if graphs else None
    got = sample_rows(logits, requests, vocab, cache)
    if cache is not None:  # the first call ran eagerly: the next captures and replays, the last replays
        again = [sample_rows(logits, requests, vocab, cache) for _ in range(2)]
        assert cache.captures == 1 and cache.replays == 2
        for replayed in again:
            assert [str(t) for t in replayed] == [str(t) for t in got], "a replay gave other tokens"
    assert torch.equal(logits.isnan(), before.isnan()) and torch.equal(logits.nan_to_num(), before.nan_to_num())
    assert [list(c.grammar.accepted) if c.grammar else None for c in cases] == accepted
    for j, c in enumerate(cases):
        want = per_row(model, logits[j].clone(), c, sampling, j)  # the row alone, as in the per-sequence path
        mine = got[j] if isinstance(got[j], int) else str(got[j])
        assert mine == want, f"row {j}: one pass {mine!r}, per row {want!r} ({c})"


@given(batches())
def test_one_pass_sampler_equals_per_row_sampler(batch) -> None:
    check_batch(*batch, "cpu")


@pytest.mark.gpu
@settings(max_examples=200)
@given(batches())
def test_one_pass_sampler_equals_per_row_sampler_on_cuda(batch) -> None:
    check_batch(*batch, "cuda")


@pytest.mark.gpu
@settings(max_examples=100)
@given(batches())
def test_one_pass_sampler_replayed_as_a_graph_equals_per_row_sampler(batch) -> None:
    check_batch(*batch, "cuda", graphs=True)


def test_sampled_rows_of_one_batch_differ_only_by_their_own_parameters() -> None:
    """Two identical sampled rows with the same seed and position draw the same token, a third with
    another seed may not, and a row's token does not depend on its neighbours."""
    gen = torch.Generator().manual_seed(3)
    row = torch.randn(600, generator=gen, dtype=torch.float64)
    logits = torch.stack([row, row, row, torch.randn(600, generator=gen, dtype=torch.float64)])
    case = RowCase(1.0, 0, 1.0, PenaltyParams(), [], (), None, 11, 4)
    cases = [case, case, RowCase(1.0, 0, 1.0, PenaltyParams(), [], (), None, 12, 4), case]
    sampling = SamplingConfig()
    toks = sample_rows(logits, [request(j, c, sampling, 600) for j, c in enumerate(cases)], 600)
    alone = sample_rows(logits[1:2], [request(0, case, sampling, 600)], 600)
    assert toks[0] == toks[1] == alone[0]


@st.composite
def logprob_batches(draw: st.DrawFn) -> tuple[torch.Tensor, list[int], list[int]]:
    vocab = draw(st.sampled_from((512, 600, 509, 1021)))  # odd widths: rows off 16-byte boundaries
    m = draw(st.integers(1, 5))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    rows = [make_row(draw(st.sampled_from(ROW_KINDS)), vocab, gen, 4.0) for _ in range(m)]
    logits = torch.stack(rows).to(draw(st.sampled_from((torch.float64, torch.float32))))
    tokens = [draw(st.integers(0, vocab - 1)) for _ in range(m)]
    ks = [draw(st.sampled_from((0, 1, 3, 5, vocab + 2))) for _ in range(m)]
    return logits, tokens, ks


def check_logprobs(logits: torch.Tensor, tokens: list[int], ks: list[int], device: str) -> None:
    logits = logits.to(device)
    rows = list(range(logits.shape[0]))
    lr = logprob_pass(logits, rows, torch.tensor(tokens, device=device), ks)
    chosen, ids, lps, undefined = read_together([lr.chosen, lr.top_ids, lr.top_lp, lr.undefined])
    model = ArgmaxModel(logits.shape[1])
    for i in rows:
        # The row alone, in memory of its own, as the per-sequence path decodes it: a row's place in
        # the batch (its address) must not change its bits.
        want = extract_single_logprobs(model, logits[i].clone(), tokens[i], ks[i])
        got = to_logprobs(lr, i, tokens[i], chosen, ids, lps, undefined)
        assert got == want, f"row {i}: {got} != {want}"


@given(logprob_batches())
def test_batch_logprobs_equal_per_row_logprobs(batch) -> None:
    check_logprobs(*batch, "cpu")


@pytest.mark.gpu
@given(logprob_batches())
def test_batch_logprobs_equal_per_row_logprobs_on_cuda(batch) -> None:
    check_logprobs(*batch, "cuda")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("vocab", [512, 600, 1000, 32768])
def test_noise_rows_equal_the_per_row_noise_bit_for_bit(device: str, vocab: int) -> None:
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    seeds, positions = [0, 1, -5, 2**64 + 9, 123456789], [0, 7, 1, 300, 2]
    rows = gumbel_rows(seeds, positions, vocab, torch.device(device))
    for i, (s, p) in enumerate(zip(seeds, positions, strict=True)):
        want = gumbel_noise(s, p, vocab, device)
        assert torch.equal(rows[i].view(torch.int64), want.view(torch.int64)), f"row {i} (seed {s}, position {p})"


@pytest.mark.parametrize("device", DEVICES)
def test_divide_rows_rounds_as_division_by_a_python_float(device: str) -> None:
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    gen = torch.Generator().manual_seed(5)
    x = (torch.randn(6, 4096, generator=gen, dtype=torch.float64) * 10).to(device)
    divisors = [0.3, 1.1, 7.0, 1e-3, 0.7, 3.0]
    got = divide_rows(x, divisors)
    for i, d in enumerate(divisors):
        assert torch.equal((x[i] / d).view(torch.int64), got[i].view(torch.int64)), f"divisor {d}"
