"""Whole generations on hand-built request mixes: every request's tokens, logprobs and finish
reason equal its plain decoding alone, whether the bootstrap is the per-sequence loop or the
dispatch (batched when the gate holds), with slots reused, aborts and a reasoning floor."""

from __future__ import annotations

import pytest
import torch

from batched.batched_model import BatchedMtpModel
from batched.dispatch import step_mtp_bootstrap
from reference.engine import Engine, abort, drain, engine_step, submit
from reference.grammar import EBNF_LIST, JSON_PERSON, REGEX_EMAIL
from reference.model.config import ModelConfig
from reference.request import Request
from reference.sampling_params import SamplingParams
from reference.sched_ctx import LogitsContext, SchedCtx, Watchdog
from reference.solo import solo_decode
from reference.step import step_mtp_bootstrap_per_seq
from reference.vocab import REASONING_END_ID, TOOL_CALL_END_ID

CFG = ModelConfig(
    vocab_size=512, hidden=32, n_heads=2, max_seq_len=64, block_size=4, num_blocks=80, num_draft_blocks=80,
    num_slots=3, num_ssm_slots=3, stash_capacity=8, mtp_propose_batch_max=2,
)  # fmt: skip
SCRATCH = ("hidden_states", "stash", "mtp_hidden_in")
BOOTSTRAPS = {"per-seq": step_mtp_bootstrap_per_seq, "dispatch": step_mtp_bootstrap}
MIX = (
    Request((5, 6, 7, 8, 9, 10, 11), 20, seed=1),
    Request((12,), 14, seed=2, top_logprobs=2, sampling=SamplingParams(temperature=1.0, top_k=40)),
    Request(
        (13, 14, 15),
        24,
        seed=3,
        sampling=SamplingParams(temperature=0.7, top_p=0.9, repetition_penalty=1.3, frequency_penalty=0.4),
    ),
    Request((20, 21, 22, 23, 24), 30, grammar=JSON_PERSON, seed=4, ssm=False, sampling=SamplingParams(temperature=1.0)),
    Request((25,), 20, grammar=REGEX_EMAIL, eos_ids=(), seed=5),
    Request((30, 31, 32, 33, 34, 35), 12, min_tokens=6, seed=6, ssm=False, sampling=SamplingParams(temperature=5.0)),
    Request((36, 37), 25, grammar=EBNF_LIST, seed=7, top_logprobs=0, sampling=SamplingParams(temperature=0.5)),
    Request(
        (38, 39, 40),
        16,
        tool_call_end_token=TOOL_CALL_END_ID,
        seed=8,
        sampling=SamplingParams(temperature=1.0, presence_penalty=0.8),
    ),
    Request(
        (41, 42),
        16,
        reasoning_end_token=REASONING_END_ID,
        min_tokens=2,
        seed=9,
        sampling=SamplingParams(temperature=1.0),
    ),
)


@pytest.fixture(scope="module")
def base() -> BatchedMtpModel:
    return BatchedMtpModel(CFG)


def engine(base: BatchedMtpModel, ladder: int = 3) -> Engine:
    model = base.clone()
    model.randomize_caches(torch.Generator().manual_seed(3))  # nothing of it may be read
    sched = SchedCtx(watchdog=Watchdog(min_reasoning_floor=4), spec_backoff_steps=1)
    return Engine.create(model, sched, LogitsContext(), ladder)


@pytest.mark.parametrize("ladder", [3, 1])
@pytest.mark.parametrize("name", list(BOOTSTRAPS))
def test_every_request_equals_its_solo_decode(base: BatchedMtpModel, name: str, ladder: int) -> None:
    eng = engine(base, ladder)
    ids = [submit(eng, r) for r in MIX]
    steps = drain(eng, BOOTSTRAPS[name], 400)
    assert eng.resources.slots.free_count() == CFG.num_slots and eng.resources.blocks.free_count() == CFG.num_blocks
    for sid, req in zip(ids, MIX, strict=True):
        want = solo_decode(CFG, base.weights, req, eng.sched, eng.verify_ctx)
        got = eng.finished[sid]
        assert (got.tokens, got.logprobs, got.finish_reason) == (want.tokens, want.logprobs, want.finish_reason), sid
    reasons = {eng.finished[sid].finish_reason for sid in ids}
    assert len(reasons) == 3 and steps < sum(r.max_tokens for r in MIX), "stop, length and grammar; slots reused"


def test_both_bootstraps_leave_the_same_world_after_every_step(base: BatchedMtpModel) -> None:
    a, b = engine(base), engine(base)
    for r in MIX:
        submit(a, r)
        submit(b, r)
    batched = 0
    while a.active or a.waiting:
        ra, rb = engine_step(a, step_mtp_bootstrap), engine_step(b, step_mtp_bootstrap_per_seq)
        assert ra == rb
        assert a.active == b.active
        assert [d for d in a.model.diff_state(b.model) if d not in SCRATCH] == []
        batched += len(ra.bootstrapped) >= 2
    assert batched >= 5 and a.finished == b.finished


def test_an_aborted_request_keeps_a_prefix_of_its_solo_decode(base: BatchedMtpModel) -> None:
    eng = engine(base)
    ids = [submit(eng, r) for r in MIX[:4]]
    for _ in range(5):
        engine_step(eng, step_mtp_bootstrap)
    assert abort(eng, ids[1]) and abort(eng, ids[3])
    drain(eng, step_mtp_bootstrap, 200)
    for sid in ids:
        want = solo_decode(CFG, base.weights, MIX[sid], eng.sched, eng.verify_ctx)
        got = eng.finished[sid]
        if got.aborted:
            assert got.tokens == want.tokens[: len(got.tokens)] and got.finish_reason is None
        else:
            assert got.tokens == want.tokens
