"""Seeded weights: deterministic, logits with a real spread, and a bit-exact safetensors round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from batched.batched_model import BatchedMtpModel
from reference.model.config import ModelConfig
from reference.model.kernels import bits_equal
from reference.model.model import TinyMtpModel, load_model
from reference.model.weights import WEIGHTS_FILE, init_weights


def _same_weights(a: TinyMtpModel, b: TinyMtpModel) -> bool:
    sa, sb = a.weights.state_dict(), b.weights.state_dict()
    return sa.keys() == sb.keys() and all(bits_equal(sa[k], sb[k]) for k in sa)


def test_weights_come_from_the_seed() -> None:
    assert _same_weights(TinyMtpModel(ModelConfig(seed=3)), TinyMtpModel(ModelConfig(seed=3)))
    assert not _same_weights(TinyMtpModel(ModelConfig(seed=3)), TinyMtpModel(ModelConfig(seed=4)))


def test_lower_precision_weights_are_the_float64_ones_rounded() -> None:
    w64 = init_weights(ModelConfig()).state_dict()
    w32 = TinyMtpModel(ModelConfig(dtype="float32")).weights.state_dict()
    assert all(bits_equal(w32[k], w64[k].float()) for k in w64)


def test_logits_have_a_real_spread() -> None:
    model = TinyMtpModel(ModelConfig(max_seq_len=128))
    toks = torch.randint(0, 320, (128,), generator=torch.Generator().manual_seed(0)).tolist()
    logits = model.forward_full(toks).double()
    top2 = logits.topk(2, dim=-1).values
    margins = top2[:, 0] - top2[:, 1]
    assert 1.5 < logits.std() < 4.0
    assert (margins > 0.05).float().mean() > 0.85  # mostly well away from a tie
    assert margins.max() < 6.0  # not one token dominating everything
    assert len(set(logits.argmax(-1).tolist())) > 40


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_save_load_round_trip_is_bit_exact(tmp_path: Path, dtype: str) -> None:
    model = BatchedMtpModel(ModelConfig(dtype=dtype, seed=11, stash_capacity=0, propose_meta_stride=6))
    model.save_model(tmp_path)
    loaded = load_model(tmp_path, device="cpu", cls=BatchedMtpModel, env={})
    assert type(loaded) is BatchedMtpModel
    assert loaded.cfg == model.cfg
    assert _same_weights(loaded, model)
    toks = [1, 2, 3, 200]
    assert bits_equal(loaded.forward_full(toks), model.forward_full(toks))


def test_load_refuses_a_weights_file_that_disagrees_with_the_config(tmp_path: Path) -> None:
    TinyMtpModel(ModelConfig(dtype="float32")).save_model(tmp_path)
    TinyMtpModel(ModelConfig(dtype="float64")).save_model(tmp_path / "other")
    (tmp_path / WEIGHTS_FILE).write_bytes((tmp_path / "other" / WEIGHTS_FILE).read_bytes())
    with pytest.raises(ValueError, match="the configuration says float32"):
        load_model(tmp_path)
    TinyMtpModel(ModelConfig(dtype="float32", hidden=32, n_heads=2)).save_model(tmp_path / "small")
    (tmp_path / WEIGHTS_FILE).write_bytes((tmp_path / "small" / WEIGHTS_FILE).read_bytes())
    with pytest.raises(ValueError, match="has shape"):
        load_model(tmp_path)
