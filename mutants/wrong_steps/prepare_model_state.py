"""A step whose `prepare_model` changes state the step is not given: it folds a scale into the
model's embedding in place (a weight-preparation pass that forgets the weights are shared by every
world built from them, the reference's included), off by one part in 2**20.

`--impl mutants.wrong_steps.prepare_model_state:step` (the literal step otherwise)."""

from __future__ import annotations

from typing import Any

from batched.step import step_mtp_bootstrap_batched as step

FOLD = 1.0 + 2.0**-20


def prepare_model(model: Any) -> Any:
    """The world's model, its embedding scaled in place by `FOLD`."""
    model.weights.embed.mul_(FOLD)
    return model


__all__ = ["prepare_model", "step"]
