"""Mutants of the bug classes the suite once could not reach, one or more per class: exact ties,
scale boundaries (a row tile of 16, slot masks of 64 bits, slot ids of 8 bits, tokens of 16 bits),
state outside the compared world (the model's configuration, its weights), process-global state,
per-request caches kept across steps, and small semantic errors. Each passed the whole suite before
its class was reached; `docs/mutants.md` says what kills each now.

`MUTANTS` change the default implementation (`batched/step.py`, `batched/batched_model.py`);
`VECTOR_MUTANTS` the fully batched step's own code."""

from __future__ import annotations

from mutants.catalogue_vector import VECTOR_IMPL as VECTOR
from mutants.spec import Mutant, mutant

STEP = "batched/step.py"
MODEL = "batched/batched_model.py"
CUTS = "batched/vector/rows.py"
SAMPLING = "batched/vector/sampling_pass.py"
REQUESTS = "batched/vector/sampling_pass.py"
VSTEP = "batched/vector/step.py"
LOG_IMPORT = "from reference.telemetry import log\n"
CKPT_ERROR = 'log.error(f"batched bootstrap start_checkpoint_async: {format_chain(e)}")'
STASH_ERROR = 'log.error(f"batched bootstrap stash_verify_hidden_rows: {format_chain(e)}")'
DECODE_ERROR = 'log.error(f"batched bootstrap decode_batch (n={n}): {format_chain(e)}")'
TOKENS_PACKED = "            [\n                tokens,\n                [0 if s.ssm_slot"
# A cache by request object (kept alive, so its id is never another's): an engine keeps the same
# object for a request from step to step; a single-step world has new ones every time.
REQUEST_CACHE = "dict[int, tuple[object, bool]] = {}\n"

MUTANTS: tuple[Mutant, ...] = (
    # -- exact ties -------------------------------------------------------------------------------
    mutant(
        "tie-argmax-batch-to-highest-id",
        MODEL,
        "B6",
        "argmax_batch breaks exact ties to the highest id (a scan from the end of the row)",
        (
            "return torch.stack([argmax_rows(rows), code])",
            "return torch.stack([rows.shape[1] - 1 - argmax_rows(rows.flip(1)), code])",
        ),
    ),
    mutant(
        "tie-drafts-to-highest-id",
        MODEL,
        "B19",
        "the batched drafter breaks exact ties between draft candidates to the highest id",
        ("tok = argmax_rows(logits)  # [n]", "tok = logits.shape[1] - 1 - argmax_rows(logits.flip(1))  # [n]"),
    ),
    # -- scale boundaries -------------------------------------------------------------------------
    mutant(
        "scale-argmax-readback-tile-16",
        MODEL,
        "B6",
        "argmax_batch reads its verdicts back through a tile of 16 rows: row j gets row j mod 16's",
        (
            "ids, codes = argmax_verdicts(logits[:n]).tolist()",
            "ids, codes = argmax_verdicts(logits[:n][torch.arange(n) % 16]).tolist()",
        ),
    ),
    mutant(
        "scale-tokens-int16",
        MODEL,
        "B2",
        "decode_batch packs the tokens in 16 signed bits: an id past 32767 wraps to a negative index",
        (TOKENS_PACKED, TOKENS_PACKED.replace("tokens,", "[(t + 32768) % 65536 - 32768 for t in tokens],")),
    ),
    mutant(
        "scale-tokens-uint16",
        MODEL,
        "B2",
        "decode_batch packs the tokens in 16 unsigned bits: an id past 65535 wraps",
        (TOKENS_PACKED, TOKENS_PACKED.replace("tokens,", "[t % 65536 for t in tokens],")),
    ),
    mutant(
        "scale-slot-mask-64-bits",
        MODEL,
        "B2",
        "the duplicate-slot check keeps slots in a 64-bit mask: slots 64 apart count as one",
        (
            "if len(set(slots)) != len(slots):\n            dup = next(s for s in slots if slots.count(s) > 1)",
            "if len({s % 64 for s in slots}) != len(slots):\n"
            "            dup = next(s for s in slots if [t % 64 for t in slots].count(s % 64) > 1)",
        ),
    ),
    mutant(
        "scale-ssm-slot-8-bits",
        MODEL,
        "B2",
        "decode_batch reads each row's SSM state through an 8-bit slot id: SSM slots past 255 read another's",
        (
            "[0 if s.ssm_slot is None else s.ssm_slot for s in seqs],",
            "[0 if s.ssm_slot is None else s.ssm_slot % 256 for s in seqs],",
        ),
    ),
    # -- state outside the compared world ---------------------------------------------------------
    mutant(
        "outside-config-group-cap-raised",
        STEP,
        "B14 B16",
        "the step raises the model's propose group cap (when it has one) to the number of proposing rows "
        "before it groups them",
        (
            "group_cap = max(model.mtp_propose_batch_max(), 1)",
            "if 2 <= model.cfg.mtp_propose_batch_max < len(proposing):\n"
            "        model.cfg.mtp_propose_batch_max = len(proposing)\n"
            "    group_cap = max(model.mtp_propose_batch_max(), 1)",
        ),
    ),
    mutant(
        "outside-weights-written-in-place",
        MODEL,
        "B2",
        "decode_batch folds the final norm's first weight into the others in place (meant for load time): "
        "once done, every model that shares the weights computes with the folded ones",
        (
            "        cfg, n = self.cfg, len(seqs)\n        pos = [s.seq_len for s in seqs]",
            "        cfg, n = self.cfg, len(seqs)\n        w = self.weights.final_norm\n"
            "        if w[0] != 1:\n            w.div_(w[0].clone())\n"
            "        pos = [s.seq_len for s in seqs]",
        ),
    ),
    # -- process-global state ---------------------------------------------------------------------
    mutant(
        "process-first-error-at-warning",
        STEP,
        "B25",
        "the first error line of the process goes out at warning (a module flag marks it written)",
        (
            LOG_IMPORT,
            LOG_IMPORT + "\n_FIRST_ERROR = [True]\n\n\ndef _error(msg: str) -> None:\n"
            "    (log.warning if _FIRST_ERROR[0] else log.error)(msg)\n    _FIRST_ERROR[0] = False\n",
        ),
        (DECODE_ERROR, DECODE_ERROR.replace("log.error", "_error")),
        (STASH_ERROR, STASH_ERROR.replace("log.error", "_error")),
        (CKPT_ERROR, CKPT_ERROR.replace("log.error", "_error")),
    ),
    mutant(
        "process-first-error-flag-in-a-cache",
        STEP,
        "B25",
        "the first error line of the process goes out at warning, its flag kept where no module global shows",
        (
            LOG_IMPORT,
            "import functools\n\n" + LOG_IMPORT + "\n\n@functools.cache\ndef _first_error() -> list[bool]:\n"
            "    return [True]\n\n\ndef _error(msg: str) -> None:\n"
            "    (log.warning if _first_error()[0] else log.error)(msg)\n    _first_error()[0] = False\n",
        ),
        (DECODE_ERROR, DECODE_ERROR.replace("log.error", "_error")),
        (STASH_ERROR, STASH_ERROR.replace("log.error", "_error")),
        (CKPT_ERROR, CKPT_ERROR.replace("log.error", "_error")),
    ),
    # -- per-request caches across steps ----------------------------------------------------------
    mutant(
        "cache-eos-hold-per-request",
        STEP,
        "B5",
        "a request's EOS hold is computed at its first bootstrap and reused while it runs",
        (LOG_IMPORT, LOG_IMPORT + "\n_HOLDS: " + REQUEST_CACHE),
        (
            "and not presample_hold_for(a, len(a.output_tokens)).any()",
            "and not _HOLDS.setdefault(id(a), (a, presample_hold_for(a, len(a.output_tokens)).any()))[1]",
        ),
    ),
    mutant(
        "cache-spec-allowed-per-request",
        STEP,
        "B12",
        "whether a request speculates is decided at its first bootstrap (spec_allowed still called once a step)",
        (LOG_IMPORT, LOG_IMPORT + "\n_ALLOWED: " + REQUEST_CACHE),
        (
            "if spec_allowed(a, sched):  # can change re-probe state: called once",
            "if _ALLOWED.setdefault(id(a), (a, spec_allowed(a, sched)))[1]:",
        ),
    ),
    # -- small semantic errors --------------------------------------------------------------------
    mutant(
        "semantic-temperature-near-one-snapped",
        STEP,
        "B8",
        "a temperature within 5 % of 1 samples at exactly 1",
        (
            "from reference.adaptive_spec import",
            "from dataclasses import replace\n\nfrom reference.adaptive_spec import",
        ),
        (
            "tok = sample_for_seq(model, a, row_logits, pen[j], verify_ctx)",
            "snapped = replace(a, temperature=1.0) if abs(a.temperature - 1.0) < 0.05 else a\n"
            "                tok = sample_for_seq(model, snapped, row_logits, pen[j], verify_ctx)",
        ),
    ),
)

VECTOR_MUTANTS: tuple[Mutant, ...] = (
    mutant(
        "vec-tie-cut-rank-to-highest-id",
        CUTS,
        "B8",
        "top-k and top-p rank exactly tied candidates highest id first, so a cut through a tie keeps the wrong one",
        (
            "order = torch.sort(proc, dim=-1, descending=True, stable=True).indices",
            "order = vocab - 1 - torch.sort(proc.flip(-1), dim=-1, descending=True, stable=True).indices",
        ),
        impl=VECTOR,
    ),
    mutant(
        "vec-tie-greedy-in-pass-to-highest-id",
        SAMPLING,
        "B8",
        "the sampling pass's greedy argmax breaks exact ties to the highest id",
        (
            "tokens = torch.argmax(proc, dim=-1)  # [R]: the greedy token, ties to the lowest id",
            "tokens = vocab - 1 - torch.argmax(proc.flip(-1), dim=-1)  # [R]",
        ),
        impl=VECTOR,
    ),
    mutant(
        "vec-scale-pass-tokens-tile-16",
        SAMPLING,
        "B8",
        "the sampling pass hands back its tokens through a tile of 16 rows: request i gets request i mod 16's",
        (
            "return SampledRows(requests, tokens[:m], flags[:m])",
            "return SampledRows(requests, tokens[:m][torch.arange(m, device=tokens.device) % 16], flags[:m])",
        ),
        impl=VECTOR,
    ),
    mutant(
        "vec-semantic-temperature-near-one-snapped",
        REQUESTS,
        "B8",
        "a temperature within 5 % of 1 samples at exactly 1",
        (
            "temperature=a.temperature,",
            "temperature=1.0 if abs(a.temperature - 1.0) < 0.05 else a.temperature,",
        ),
        impl=VECTOR,
    ),
    mutant(
        "vec-cache-eos-hold-on-the-model",
        VSTEP,
        "B5 B8",
        "a request's EOS hold is computed at its first bootstrap and kept by the model across steps",
        (
            "classes = row_classes(refs, sched.watchdog.min_reasoning_floor, sched, verify_ctx)  # B4, B5",
            "classes = row_classes(refs, sched.watchdog.min_reasoning_floor, sched, verify_ctx)  # B4, B5\n"
            '    holds = model.pass_cache().passes.setdefault(("holds",), {}) if hasattr(model, "pass_cache") else {}\n'
            "    held = [holds.setdefault((a.seq_id, a.sampling_seed), h) for a, h in zip(refs, classes[0])]\n"
            "    classes = (held, [g and not h for g, h in zip(classes[1], held)])",
        ),
        impl=VECTOR,
    ),
)
