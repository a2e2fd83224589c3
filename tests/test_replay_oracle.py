"""The replay oracle of fast numerics: a decision the implementation took otherwise is forced onto
the reference only where rounding explains it (its rows within the tolerance, its decision the
reference semantics on its own rows, the reference's margin within what the row difference can
move it by), and every decision is replayed on its own rows whatever the margin: wrong noise, a
greedy token for a sampled row, logprobs read after an in-place edit or a cut off by one fail in
fast numerics as they do in exact numerics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import batched.step
from batched.batched_model import BatchedMtpModel
from properties import tolerance as numerics
from properties.checks.compare import check_equivalence
from properties.impl import load
from properties.sides import forcing
from properties.sides.harness import run_side_by_side
from properties.worlds.specs import ModelSpec, SeqSpec, StepSpec, WorldSpec
from reference import sampling
from reference.sample_step import sample_for_seq

DTYPES = ("float32", "bfloat16")


def spec_for(dtype: str, temperature: float = 1.0, **seq: Any) -> WorldSpec:
    seqs = tuple(
        SeqSpec(cache_len=4 + 3 * i, slot_idx=i, ssm_slot=i, token_seed=40 + i, temperature=temperature, **seq)
        for i in range(6)
    )
    return WorldSpec(
        model=ModelSpec(dtype=dtype, numerics="fast"),
        seqs=seqs,
        bootstrap=tuple(range(6)),
        step=StepSpec(ladder_nd=2),
        cache_seed=5,
    )


def swap_top_two(monkeypatch: pytest.MonkeyPatch, below: float, above: float = 0.0) -> None:
    """The model's `decode_batch` (the kernel, beneath the recording proxy) swaps the two best logits
    of every row whose margin is in (above, below]: the argmax flips there and nowhere else."""
    real = BatchedMtpModel.decode_batch

    def decode_batch(self, tokens: list[int], seqs: list[Any], rank: int = 0) -> torch.Tensor:
        logits = real(self, tokens, seqs, rank)
        top = logits.topk(2, dim=1)
        for j in range(logits.shape[0]):
            (v1, v2), (i1, i2) = top.values[j].tolist(), top.indices[j].tolist()
            if above < v1 - v2 <= below:
                logits[j, i1], logits[j, i2] = v2, v1
        return logits

    monkeypatch.setattr(BatchedMtpModel, "decode_batch", decode_batch)


@pytest.mark.forces_decisions
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_divergence_within_rounding_is_forced_and_reported(monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    # A rounding tolerance wide enough that swapping two logits 2 apart is "rounding": the replay
    # oracle then forces the reference onto the implementation's token and the comparison passes.
    monkeypatch.setitem(numerics.ROUNDING, dtype, 0.5)
    swap_top_two(monkeypatch, below=2.0)
    sbs = run_side_by_side(spec_for(dtype, temperature=0.0), load("literal"))
    assert sbs.forced_decisions, "the swapped rows should have been forced onto the reference"
    for f in sbs.forced_decisions:
        assert f.key.kind == "token" and f.ref_margin <= f.bound and f.row_difference > 0, f.text()
    assert not check_equivalence(sbs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_same_divergence_beyond_rounding_is_reported(monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    swap_top_two(monkeypatch, below=2.0, above=1.0)  # swaps far larger than a bf16 logit's rounding
    sbs = run_side_by_side(spec_for(dtype, temperature=0.0), load("literal"))
    assert not sbs.forced_decisions
    fields = {m.field for m in check_equivalence(sbs)}
    assert {"output_tokens", "last_token"} <= fields
    assert any("beyond rounding" in f for f in fields), fields


def with_sampler(monkeypatch: pytest.MonkeyPatch, sampler: Callable[..., int]) -> None:
    """The batched step samples its per-row tokens with `sampler` (the reference is untouched)."""
    monkeypatch.setattr(batched.step, "sample_for_seq", sampler)


def wrong_noise(model, a, row_logits, pen, verify_ctx) -> int:
    """Sampling with the noise of the next output position."""
    a.output_tokens.append(0)
    try:
        return sample_for_seq(model, a, row_logits, pen, verify_ctx)
    finally:
        a.output_tokens.pop()


def greedy_always(model, a, row_logits, pen, verify_ctx) -> int:
    """A greedy token for every row, sampled or not."""
    temperature, a.temperature = a.temperature, 0.0
    try:
        return sample_for_seq(model, a, row_logits, pen, verify_ctx)
    finally:
        a.temperature = temperature


def penalties_in_place(model, a, row_logits, pen, verify_ctx) -> int:
    """Sampling that applies the penalties to the logits row itself (logprobs then read it)."""
    row_logits.copy_(sampling.apply_penalties(row_logits.double(), pen, a.output_tokens).to(row_logits.dtype))
    return sample_for_seq(model, a, row_logits, pen, verify_ctx)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("sampler", "seq"),
    [
        (wrong_noise, {}),
        (greedy_always, {}),
        (penalties_in_place, {"repetition": 1.3, "n_out": 4, "echo": (0, 1, 2), "top_logprobs": 3}),
    ],
    ids=["wrong-noise", "greedy-for-sampled", "penalties-in-place"],
)
def test_a_wrong_decision_fails_whatever_the_tolerance(
    monkeypatch: pytest.MonkeyPatch, dtype: str, sampler: Callable[..., int], seq: dict
) -> None:
    monkeypatch.setitem(numerics.ROUNDING, dtype, 0.5)  # even a tolerance that forgives any rounding
    with_sampler(monkeypatch, sampler)
    sbs = run_side_by_side(spec_for(dtype, **seq), load("literal"))
    mismatches = check_equivalence(sbs)
    assert any("replayed" in m.field for m in mismatches), [m.field for m in mismatches]


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_top_p_cut_off_by_one_fails(monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    real = sampling.cut_scores

    def keeps_one_more(row, temperature, top_k, top_p, seq_id, position):
        out = real(row, temperature, top_k, top_p, seq_id, position)
        order = torch.sort(row, descending=True, stable=True).indices
        kept = int(torch.isfinite(out).sum())
        if kept < int(torch.isfinite(row).sum()):
            nxt = order[kept]
            out[nxt] = (row[nxt] - row.max()) / temperature
        return out

    def cut_wrong(model, a, row_logits, pen, verify_ctx) -> int:
        with monkeypatch.context() as m:
            m.setattr(sampling, "cut_scores", keeps_one_more)
            return sample_for_seq(model, a, row_logits, pen, verify_ctx)

    monkeypatch.setitem(numerics.ROUNDING, dtype, 0.5)
    with_sampler(monkeypatch, cut_wrong)
    # A cold row with a tight cut: keeping one token more changes the sampled token of two of its rows.
    sbs = run_side_by_side(spec_for(dtype, top_p=0.3, temperature=0.5), load("literal"))
    assert any("replayed" in m.field for m in check_equivalence(sbs))


def test_a_forced_decision_beyond_its_bound_is_not_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows within the (widened) rounding tolerance, but the bound a row difference can explain
    # shrunk to nothing: the divergence is reported instead of forced.
    monkeypatch.setitem(numerics.ROUNDING, "float32", 0.5)
    monkeypatch.setattr(forcing, "_bound", lambda sbs, d, slot, delta: (0.0, "logits"))
    swap_top_two(monkeypatch, below=2.0)
    sbs = run_side_by_side(spec_for("float32", temperature=0.0), load("literal"))
    assert not sbs.forced_decisions and sbs.unexplained
    assert any("cannot explain" in m.field for m in check_equivalence(sbs))
