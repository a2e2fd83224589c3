"""The facts the outside check holds a step to (`properties.sides.outside`): the model objects'
configuration, weights object, numerics, device and envelope answers, and the process's global random
generators, torch flags, environment and logger configuration."""

from __future__ import annotations

import logging
import os
import random
import sys
from typing import Any

import torch

from reference.telemetry import LOGGER_NAME


# -- the model objects ----------------------------------------------------------------------------
def model_facts(model: Any) -> dict[str, Any]:
    """The model's configuration, weights object, numerics, device and envelope answers."""
    facts: dict[str, Any] = {}
    for attr in ("cfg", "weights", "nm", "device", "meta_stride"):
        if hasattr(model, attr):
            v = getattr(model, attr)
            facts[attr] = ("object", id(v)) if attr == "weights" else v
    queries = {
        "vocab_size()": lambda: model.vocab_size(),
        "dflash_gamma()": lambda: model.dflash_gamma(),
        "decode_logits_fp32()": lambda: model.decode_logits_fp32(),
        "mtp_propose_batch_max()": lambda: model.mtp_propose_batch_max(),
        "propose_meta_stride()": lambda: model.propose_meta_stride(),
    }
    for name, ask in queries.items():
        try:
            facts[name] = ask()
        except Exception as e:  # an answer that fails is a fact too
            facts[name] = f"raises {type(e).__name__}"
    capacity = getattr(getattr(model, "cfg", None), "stash_capacity", 2)
    for n in sorted({1, 2, max(capacity, 1), capacity + 1}):
        try:
            facts[f"can_batch_verify([2] * {n})"] = model.can_batch_verify([2] * n)
        except Exception as e:
            facts[f"can_batch_verify([2] * {n})"] = f"raises {type(e).__name__}"
    return facts


# -- the process ------------------------------------------------------------------------------------
def process_facts() -> dict[str, Any]:
    """The global random generators, torch's global flags, the environment and the logger."""
    facts: dict[str, Any] = {
        "torch CPU random state": bytes(torch.get_rng_state().numpy()),
        "Python random state": random.getstate(),
        "environment": dict(os.environ),
        "torch default dtype": torch.get_default_dtype(),
        "torch threads": torch.get_num_threads(),
        "torch grad mode": torch.is_grad_enabled(),
        "torch deterministic algorithms": (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ),
        "torch float32 matmul precision": torch.get_float32_matmul_precision(),
        "torch matmul reduced precision": (
            torch.backends.cuda.matmul.allow_tf32,
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        ),
        "torch cudnn flags": (
            torch.backends.cudnn.enabled,
            torch.backends.cudnn.allow_tf32,
            torch.backends.cudnn.benchmark,
            torch.backends.cudnn.deterministic,
        ),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        facts["torch CUDA random states"] = tuple(bytes(s.numpy()) for s in torch.cuda.get_rng_state_all())
    np = sys.modules.get("numpy")
    if np is not None:
        kind, keys, pos, gauss, cached = np.random.get_state()
        facts["NumPy random state"] = (kind, bytes(keys.tobytes()), pos, gauss, cached)
    for name in (LOGGER_NAME, ""):
        lg = logging.getLogger(name)
        facts[f"logger {name or 'root'}"] = (
            lg.level,
            lg.disabled,
            lg.propagate,
            tuple(id(h) for h in lg.handlers),
            tuple(id(f) for f in lg.filters),
        )
    return facts
