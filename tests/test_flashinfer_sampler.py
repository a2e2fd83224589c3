"""The FlashInfer sampler (`batched.flashinfer_sampler`) against `reference.row_request`: it names
what it is missing (a CUDA device, FlashInfer itself); on a GPU, its draws outside the reference's
support are only tokens tied at a cut (docs/samplers.md), and its tokens do not depend on the batch."""

from __future__ import annotations

import random
import sys

import pytest
import torch

from reference.row_request import kept_scores
from reference.sampling import processed_row
from tests.sampler_rows import random_batch, request


def test_the_flashinfer_module_imports_without_flashinfer_and_says_what_is_missing() -> None:
    from batched import flashinfer_sampler

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the missing-device error cannot be shown")
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        flashinfer_sampler.sample_rows(torch.zeros(1, 4), [request()])


def test_the_flashinfer_sampler_names_flashinfer_when_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from batched import flashinfer_sampler

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setitem(sys.modules, "flashinfer", None)  # import flashinfer then raises ImportError
    monkeypatch.setitem(sys.modules, "flashinfer.sampling", None)
    with pytest.raises(RuntimeError, match=r"needs FlashInfer, which is not installed: flashinfer-python"):
        flashinfer_sampler.step_flashinfer(None, [], None, [], 0, None)  # type: ignore[arg-type]


def flashinfer_rows():  # type: ignore[no-untyped-def]
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    pytest.importorskip("flashinfer")
    from batched.flashinfer_sampler import sample_rows

    return sample_rows


@pytest.mark.gpu
def test_flashinfer_draws_outside_the_support_only_tokens_tied_at_a_cut() -> None:
    """FlashInfer keeps every token tied with the last one a cut keeps, where the reference keeps
    exactly k, or the smallest prefix, ties to the lowest id (docs/samplers.md). On these rows (a
    grid of 1/4: exact ties are common) some draws fall outside the reference's support, and each
    such token scores exactly what the least kept token scores: any other draw outside, or a
    FlashInfer that no longer does it, fails here."""
    sample_rows = flashinfer_rows()
    rng = random.Random(17)
    tied = 0
    for _ in range(4):
        logits, reqs = random_batch(rng, rows=12, seeds=8)
        got = sample_rows(logits.cuda(), reqs)
        for i, (row, req, tok) in enumerate(zip(logits, reqs, got, strict=True)):
            assert isinstance(tok, int), f"row {i}: refused ({tok}) a row the reference samples"
            kept = kept_scores(row, req)
            if bool(torch.isfinite(kept[tok])):
                continue
            proc = processed_row(row, req.eos_mask, req.grammar, req.pen, req.history)
            least = float(proc[torch.isfinite(kept)].min())
            assert float(proc[tok]) == least, f"row {i}: token {tok} ({float(proc[tok])}) outside the support, untied"
            tied += 1
    assert tied > 0, "FlashInfer drew no tied token outside the support: its cut semantics changed"


@pytest.mark.gpu
def test_flashinfer_tokens_do_not_depend_on_the_batch() -> None:
    sample_rows = flashinfer_rows()
    rng = random.Random(19)
    logits, reqs = random_batch(rng, rows=6, seeds=2)
    logits = logits.cuda()
    batch = sample_rows(logits, reqs)
    alone = [sample_rows(logits[i : i + 1], [r])[0] for i, r in enumerate(reqs)]
    assert batch == alone
