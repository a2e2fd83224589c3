"""The fully batched step with its attention gathered: `batched.vector.step` on a `VectorMtpModel`
that never uses the paged kernel (`batched.vector.attention`), so that in fast numerics its attention
is the reference's own kernel over each row's gathered span.

The paged kernel rounds differently from the reference's attention. In bfloat16 that difference
alone forces more near-tie decisions than the suite's budget allows (`docs/vector-step.md`), so
the GPU checks the step's logic in fast bfloat16 through this entry point and the paged kernel
in fast float32, where its rounding forces few decisions.
"""

from __future__ import annotations

from batched.protocol import BatchedModel
from batched.vector.model import VectorMtpModel
from batched.vector.step import step_mtp_bootstrap_vectorized
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq

PER_ROW_FAST_GREEDY_CALLS = False  # as batched.vector.step


def prepare_model(model: BatchedModel) -> VectorMtpModel:
    """`batched.vector.step.prepare_model` without the paged kernel."""
    return VectorMtpModel.from_model(model, paged=False)  # type: ignore[arg-type]


def step_mtp_bootstrap_vectorized_gathered(
    model: BatchedModel,
    active: list[ActiveSeq],
    sched: SchedCtx,
    idxs: list[int],
    ladder_nd: int,
    verify_ctx: LogitsContext,
) -> None:
    """`step_mtp_bootstrap_vectorized` (its model prepared by this module's `prepare_model`)."""
    step_mtp_bootstrap_vectorized(model, active, sched, idxs, ladder_nd, verify_ctx)
