"""Mutants of the batched model operations (`batched/batched_model.py`) and of the propose-error log
(`batched/propose_log.py`): B2, B7, B9, B17, B18, B25, B26."""

from __future__ import annotations

from mutants.spec import Mutant, mutant

MODEL = "batched/batched_model.py"
PLOG = "batched/propose_log.py"
STRIDE_CHECK = "if len(s.draft_block_table) > self.meta_stride:"

MUTANTS: tuple[Mutant, ...] = (
    mutant(
        "model-ssm-rows-assumed-first",
        MODEL,
        "B2 B1",
        "decode_batch writes back the first rows' SSM states, assuming rows with an SSM slot come first",
        (
            "state.index_copy_(0, slots_w, h_new.index_select(0, rows_w))",
            "state.index_copy_(0, slots_w, h_new[: len(with_slot)])",
        ),
    ),
    mutant(
        "model-argmax-nan-row",
        MODEL,
        "B7 B9",
        "argmax_batch returns a token for a NaN row instead of failing",
        ("nan = rows.isnan().any(dim=1)  # [n]", "nan = torch.zeros_like(rows[:, 0], dtype=torch.bool)  # [n]"),
    ),
    mutant(
        "model-argmax-posinf-row",
        MODEL,
        "B7 B9",
        "argmax_batch takes a row with a +inf logit and emits that token, which the per-row sampler refuses",
        ("posinf = rows.isposinf().any(dim=1)", "posinf = torch.zeros_like(rows[:, 0], dtype=torch.bool)"),
    ),
    mutant(
        "model-argmax-all-masked-row",
        MODEL,
        "B7 B9",
        "argmax_batch counts only an all-NaN row as having no finite logit: a row of -inf emits token 0 (EOS)",
        ("no_finite = ~rows.isfinite().any(dim=1)", "no_finite = rows.isnan().all(dim=1)"),
    ),
    mutant(
        "model-drafter-length-off-by-one",
        MODEL,
        "B17",
        "the batched drafter attends over one position fewer than it has written",
        ("[p + 1 for p in positions],", "[p for p in positions],"),
    ),
    mutant(
        "model-conf-sliced-wrong",
        MODEL,
        "B18 D4",
        "the confidences handed back are the drafts' columns",
        ("conf_out[:] = [row[k:] for row in host]", "conf_out[:] = [row[:k] for row in host]"),
    ),
    mutant(
        "model-stride-off-by-one",
        MODEL,
        "B26",
        "a drafter block table that exactly fills the meta stride is refused",
        (STRIDE_CHECK, "if len(s.draft_block_table) >= self.meta_stride:"),
    ),
    mutant(
        "model-stride-from-main-table",
        MODEL,
        "B26",
        "the stride overflow is checked on the main block table's length",
        (STRIDE_CHECK, "if len(s.block_table) > self.meta_stride:"),
    ),
    mutant(
        "log-stride-outer-message",
        PLOG,
        "B25",
        "the 'exceeds meta stride' match reads the outer message only",
        ("if META_STRIDE_TEXT in msg:", "if META_STRIDE_TEXT in str(e):"),
    ),
    mutant(
        "log-stride-at-info",
        PLOG,
        "B25",
        "the meta-stride overflow logs at info",
        ('log.debug(f"{prefix}: {msg}")', 'log.info(f"{prefix}: {msg}")'),
    ),
    mutant(
        "log-error-outer-message",
        PLOG,
        "B25",
        "a propose error is logged with its outer message only",
        ('log.error(f"{prefix}: {msg}")', 'log.error(f"{prefix}: {e}")'),
    ),
)
