"""Mutants that only a later step can reveal: each leaves a single bootstrap step, on a world built
for one step, exactly as the per-sequence loop leaves it, and breaks something the engine's later
steps depend on (a block table grown ahead by a verify, a sequence slot reused by a new request, a
sequence with drafts pending verification). P9 (whole generations) is the property meant to kill
them; docs/generations.md records which property did."""

from __future__ import annotations

from mutants.spec import Mutant, mutant

MODEL = "batched/batched_model.py"
STEP = "batched/step.py"
MAIN_TABLES = "*row_sections(pos, [s.block_table for s in seqs], span, cfg.block_size),"
SSM_ROWS = "[0 if s.ssm_slot is None else s.ssm_slot for s in seqs],"
PROPOSE_META = "propose_meta = [b for s in seqs for b in padded_table(s.draft_block_table, stride)]"

MUTANTS: tuple[Mutant, ...] = (
    mutant(
        "gen-kv-write-last-block",
        MODEL,
        "B2",
        "decode_batch writes each row's new KV into the last block of its table (tables grown just in time)",
        (
            MAIN_TABLES,
            "[s.block_table[-1] for s in seqs],\n"
            "                *row_sections(pos, [s.block_table for s in seqs], span, cfg.block_size)[1:],",
        ),
    ),
    mutant(
        "gen-main-table-cached-per-slot",
        MODEL,
        "B2 B1",
        "decode_batch packs each sequence slot's block table once and reuses it in later steps",
        (
            MAIN_TABLES,
            "*row_sections(\n"
            "                    pos,\n"
            '                    [self.__dict__.setdefault("_tables", {}).setdefault(s.slot_idx, list(s.block_table))\n'
            "                     for s in seqs],\n"
            "                    span,\n"
            "                    cfg.block_size,\n"
            "                ),",
        ),
    ),
    mutant(
        "gen-ssm-slot-cached-per-slot",
        MODEL,
        "B2 B1",
        "decode_batch reads each sequence slot's SSM state from the SSM slot it had when first seen",
        (
            SSM_ROWS,
            '[self.__dict__.setdefault("_ssm_of", {}).setdefault(s.slot_idx, s.ssm_slot or 0) for s in seqs],',
        ),
    ),
    mutant(
        "gen-propose-meta-cached-per-slot",
        MODEL,
        "B17 B26",
        "the packed drafter block table is cached per sequence slot, not refreshed when it grows or is reused",
        (
            PROPOSE_META,
            'cached = self.__dict__.setdefault("_propose_meta", {})\n'
            "        propose_meta = [\n"
            "            b\n"
            "            for s in seqs\n"
            "            for b in cached.setdefault(s.slot_idx, padded_table(s.draft_block_table, stride))\n"
            "        ]",
        ),
    ),
    mutant(
        "gen-step-clears-all-drafts",
        STEP,
        "B1 B19",
        "the step clears pending drafts over `active` instead of its own (draftless) rows",
        (
            "    refs = select_rows(active, idxs)\n",
            "    refs = select_rows(active, idxs)\n"
            "    for a in active:  # the rows start without drafts or confidences\n"
            "        a.pending_drafts, a.pending_draft_conf = [], []\n",
        ),
    ),
)
