"""The fully batched step (`batched.vector.step`) on the hand-built mixes of
tests/test_batched_step_mixes.py: in exact numerics it leaves every sequence, cache, checkpoint and
drafter state bit-equal to the per-sequence reference, makes the calls the oracle expects under its
own call contract (no per-row `argmax_on_device`) and writes the seed's logs; its batched
checkpoints (`VectorMtpModel`) leave the same world as one copy per row."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import torch

from batched.step import select_rows, step_mtp_bootstrap_batched
from batched.vector.model import VectorMtpModel
from batched.vector.sample import row_classes, sample_all
from batched.vector.step import PER_ROW_FAST_GREEDY_CALLS, step_mtp_bootstrap_vectorized
from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.checks.logs import check_logs
from properties.failures.report import format_report
from properties.impl import load
from properties.sides.harness import run_side_by_side
from properties.sides.side_by_side import SideBySide
from properties.worlds.specs import FaultSpec, ModelSpec, StepSpec
from properties.worlds.world import World, build_world
from reference.errors import ModelError
from reference.model.kernels import bits_equal
from tests.test_batched_step_mixes import CASES, GREEDY4, MIXED, mix, world

FAST_GREEDY_CHECK = "fast-greedy"  # the call check of the per-row fast-greedy argmax (the seed's contract)


def vector_calls(sbs: SideBySide) -> list:
    """The call check under the fully batched step's contract: every expectation of the seed's but the
    per-row fast-greedy argmax count, which is zero here."""
    found = [m for m in check_calls(sbs) if FAST_GREEDY_CHECK not in m.field]
    per_row = [c for c in sbs.impl.model.calls if c.op == "argmax_on_device"]
    assert not per_row, f"{len(per_row)} argmax_on_device calls: the one-pass sampler makes none"
    return found


def run_vector(spec) -> SideBySide:
    sbs = run_side_by_side(spec, load("vector"))
    for name, check in (("equivalence", check_equivalence), ("calls", vector_calls), ("logs", check_logs)):
        found = check(sbs)
        assert not found, format_report(name, sbs, found)
    return sbs


def test_the_contract_is_declared() -> None:
    assert PER_ROW_FAST_GREEDY_CALLS is False


@pytest.mark.parametrize("name", list(CASES))
def test_vector_step_matches_reference(name: str) -> None:
    run_vector(CASES[name][0])


EXTRA = {
    "sampled and penalized rows only (no batched argmax)": world(
        tuple(replace(s, temperature=1.0, top_k=5, top_p=0.9, repetition=1.3, n_out=5, echo=(1,)) for s in mix(4))
    ),
    "greedy rows the batched argmax does not serve (lever off)": world(mix(4), step=StepSpec(mtp_boot_argmax=False)),
    "fast greedy off: greedy rows through the sampling pass": world(mix(3), step=StepSpec(fast_greedy_grammar=False)),
    "every kind of row with D-Cut and a reasoning floor": world(
        MIXED, step=StepSpec(dcut_enabled=True, min_reasoning_floor=12)
    ),
    "+inf row among greedy rows": world(GREEDY4, faults=(FaultSpec("decode_batch", 0, "posinf_row", 2),)),
    "all -inf row among sampled rows": world(
        mix(3, temperature=1.0), faults=(FaultSpec("decode_batch", 0, "neginf_row", 1),)
    ),
    "grammar rows only": world(
        tuple(
            replace(s, grammar=g, n_out=2, top_logprobs=2)
            for s, g in zip(mix(3), ("json", "regex", "ebnf"), strict=True)
        )
    ),
    "top logprobs on batched-argmax rows": world(
        tuple(replace(s, top_logprobs=k) for s, k in zip(GREEDY4, (0, 1, 5, 600), strict=True))
    ),
}


@pytest.mark.parametrize("name", list(EXTRA))
def test_vector_step_matches_reference_on_more_mixes(name: str) -> None:
    run_vector(EXTRA[name])


def test_sampling_refusals_finish_the_row_and_log_it() -> None:
    sbs = run_vector(world(GREEDY4, faults=(FaultSpec("decode_batch", 0, "nan_row", 1),)))
    errors = [r.message for r in sbs.impl.logs if r.message.startswith("batched bootstrap sample error: ")]
    assert errors == ["batched bootstrap sample error: row has NaN logits"]
    assert sum(a.finished and a.finish_reason is None for a in sbs.impl.world.active) == 1


def world_pair(spec) -> tuple[World, World]:
    w = build_world(spec)
    return w, w.clone()


def assert_same_world(a: World, b: World) -> None:
    assert a.model.diff_state(b.model) == [], a.model.diff_state(b.model)
    for x, y in zip(a.active, b.active, strict=True):
        assert (x.output_tokens, x.output_logprobs, x.pending_drafts, x.finished, x.last_token, x.adaptive_spec) == (
            y.output_tokens,
            y.output_logprobs,
            y.pending_drafts,
            y.finished,
            y.last_token,
            y.adaptive_spec,
        )


@pytest.mark.parametrize("name", ["every kind of row", "checkpoint fails", "greedy rows, batched argmax"])
def test_batched_checkpoints_leave_the_world_one_copy_per_row_leaves(name: str) -> None:
    """`VectorMtpModel.deferred_checkpoints` copies every checkpoint in one pass: the same caches,
    checkpoints and sequences as the literal step on a plain `BatchedMtpModel`."""
    spec = replace(CASES[name][0], faults=())
    plain, vec = world_pair(spec)
    vec.model = VectorMtpModel.from_model(vec.model)
    step_mtp_bootstrap_batched(plain.model, plain.active, plain.sched, plain.idxs, plain.ladder_nd, plain.verify_ctx)
    step_mtp_bootstrap_vectorized(vec.model, vec.active, vec.sched, vec.idxs, vec.ladder_nd, vec.verify_ctx)
    assert_same_world(plain, vec)
    assert vec.model.ssm.ckpt_pos == plain.model.ssm.ckpt_pos


def test_deferred_checkpoint_refuses_a_bad_slot_and_copies_the_rest_on_exit() -> None:
    w = build_world(world(mix(3)))
    model = VectorMtpModel.from_model(w.model)
    seqs = [a.seq for a in w.active]
    model.ssm.state[seqs[0].ssm_slot] += 1.0  # a state that differs from its checkpoint
    bad = replace(seqs[1], ssm_slot=10_000)
    with pytest.raises(RuntimeError), model.deferred_checkpoints():
        model.start_checkpoint_async(seqs[0])
        with pytest.raises(ModelError, match="start_checkpoint_async"):
            model.start_checkpoint_async(bad)
        assert not bits_equal(model.ssm.ckpt[seqs[0].ssm_slot], model.ssm.state[seqs[0].ssm_slot])  # pending
        raise RuntimeError("leave the scope by an exception")
    assert bits_equal(model.ssm.ckpt[seqs[0].ssm_slot], model.ssm.state[seqs[0].ssm_slot])
    assert model.ssm.ckpt_pos[seqs[0].slot_idx] == seqs[0].seq_len
    model.start_checkpoint_async(seqs[2])  # outside the scope: copied at once
    assert bits_equal(model.ssm.ckpt[seqs[2].ssm_slot], model.ssm.state[seqs[2].ssm_slot])


def test_negative_logprobs_count_raises_at_its_row_as_the_literal_step() -> None:
    seqs = tuple(replace(s, top_logprobs=-1 if i == 2 else None) for i, s in enumerate(mix(4)))
    spec = world(seqs)
    lit, vec = world_pair(spec)
    for w, step in ((lit, step_mtp_bootstrap_batched), (vec, step_mtp_bootstrap_vectorized)):
        with pytest.raises(ValueError, match="top logprobs count -1"):
            step(w.model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)
    assert_same_world(lit, vec)


def test_rows_sample_the_same_tokens_in_any_company() -> None:
    """A sampled row's token depends on its own row, parameters and noise only: alone or with others."""
    seqs = tuple(replace(s, temperature=1.0, top_k=40, top_p=0.9) for s in mix(4))
    together = build_world(world(seqs))
    w = together
    step_mtp_bootstrap_vectorized(w.model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)
    for i in range(4):
        alone = build_world(world(seqs, boot=(i,) if i else (0,)))
        step_mtp_bootstrap_vectorized(
            alone.model, alone.active, alone.sched, alone.idxs, alone.ladder_nd, alone.verify_ctx
        )
        assert alone.active[i].output_tokens == together.active[i].output_tokens


def test_the_one_pass_sampler_reads_the_device_once() -> None:
    """One host read for every row's token, refusal and logprobs: counted as `.tolist()` calls."""
    seqs = (*MIXED[:4], replace(MIXED[5], top_logprobs=2))
    w = build_world(world(seqs, step=StepSpec(mtp_boot_argmax=False)))
    calls = 0
    real = torch.Tensor.tolist

    def counting(t: torch.Tensor):
        nonlocal calls
        calls += 1
        return real(t)

    refs = select_rows(w.active, w.idxs)
    logits = w.model.decode_batch([a.last_token for a in refs], [a.seq for a in refs])
    torch.Tensor.tolist = counting  # type: ignore[method-assign]
    try:
        classes = row_classes(refs, w.sched.watchdog.min_reasoning_floor, w.sched, w.verify_ctx)
        results = sample_all(w.model, logits, refs, w.sched, w.verify_ctx, classes)
    finally:
        torch.Tensor.tolist = real  # type: ignore[method-assign]
    assert len(results) == len(seqs) and all(r.error is None for r in results)
    assert calls == 1, f"{calls} device reads"


def last_row(**changes: object) -> tuple:
    """GREEDY4 with its last sequence changed."""
    return (*GREEDY4[:3], replace(GREEDY4[3], **changes))  # type: ignore[arg-type]


AHEAD_CASES = {  # mix -> (proposes launched ahead, taken): launched when the step will likely make the group's
    # call, taken only when it is that call
    "every row proposes the whole ladder in one group": (world(GREEDY4), 1, 1),
    "every row proposes, a row sampled with penalties": (
        world(last_row(temperature=0.8, top_k=5, repetition=1.3)),
        1,
        1,
    ),
    "more rows than the group cap": (world(GREEDY4, model=ModelSpec(group_cap=2)), 0, 0),
    "a row with a grammar (proposes per sequence)": (world(last_row(grammar="json")), 0, 0),
    "a row too near its max tokens for the ladder": (world(last_row(max_tokens_left=2)), 0, 0),
    "a row backed off past this step (does not propose)": (world(last_row(spec="backed_off")), 0, 0),
    "a row whose backoff runs out this step (re-probes)": (world(last_row(spec="reprobe")), 1, 1),
    "a row that stops at its token (launched, not taken, undone)": (world(last_row(stop_ids=tuple(range(512)))), 1, 0),
}


@pytest.mark.parametrize("name", list(AHEAD_CASES))
def test_the_step_launches_its_group_propose_ahead(name: str) -> None:
    spec, launched, taken = AHEAD_CASES[name]
    sbs = run_vector(spec)
    model = sbs.impl.model
    passes = model._ahead_passes.passes.values() if model._ahead_passes is not None else ()
    assert (sum(p.calls for p in passes), model.taken_ahead) == (launched, taken)


@pytest.mark.parametrize(
    ("name", "switch", "in_decode"),
    [
        ("every row proposes the whole ladder in one group", True, True),
        ("every row proposes the whole ladder in one group", False, False),
        ("every row proposes, a row sampled with penalties", True, False),
    ],
)
def test_an_all_greedy_group_has_the_decode_launch_its_propose(
    name: str, switch: bool, in_decode: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When every row takes the batched argmax, the decode launches the propose from its own pass's
    argmax; a sampled row's token exists only after the sampling pass, so then the sampling launches it,
    as it does for an all-greedy group when the model's `launch_in_decode` is off."""
    monkeypatch.setattr(VectorMtpModel, "launch_in_decode", switch)
    inside: list[bool] = []
    real_decode, real_launch = VectorMtpModel.decode_batch, VectorMtpModel.propose_ahead
    decoding = [False]

    def decode_batch(self: VectorMtpModel, *args: Any, **kwargs: Any) -> Any:
        decoding[0] = True
        try:
            return real_decode(self, *args, **kwargs)
        finally:
            decoding[0] = False

    def propose_ahead(self: VectorMtpModel, *args: Any, **kwargs: Any) -> None:
        inside.append(decoding[0])
        real_launch(self, *args, **kwargs)

    monkeypatch.setattr(VectorMtpModel, "decode_batch", decode_batch)
    monkeypatch.setattr(VectorMtpModel, "propose_ahead", propose_ahead)
    sbs = run_vector(AHEAD_CASES[name][0])
    assert inside == [in_decode] and sbs.impl.model.taken_ahead == 1
