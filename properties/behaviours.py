"""The behaviour ids of the design (G1-G8 gate, B1-B26 batched step, D1-D4 registered differences)
and which property covers which."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])

GATE: dict[str, str] = {
    "G1": "n >= 2",
    "G2": "not a DFlash serve (dflash_verify_raw_argmax)",
    "G3": "mtp_batch_bootstrap lever (environment switch clears it)",
    "G4": "mtp_max_seqs > 1",
    "G5": "not (DFlash drafter and (unified-ctx or serial-append))",
    "G6": "BF16 decode logits (not FP32)",
    "G7": "can_batch_verify([2]*n)",
    "G8": "gate false: the per-sequence loop runs",
}

BATCHED: dict[str, str] = {
    "B1": "rows = active[idxs] stably ordered by SSM slot (else slot); active not reordered",
    "B2": "one decode_batch of every row's last token",
    "B3": "decode_batch failure finishes every row, emits, checkpoints and retries nothing",
    "B4": "per-row penalties (verify kind, reasoning floor)",
    "B5": "greedy eligibility (boot-argmax lever, fast greedy, temp 0 or forced, no grammar, no EOS hold, "
    "neutral penalties)",
    "B6": "argmax_batch once over all n rows only when >= 2 rows are eligible; its tokens for eligible rows only",
    "B7": "argmax_batch failure is not fatal: rows sample per row",
    "B8": "per-row sampling with EOS mask, grammar, penalties, scoped history",
    "B9": "a sampling failure finishes that row only",
    "B10": "top logprobs from the raw row",
    "B11": "emit; a finished row stops there",
    "B12": "last token, tick_serial, spec_allowed exactly once",
    "B13": "stash all n rows if any row proposes (slot j = row j); failure: no proposes, checkpoints run",
    "B14": "group cap = max(cap, 1)",
    "B15": "batchable = no grammar and effective drafts = ladder",
    "B16": "batched proposes only when cap >= 2 and ladder >= 1, chunks of the cap, groups of one fall back",
    "B17": "propose inputs: last token, seq_len, stash row",
    "B18": "confidences only when D-Cut or a draft-stop logprob is on",
    "B19": "Ok(Some): non-empty drafts and confidences replace pending ones, every member done",
    "B20": "Ok(None): members fall back per sequence",
    "B21": "Err: members done with no drafts, logged",
    "B22": "per-sequence fallback: save from stash (failure skips), grammar mask, effective drafts, propose, "
    "empty warns",
    "B23": "every unfinished row checkpoints",
    "B24": "once-per-process logs",
    "B25": "'exceeds meta stride' logs at debug, all else at error, matched on the whole chain",
    "B26": "the meta stride and its overflow",
}

DIFFERENCES: dict[str, str] = {
    "D1": "a save-hidden failure skips the checkpoint in the loop, not in the batched path",
    "D2": "a decode_batch failure finishes every row, a decode failure only its sequence",
    "D3": "log order follows row order (logs compared as multisets)",
    "D4": "group proposes record draft confidences, per-sequence proposes do not",
}

ALL_IDS: dict[str, str] = {**GATE, **BATCHED, **DIFFERENCES}

# Filled by `covers` as the property modules are imported: property name -> behaviour ids.
COVERAGE: dict[str, tuple[str, ...]] = {}

PROPERTY_MODULES = (
    "properties.step.test_p1_equivalence",
    "properties.step.test_p2_gate",
    "properties.step.test_p2_gate_clauses",
    "properties.step.test_p3_calls",
    "properties.step.test_p4_faults",
    "properties.step.test_p5_differences",
    "properties.step.test_p6_metamorphic",
    "properties.step.test_p7_logging",
    "properties.step.test_p8_bad_input",
    "properties.generations.test_p9_generations",
    "properties.sampling.test_step_draws",
    "properties.sampling.test_step_invariance",
    # The suite's own parts, whose `@covers` count too (the gate's clauses G1-G7 are checked only here).
    "properties.self_tests.test_gate",
    "properties.self_tests.test_literal_dispatch",
    "properties.self_tests.test_propose_log",
)


def covers(prop: str, *ids: str) -> Callable[[F], F]:
    """Declare that the decorated test is (part of) property `prop` and can fail on `ids`."""
    unknown = [i for i in ids if i not in ALL_IDS]
    if unknown:
        raise ValueError(f"{prop}: unknown behaviour ids {unknown}")

    def mark(fn: F) -> F:
        COVERAGE[prop] = tuple(dict.fromkeys((*COVERAGE.get(prop, ()), *ids)))
        return fn

    return mark


def load_all() -> dict[str, tuple[str, ...]]:
    """Import every property module so that the coverage registry is complete."""
    for name in PROPERTY_MODULES:
        importlib.import_module(name)
    return dict(sorted(COVERAGE.items()))


def uncovered() -> list[str]:
    """Behaviour ids no property covers."""
    covered = {b for ids in load_all().values() for b in ids}
    return [b for b in ALL_IDS if b not in covered]


def matrix_text() -> str:
    """The behaviour x property matrix as a fixed-width table."""
    coverage = load_all()
    props = list(coverage)
    short = [p.split()[0] for p in props]
    lines = ["id   " + " ".join(f"{s:>3}" for s in short) + "  behaviour"]
    for bid, text in ALL_IDS.items():
        marks = " ".join(f"{'x' if bid in coverage[p] else '.':>3}" for p in props)
        lines.append(f"{bid:<4} {marks}  {text}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(matrix_text())
    missing = uncovered()
    if missing:
        raise SystemExit(f"uncovered behaviour ids: {', '.join(missing)}")
