"""Mutants of the gate (`batched/gate.py`, G1-G7) and the dispatch (`batched/dispatch.py`, G8)."""

from __future__ import annotations

from mutants.spec import Mutant, mutant

GATE = "batched/gate.py"
DISPATCH = "batched/dispatch.py"

MUTANTS: tuple[Mutant, ...] = (
    mutant(
        "gate-one-row",
        GATE,
        "G1",
        "the gate admits a batch of one sequence (n >= 1)",
        ("        n >= 2\n", "        n >= 1\n"),
    ),
    mutant(
        "gate-dflash-serve",
        GATE,
        "G2",
        "the DFlash-serve clause (dflash_verify_raw_argmax) is missing",
        ("        and not dflash_verify_raw_argmax\n", ""),
    ),
    mutant(
        "gate-lever-ignored",
        GATE,
        "G3",
        "the mtp_batch_bootstrap lever (and so its environment switch) is not read",
        ("        and levers.mtp_batch_bootstrap\n", ""),
    ),
    mutant(
        "gate-max-seqs-one",
        GATE,
        "G4",
        "an MTP dispatch cap of 1 passes (mtp_max_seqs >= 1)",
        ("levers.mtp_max_seqs > 1", "levers.mtp_max_seqs >= 1"),
    ),
    mutant(
        "gate-serial-append-forgotten",
        GATE,
        "G5",
        "for a DFlash drafter only the unified-ctx mode blocks; serial-append is forgotten",
        ("(levers.dflash_unified_ctx or levers.dflash_serial_append)", "levers.dflash_unified_ctx"),
    ),
    mutant(
        "gate-dflash-modes-plain",
        GATE,
        "G5",
        "the DFlash context modes block every serve, not only a DFlash drafter's",
        ("model.dflash_gamma() is not None and ", ""),
    ),
    mutant(
        "gate-fp32-logits",
        GATE,
        "G6",
        "FP32 decode logits are not excluded",
        ("        and not model.decode_logits_fp32()\n", ""),
    ),
    mutant(
        "gate-verify-envelope-one-row",
        GATE,
        "G7",
        "the batched-verify envelope is asked for one row instead of n",
        ("model.can_batch_verify([2] * n)", "model.can_batch_verify([2])"),
    ),
    mutant(
        "dispatch-counts-active",
        DISPATCH,
        "G1 G8",
        "the dispatch asks the gate about every active sequence, not the ones bootstrapping",
        ("can_batch_bootstrap(model, sched, len(idxs), ", "can_batch_bootstrap(model, sched, len(active), "),
    ),
    mutant(
        "dispatch-falls-through",
        DISPATCH,
        "G8",
        "after the batched step the dispatch also runs the per-sequence loop",
        (
            "ladder_nd, verify_ctx)\n        return True\n",
            "ladder_nd, verify_ctx)\n",
        ),
    ),
)
