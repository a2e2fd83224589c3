"""Hand-built mixes for every behaviour of the batched step: in exact numerics the batched step
leaves every sequence, cache, checkpoint and drafter state bit-equal to the per-sequence reference
(the registered differences D1-D4 applied), makes exactly the calls the oracle expects and writes
exactly the logs the seed writes. Each case names the behaviour ids it exercises."""

from __future__ import annotations

from dataclasses import replace

import pytest

from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.checks.logs import check_logs
from properties.config import RunConfig
from properties.failures.report import format_report
from properties.sides.harness import run_side_by_side
from properties.sides.side_by_side import SideBySide
from properties.worlds.specs import FaultSpec, ModelSpec, SeqSpec, StepSpec, WorldSpec


def mix(n: int, **seq: object) -> tuple[SeqSpec, ...]:
    """n sequences, slots reversed against SSM slots so the row order differs from index order."""
    return tuple(
        SeqSpec(cache_len=5 + 3 * i, slot_idx=i, ssm_slot=n - 1 - i, token_seed=11 * i + 1, **seq)  # type: ignore[arg-type]
        for i in range(n)
    )


def on_run_device(run: RunConfig, spec: WorldSpec) -> WorldSpec:
    """The case on the run's device and numerics (`--device`, `--numerics`): on the CPU in exact
    numerics as written; elsewhere in the run's dtype (float32 exact or bf16 fast on a GPU)."""
    if run.device == "cpu" and run.exact:
        return spec
    return replace(spec, model=replace(spec.model, device=run.device, numerics=run.numerics, dtype=run.dtypes[0]))


def world(
    seqs: tuple[SeqSpec, ...],
    boot: tuple[int, ...] | None = None,
    model: ModelSpec | None = None,
    step: StepSpec | None = None,
    faults: tuple[FaultSpec, ...] = (),
) -> WorldSpec:
    return WorldSpec(
        model=model or ModelSpec(),
        seqs=seqs,
        bootstrap=boot or tuple(range(len(seqs))),
        step=step or StepSpec(),
        cache_seed=7,
        faults=faults,
    )


GREEDY4 = mix(4)
MIXED = (
    *mix(2),
    SeqSpec(cache_len=15, slot_idx=2, ssm_slot=None, token_seed=5, temperature=1.0, top_k=5, top_p=0.9),
    SeqSpec(cache_len=16, slot_idx=3, ssm_slot=2, token_seed=6, repetition=1.3, n_out=4, tool_call_end_at=1),
    SeqSpec(cache_len=9, slot_idx=4, ssm_slot=4, token_seed=7, min_tokens=5, n_out=2),
    SeqSpec(cache_len=3, slot_idx=5, ssm_slot=5, token_seed=8, grammar="json", n_out=3, top_logprobs=3),
    SeqSpec(cache_len=4, slot_idx=6, ssm_slot=6, token_seed=9, reasoning=True, top_logprobs=0),
    SeqSpec(cache_len=30, slot_idx=7, ssm_slot=7, token_seed=10, max_tokens_left=1),
)

CASES: dict[str, tuple[WorldSpec, tuple[str, ...]]] = {
    "greedy rows, batched argmax": (world(GREEDY4), ("B1", "B2", "B5", "B6", "B12", "B13", "B16", "B17", "B19", "B23")),
    "every kind of row": (world(MIXED), ("B4", "B5", "B8", "B10", "B11", "B15", "B22")),
    "one eligible row: no batched argmax": (world((*mix(1), replace(mix(2)[1], temperature=1.0, ssm_slot=1))), ("B6",)),
    "boot argmax lever off": (world(GREEDY4, step=StepSpec(mtp_boot_argmax=False)), ("B5", "B6")),
    "forced temperature zero": (world(mix(3, temperature=1.0), step=StepSpec(force_temp_zero=True)), ("B5",)),
    "bootstrap a subset, others untouched": (world(mix(5), boot=(1, 3, 4)), ("B1",)),
    "groups larger than the cap, trailing group of one": (
        world(mix(5), model=ModelSpec(group_cap=2)),
        ("B14", "B16", "B22"),
    ),
    "group cap 0 and 1: per-sequence proposes": (world(mix(3), model=ModelSpec(group_cap=0)), ("B14", "B16")),
    "ladder 0": (world(mix(3), step=StepSpec(ladder_nd=0)), ("B16", "B22")),
    "confidences with D-Cut": (world(mix(4), step=StepSpec(dcut_enabled=True)), ("B18", "B19", "D4")),
    "confidences with a draft-stop logprob": (world(mix(4), step=StepSpec(draft_stop_logprob=-1.0)), ("B18",)),
    "group returns None (ladder above the batched drafter)": (
        world(mix(3), model=ModelSpec(max_batched_drafts=2), step=StepSpec(ladder_nd=3)),
        ("B20", "B22"),
    ),
    "meta stride overflow": (
        world(tuple(replace(s, extra_draft_blocks=4) for s in mix(3)), model=ModelSpec(meta_stride=4)),
        ("B21", "B25", "B26"),
    ),
    "speculation backed off and re-probing": (
        world(tuple(replace(s, spec=k) for s, k in zip(mix(3), ("on", "backed_off", "reprobe"), strict=True))),
        ("B12",),
    ),
    "stash too small": (world(mix(3), model=ModelSpec(stash_capacity=2)), ("B13", "D1")),
    "decode_batch fails": (world(mix(3), faults=(FaultSpec("decode_batch", 0, "err"),)), ("B3", "D2")),
    "argmax_batch fails": (world(GREEDY4, faults=(FaultSpec("argmax_batch", 0, "err"),)), ("B7",)),
    "NaN logits row": (world(GREEDY4, faults=(FaultSpec("decode_batch", 0, "nan_row", 1),)), ("B9",)),
    "stash fails": (world(mix(3), faults=(FaultSpec("stash_verify_hidden_rows", 0, "err"),)), ("B13", "D1")),
    "group propose fails": (world(mix(3), faults=(FaultSpec("run_mtp_propose_batched", 0, "err"),)), ("B21",)),
    "group propose returns None": (world(mix(3), faults=(FaultSpec("run_mtp_propose_batched", 0, "none"),)), ("B20",)),
    "group member gets no drafts": (
        world(mix(3), faults=(FaultSpec("run_mtp_propose_batched", 0, "empty", 1),)),
        ("B19",),
    ),
    "save from stash fails": (
        world(mix(3), model=ModelSpec(group_cap=1), faults=(FaultSpec("save_hidden_for_mtp_from_stash", 1, "err"),)),
        ("B22", "D1"),
    ),
    "fallback propose fails and returns empty": (
        world(
            mix(3),
            model=ModelSpec(group_cap=1),
            faults=(FaultSpec("run_mtp_propose_multi", 0, "err"), FaultSpec("run_mtp_propose_multi", 1, "empty")),
        ),
        ("B22",),
    ),
    "checkpoint fails": (world(mix(3), faults=(FaultSpec("start_checkpoint_async", 1, "err"),)), ("B23",)),
    "once-per-process logs already used": (
        world(
            GREEDY4,
            step=StepSpec(
                seen_log_keys=(
                    "log:mtp_batched_bootstrap",
                    "log:mtp_bootstrap_batched_argmax",
                    "log:dflash_batch_propose_gate",
                )
            ),
        ),
        ("B24",),
    ),
    "near max_seq_len and block boundaries": (
        world(tuple(replace(s, cache_len=c) for s, c in zip(mix(4), (15, 16, 31, 126), strict=True))),
        ("B2", "B17"),
    ),
    "float32": (world(MIXED, model=ModelSpec(dtype="float32")), ("B2", "B19")),
}


def run_case(run: RunConfig, spec: WorldSpec) -> SideBySide:
    sbs = run_side_by_side(on_run_device(run, spec), run.impl, run.replays)
    for name, check in (("equivalence", check_equivalence), ("calls", check_calls), ("logs", check_logs)):
        found = check(sbs)
        assert not found, format_report(f"{name}", sbs, found)
    return sbs


@pytest.mark.parametrize("name", list(CASES))
def test_batched_step_matches_reference(run: RunConfig, name: str) -> None:
    run_case(run, CASES[name][0])


def test_every_batched_behaviour_has_a_case() -> None:
    named = {i for _, ids in CASES.values() for i in ids}
    missing = [f"B{i}" for i in range(1, 27) if f"B{i}" not in named]
    assert not missing, f"no hand-built case names {missing}"


def ops(sbs: SideBySide) -> list[str]:
    return [c.op for c in sbs.impl.model.calls]


def test_greedy_mix_takes_the_batched_paths(run: RunConfig) -> None:
    sbs = run_case(run, CASES["greedy rows, batched argmax"][0])
    assert ops(sbs).count("argmax_batch") == 1 and ops(sbs).count("run_mtp_propose_batched") == 1
    assert all(a.pending_drafts for a in sbs.impl.world.active)


def test_stride_overflow_logs_debug_and_leaves_no_drafts(run: RunConfig) -> None:
    sbs = run_case(run, CASES["meta stride overflow"][0])
    assert any(r.level == "DEBUG" and "exceeds meta stride" in r.message for r in sbs.impl.logs)
    assert not any(a.pending_drafts for a in sbs.impl.world.active)


def test_decode_batch_failure_finishes_every_row_and_calls_nothing_else(run: RunConfig) -> None:
    sbs = run_case(run, CASES["decode_batch fails"][0])
    assert ops(sbs) == ["decode_batch"]
    assert all(a.finished and not a.pending_drafts for a in sbs.impl.world.active)
