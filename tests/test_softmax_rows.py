"""A row's draft confidence has the same bits alone and at every place of a tile, for vocabularies
whose rows do not start on a 16-byte boundary (odd widths) as for aligned ones: D4 compares the
confidences of a group propose with the per-sequence drafter's bit for bit in exact numerics.

On the CPU the kernels load rows unaligned; on CUDA (marked `gpu`) the softmax reads a row in
16-byte vectors, so a kernel that reduced the elements before the first aligned one apart would
break this for odd widths (measured not to, on an H100, for 509 to 151665 in float32 and float64)."""

from __future__ import annotations

import pytest
import torch

from reference.model.kernels import Numerics, softmax_confidence

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# Widths off and on the 16-byte boundary; 151665 is a tokenizer's.
VOCABS = (509, 512, 601, 1021, 4099, 151665)
TILE = 8


def _rows(vocab: int, device: str) -> torch.Tensor:
    """[TILE + TILE - 1, vocab] float32: one random row repeated, so every row's result is the first's."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    gen = torch.Generator().manual_seed(vocab)
    row = torch.randn(vocab, generator=gen, dtype=torch.float64) * 4
    row[torch.randint(vocab, (vocab // 10,), generator=gen)] = float("-inf")
    return row.to(torch.float32).repeat(2 * TILE - 1, 1).to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("vocab", VOCABS)
def test_a_confidence_does_not_depend_on_the_rows_place(device: str, vocab: int) -> None:
    x = _rows(vocab, device)
    nm = Numerics(exact=True, tile=TILE)
    chosen = torch.full((x.shape[0],), int(x[0].argmax()), dtype=torch.int64, device=x.device)
    alone = softmax_confidence(nm, x[:1].clone(), chosen[:1]).view(torch.int32)
    for start in range(TILE):  # a group's rows start anywhere in a tile
        got = softmax_confidence(nm, x[start:], chosen[start:]).view(torch.int32)
        assert torch.equal(got, alone.expand_as(got)), f"vocab {vocab}: rows from {start} differ from the row alone"
