"""ModelConfig: validation names the bad field, JSON round trip, derived sizes, the meta stride."""

from __future__ import annotations

import pytest

from reference.model.config import ModelConfig
from reference.sched_ctx import ENV_PROPOSE_META_STRIDE


def test_defaults_are_valid_and_round_trip_through_json() -> None:
    cfg = ModelConfig(dtype="float32", numerics="fast", propose_meta_stride=5, dflash_gamma=4, row_tile=16)
    assert ModelConfig.from_json(cfg.to_json()) == cfg
    assert ModelConfig.from_json(ModelConfig().to_json()) == ModelConfig()


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"vocab_size": 0}, "vocab_size"),
        ({"hidden": 64, "n_heads": 5}, "n_heads"),
        ({"n_attn_layers": 0}, "n_attn_layers"),
        ({"max_seq_len": 100}, "max_seq_len"),
        ({"max_batch_rows": 128}, "max_batch_rows"),
        ({"stash_capacity": -1}, "stash_capacity"),
        ({"mtp_propose_batch_max": -1}, "mtp_propose_batch_max"),
        ({"max_batched_drafts": 9}, "max_batched_drafts"),
        ({"propose_meta_stride": 0}, "propose_meta_stride"),
        ({"dflash_gamma": 0}, "dflash_gamma"),
        ({"dtype": "float16"}, "dtype"),
        ({"numerics": "approx"}, "numerics"),
        ({"device": "tpu:x"}, "device"),
        ({"row_tile": 6}, "row_tile"),
        ({"hidden": 36, "n_heads": 4}, "hidden"),
        ({"ssm_state": 20}, "ssm_state"),
        ({"mlp_hidden": 100}, "mlp_hidden"),
        ({"init_scale": 0.0}, "init_scale"),
        ({"seed": -3}, "seed"),
        ({"ep": 1}, "ep"),
        ({"num_blocks": 2.5}, "num_blocks"),
        ({"num_slots": True}, "num_slots"),
    ],
)
def test_invalid_field_is_a_value_error_naming_it(fields: dict, named: str) -> None:
    with pytest.raises(ValueError, match=rf"ModelConfig\.{named}="):
        ModelConfig(**fields)


def test_fast_numerics_allows_dims_exact_mode_refuses() -> None:
    ModelConfig(numerics="fast", hidden=36, n_heads=4, ssm_state=20, row_tile=6)


def test_unknown_json_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown fields bogus"):
        ModelConfig.from_json('{"bogus": 1}')


def test_derived_sizes() -> None:
    cfg = ModelConfig(max_seq_len=128, block_size=16, max_drafts=8, hidden=64, n_heads=4)
    assert cfg.head_dim == 16 and cfg.mlp_width == 128
    assert cfg.main_blocks_per_seq == 8
    assert cfg.draft_span == 144 and cfg.draft_blocks_per_seq == 9


def test_meta_stride_from_max_seq_len_config_or_environment() -> None:
    cfg = ModelConfig(max_seq_len=128, block_size=16)
    assert cfg.resolved_meta_stride({}) == 8
    assert ModelConfig(propose_meta_stride=3).resolved_meta_stride({}) == 3
    assert ModelConfig(propose_meta_stride=3).resolved_meta_stride({ENV_PROPOSE_META_STRIDE: "12"}) == 12
    assert cfg.resolved_meta_stride({ENV_PROPOSE_META_STRIDE: " "}) == 8
    with pytest.raises(ValueError, match=ENV_PROPOSE_META_STRIDE):
        cfg.resolved_meta_stride({ENV_PROPOSE_META_STRIDE: "0"})
