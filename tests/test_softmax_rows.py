"""A row's softmax over the vocabulary has the same bits alone and at every place of a batch: D4
compares a group propose's draft confidences with the per-sequence drafter's, and the top logprobs
of a batched pass with the per-row path's, bit for bit in exact numerics.

On the CPU the kernels load rows unaligned. On CUDA (marked `gpu`) the softmax reads a row in 16-byte
vectors and reduces the elements before the first aligned one apart, so with a width off that
boundary (509, 601, 1021, 4099, 151665) a row's bits can depend on where it starts. Measured on an
H100 with the plain softmax: a wide world's draft confidence (vocabulary 151665) was one float32 ulp
apart alone and at the odd places of a tile, and the confidence and log-softmax checks below (both
dtypes) fail at 151665 (the widths up to 4099 kept their bits on these rows). One random row per
width had not shown it: the reduction order changes the sum's rounding only for some rows, so each
width here checks many."""

from __future__ import annotations

import pytest
import torch

from reference.model.kernels import ALIGN_BYTES, Numerics, row_softmax, softmax_confidence

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# Widths off and on the 16-byte boundary; 151665 is a tokenizer's.
VOCABS = (509, 512, 601, 1021, 4099, 151665)
TILE = 8
ROWS = 24  # distinct rows per width: each lands at every place of a tile


def _rows(vocab: int, device: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """[ROWS, vocab] logits-like rows (a tenth of each -inf), all different."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    gen = torch.Generator().manual_seed(vocab)
    x = torch.randn(ROWS, vocab, generator=gen, dtype=torch.float64) * 4
    x[torch.rand(ROWS, vocab, generator=gen) < 0.1] = float("-inf")
    return x.to(dtype).to(device)


def _bits(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous().view(torch.int64 if x.element_size() == 8 else torch.int32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("vocab", VOCABS)
def test_a_confidence_does_not_depend_on_the_rows_place(device: str, vocab: int) -> None:
    x = _rows(vocab, device)
    nm = Numerics(exact=True, tile=TILE)
    chosen = x.argmax(dim=-1)  # the draft's token: the drafter's argmax
    alone = torch.cat([softmax_confidence(nm, x[j : j + 1].clone(), chosen[j : j + 1]) for j in range(ROWS)])
    for start in range(TILE):  # a group's rows start anywhere in a tile
        got = softmax_confidence(nm, x[start:], chosen[start:])
        differ = (_bits(got) != _bits(alone[start:])).nonzero().flatten()
        assert not len(differ), f"vocab {vocab}: rows {(differ + start).tolist()} differ from alone at offset {start}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("vocab", VOCABS)
def test_a_log_softmax_does_not_depend_on_the_rows_place(device: str, dtype: torch.dtype, vocab: int) -> None:
    x = _rows(vocab, device, dtype)
    alone = torch.cat([row_softmax(x[j : j + 1].clone(), log=True) for j in range(ROWS)])
    for start in range(TILE):
        got = row_softmax(x[start:], log=True)
        assert got.shape == x[start:].shape
        same = (_bits(got) == _bits(alone[start:])).all(dim=-1)
        differ = (~same).nonzero().flatten().add(start).tolist()
        assert not differ, f"vocab {vocab}: rows {differ} differ from alone at offset {start}"


def test_row_softmax_pads_to_whole_lines_in_a_new_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the bits rest on: the padded rows start on `ALIGN_BYTES` lines, in a tensor of their own,
    and the padding changes no value the softmax gives a row's own columns (up to rounding)."""
    x = _rows(601, "cpu")
    seen: list[torch.Tensor] = []
    original = torch.softmax

    def spy(t: torch.Tensor, dim: int) -> torch.Tensor:
        seen.append(t)
        return original(t, dim=dim)

    monkeypatch.setattr(torch, "softmax", spy)
    got = row_softmax(x[3:])
    monkeypatch.undo()
    (wide,) = seen
    assert wide.shape[1] * wide.element_size() % ALIGN_BYTES == 0 and wide.data_ptr() != x.data_ptr()
    assert bool(torch.isneginf(wide[:, 601:]).all())
    torch.testing.assert_close(got, torch.softmax(x[3:], dim=-1), rtol=1e-6, atol=1e-12)
