"""G1-G7: whether the batched bootstrap may run."""

from __future__ import annotations

from batched.protocol import BatchedModel
from reference.sched_ctx import SchedCtx


def can_batch_bootstrap(model: BatchedModel, sched: SchedCtx, n: int, dflash_verify_raw_argmax: bool) -> bool:
    """True when `step_mtp_bootstrap_batched` may run for `n` sequences.

    G1 n >= 2; G2 not a DFlash serve; G3 the `mtp_batch_bootstrap` lever (its environment switch
    clears it); G4 an MTP dispatch cap above 1; G5 for a DFlash drafter, unified-ctx and
    serial-append both off; G6 BF16 (not FP32) decode logits, since a per-row offset into the FP32
    scratch would be read as BF16; G7 the model's batched-verify envelope at the narrowest width.
    """
    levers = sched.levers
    return (
        n >= 2
        and not dflash_verify_raw_argmax
        and levers.mtp_batch_bootstrap
        and levers.mtp_max_seqs > 1
        and not (model.dflash_gamma() is not None and (levers.dflash_unified_ctx or levers.dflash_serial_append))
        and not model.decode_logits_fp32()
        and model.can_batch_verify([2] * n)
    )
