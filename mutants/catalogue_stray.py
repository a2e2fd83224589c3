"""Mutants that write where they should not: state no sequence of the step owns, or state the step
should leave alone (an SSM slot of no row, another block of the sequence's own drafter cache, the
scheduler's levers and telemetry). Only a whole-world comparison sees most of them."""

from __future__ import annotations

from mutants.spec import Mutant, mutant

MODEL = "batched/batched_model.py"
STEP = "batched/step.py"

MUTANTS: tuple[Mutant, ...] = (
    mutant(
        "stray-ssm-rows-without-slot",
        MODEL,
        "B2",
        "decode_batch writes back a state for every row, so a row without an SSM slot writes slot 0",
        ("state.index_copy_(0, slots_w, h_new.index_select(0, rows_w))", "state.index_copy_(0, slot, h_new)"),
    ),
    mutant(
        "stray-draft-kv-block-of-first-position",
        MODEL,
        "B17",
        "the batched drafter writes every draft's KV into the block of the propose position, so a draft past "
        "a block boundary overwrites an earlier position of the same sequence",
        (
            "[s.draft_block_table[p // cfg.block_size] for p, s in zip(ps, seqs, strict=True)] for ps in steps",
            "[s.draft_block_table[p // cfg.block_size] for p, s in zip(positions, seqs, strict=True)] for ps in steps",
        ),
    ),
    mutant(
        "stray-lever-off-after-group-failure",
        STEP,
        "B21",
        "a failed group propose turns the batched-bootstrap lever off for every later step",
        (
            'log_propose_batched_err("batched bootstrap run_mtp_propose_batched", e)',
            'log_propose_batched_err("batched bootstrap run_mtp_propose_batched", e)\n'
            "                sched.levers.mtp_batch_bootstrap = False",
        ),
    ),
    mutant(
        "stray-telemetry-key-renamed",
        STEP,
        "B26",
        "the engaged line's once-key is misspelt: the line is still logged once, but the process's telemetry "
        "records a key no other step reads and the right key stays unseen",
        ('sched.telemetry.once("log:mtp_batched_bootstrap")', 'sched.telemetry.once("log:mtp_batched_boostrap")'),
    ),
)
