"""The verify step on hand-set drafts: accept all (bonus token), none (correction), some; finishing
inside the accepted run by length, stop id, EOS and grammar; the rollback leaving exactly the state
of decoding the kept tokens one by one; a stale checkpoint costing a longer replay, nothing else."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from properties.sides.faults import FaultyModel
from properties.worlds.fault_kinds import SeqFault
from reference.engine import Engine, engine_step, submit
from reference.grammar import REGEX_EMAIL
from reference.model.config import ModelConfig
from reference.model.kernels import bits_equal
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import BlockAllocator
from reference.request import Request
from reference.sampling_params import SamplingParams
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.solo import SoloResult, solo_decode
from reference.state import FinishReason, SequenceState
from reference.step import step_mtp_bootstrap_per_seq
from reference.verify import VerifyOutcome

CFG = ModelConfig(
    vocab_size=512, max_seq_len=48, block_size=4, num_blocks=36, num_draft_blocks=36, num_slots=3, num_ssm_slots=3
)
PROMPT = (40, 41, 42, 43, 44)
GREEDY = Request(PROMPT, 12, seed=1)
SAMPLED = Request(
    PROMPT,
    12,
    top_logprobs=3,
    seed=7,
    sampling=SamplingParams(temperature=1.0, top_k=40, top_p=0.9, repetition_penalty=1.3, presence_penalty=0.5),
)


@pytest.fixture(scope="module")
def base() -> TinyMtpModel:
    return TinyMtpModel(CFG)


def solo(base: TinyMtpModel, req: Request) -> SoloResult:
    return solo_decode(CFG, base.weights, req, SchedCtx(), LogitsContext())


def started(base: TinyMtpModel, req: Request, bootstrap=step_mtp_bootstrap_per_seq) -> Engine:
    """An engine (caches full of garbage) that admitted `req` and bootstrapped it once."""
    model = base.clone()
    model.randomize_caches(torch.Generator().manual_seed(5))
    eng = Engine.create(model, SchedCtx(), LogitsContext(), 3)
    submit(eng, req)
    engine_step(eng, bootstrap)
    assert eng.active[0].pending_drafts, "the bootstrap proposed"
    return eng


def verify_with(eng: Engine, drafts: list[int]) -> VerifyOutcome:
    eng.active[0].pending_drafts = list(drafts)
    rec = engine_step(eng, step_mtp_bootstrap_per_seq)
    assert rec.bootstrapped == [] and len(rec.verified) == 1
    return rec.verified[0]


def finish(eng: Engine, seq_id: int = 0) -> None:
    """Run to the end, every draft replaced by the solo continuation (so verifies accept them)."""
    want = solo_for[seq_id]
    while seq_id not in eng.finished:
        for a in eng.active:
            if a.pending_drafts:
                n = len(a.output_tokens)
                a.pending_drafts = list(want.tokens[n : n + len(a.pending_drafts)])
        engine_step(eng, step_mtp_bootstrap_per_seq)


solo_for: dict[int, SoloResult] = {}


def same_as_solo(eng: Engine, want: SoloResult, seq_id: int = 0) -> None:
    got = eng.finished[seq_id]
    assert got.tokens == want.tokens and got.logprobs == want.logprobs and got.finish_reason == want.finish_reason


def wrong(tok: int) -> int:
    return 3 + (tok - 2) % (CFG.vocab_size - 3)  # another plain token


@pytest.mark.parametrize("req", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
@pytest.mark.parametrize(
    ("kind", "emitted", "accepted"), [("all", 4, 3), ("none", 1, 0), ("some", 2, 1)], ids=["all", "none", "some"]
)
def test_verify_emits_the_accepted_drafts_and_one_more(
    base: TinyMtpModel, req: Request, kind: str, emitted: int, accepted: int
) -> None:
    want = solo_for[0] = solo(base, req)
    s = want.tokens
    eng = started(base, req)
    a = eng.active[0]
    start = a.seq.seq_len
    drafts = {"all": list(s[1:4]), "none": [wrong(s[1]), s[2], s[3]], "some": [s[1], wrong(s[2]), s[3]]}[kind]
    out = verify_with(eng, drafts)
    assert (out.proposed, out.accepted, out.emitted) == (3, accepted, emitted)
    assert a.output_tokens == list(s[: 1 + emitted]) and a.output_logprobs == list(want.logprobs[: 1 + emitted])
    assert a.last_token == s[emitted] and a.seq.seq_len == start + emitted and a.pending_drafts == []
    assert out.replayed_from == start  # the bootstrap's checkpoint
    finish(eng)
    same_as_solo(eng, want)


@pytest.mark.parametrize("how", ["length", "stop", "eos"])
def test_finishing_inside_the_accepted_run(base: TinyMtpModel, how: str) -> None:
    s = solo(base, SAMPLED).tokens
    assert s[2] not in s[:2], "the sampled run repeats a token; pick another seed"
    req = {
        "length": replace(SAMPLED, max_tokens=3),
        "stop": replace(SAMPLED, stop_ids=(s[2],)),
        "eos": replace(SAMPLED, eos_ids=(s[2],)),
    }[how]
    want = solo(base, req)
    reason = FinishReason.LENGTH if how == "length" else FinishReason.STOP
    assert want.tokens == s[:3] and want.finish_reason is reason
    eng = started(base, req)
    out = verify_with(eng, list(s[1:3]))
    assert (out.accepted, out.emitted, out.replayed_from) == (2, 2, None)
    same_as_solo(eng, want)


def test_a_held_eos_is_not_accepted_as_a_finish(base: TinyMtpModel) -> None:
    s = solo(base, SAMPLED).tokens
    req = replace(SAMPLED, eos_ids=(s[2],), min_tokens=5)
    want = solo_for[0] = solo(base, req)
    assert s[2] not in want.tokens[:5]
    eng = started(base, req)
    verify_with(eng, [want.tokens[1], s[2], want.tokens[3]])  # the held EOS as a draft: rejected
    assert eng.active[0].output_tokens == list(want.tokens[:3])
    finish(eng)
    same_as_solo(eng, want)


def test_grammar_finishes_inside_the_accepted_run(base: TinyMtpModel) -> None:
    req = Request(PROMPT, 30, grammar=REGEX_EMAIL, eos_ids=(), seed=3, sampling=SamplingParams(temperature=1.0))
    want = solo_for[0] = solo(base, req)
    assert want.finish_reason is FinishReason.GRAMMAR
    eng = started(base, req)
    outcomes = []
    while 0 not in eng.finished:
        a = eng.active[0]
        if a.pending_drafts:
            n = len(a.output_tokens)
            assert len(a.pending_drafts) == 1  # a grammar sequence drafts one token
            a.pending_drafts = [want.tokens[n]]
        outcomes += engine_step(eng, step_mtp_bootstrap_per_seq).verified
    same_as_solo(eng, want)
    last = outcomes[-1]
    assert (last.accepted, last.replayed_from) == (1, None), "the final EOS was an accepted draft"


def plain_snapshot(base: TinyMtpModel, tokens: list[int], ssm_slot: int | None) -> tuple[dict, torch.Tensor]:
    """The state of decoding tokens[:-1] one by one on a fresh model, and the drafter entries of
    positions 0..len-1 for (main hidden of p - 1, token p)."""
    model = base.clone()
    n = len(tokens)
    table = BlockAllocator(CFG.num_blocks, CFG.block_size).alloc_for(n)
    seq = SequenceState(0, ssm_slot, 0, table, list(table))
    hidden = None
    for tok in tokens[:-1]:
        hidden = model.prefill(seq, [tok], hidden)[-1]
    main = model.snapshot(seq)
    model.prefill(seq, tokens[-1:], hidden)
    return main, model.snapshot(seq)["draft_kv_k"][:n]


@pytest.mark.parametrize("ssm", [True, False])
@pytest.mark.parametrize("kind", ["none", "some", "all"])
def test_rollback_leaves_the_state_of_decoding_the_kept_tokens(base: TinyMtpModel, ssm: bool, kind: str) -> None:
    req = replace(SAMPLED, ssm=ssm)
    s = solo(base, req).tokens
    eng = started(base, req)
    a = eng.active[0]
    verify_with(eng, {"all": list(s[1:4]), "none": [wrong(s[1])], "some": [s[1], s[2], wrong(s[3])]}[kind])
    tokens = [*PROMPT, *a.output_tokens]
    assert a.seq.seq_len == len(tokens) - 1
    main, drafter = plain_snapshot(base, tokens, a.seq.ssm_slot)
    got = eng.model.snapshot(a.seq)
    for key in ("kv_k", "kv_v", *(("ssm_state",) if ssm else ())):
        assert bits_equal(got[key], main[key]), key
    assert bits_equal(got["draft_kv_k"][: len(tokens)], drafter)


def test_a_stale_checkpoint_costs_a_longer_replay_and_changes_nothing(base: TinyMtpModel) -> None:
    def no_checkpoint(model, *args):
        faulty = FaultyModel(model, (), [SeqFault("start_checkpoint_async", 0, "err")])
        step_mtp_bootstrap_per_seq(faulty, *args)

    s = solo(base, GREEDY).tokens
    fresh, stale = started(base, GREEDY), started(base, GREEDY, no_checkpoint)
    outs = [verify_with(eng, [s[1], s[2], wrong(s[3])]) for eng in (fresh, stale)]
    assert outs[0].replayed_from == len(PROMPT) and outs[1].replayed_from == len(PROMPT) - 1  # admission's
    assert outs[0].emitted == outs[1].emitted == 3
    assert fresh.active[0] == stale.active[0]
    # Only the checkpoint itself differs (the verify takes none); the next bootstrap takes a new one.
    assert [d for d in fresh.model.diff_state(stale.model) if d not in ("hidden_states", "mtp_hidden_in")] == [
        "ssm.ckpt",
        "ckpt_pos",
    ]
    engine_step(fresh, step_mtp_bootstrap_per_seq)
    engine_step(stale, step_mtp_bootstrap_per_seq)
    assert fresh.active[0] == stale.active[0]
    assert [d for d in fresh.model.diff_state(stale.model) if d not in ("hidden_states", "mtp_hidden_in")] == []
