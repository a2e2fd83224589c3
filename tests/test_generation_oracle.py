"""The replay oracle over whole generations: which near-ties it forces, which it refuses, and the
top-logprob ids it lets differ."""

from __future__ import annotations

import torch

from properties.generations.oracle import Taken, divergences, explain_token, top_ids_explained
from properties.generations.spec import GenerationSpec
from properties.tolerance import Tolerance
from properties.worlds.specs import ModelSpec
from reference.decisions import DecisionKey, DecisionLog, decide
from reference.logprobs import extract_single_logprobs
from reference.request import Request
from reference.sched_ctx import LogitsContext

SPEC = GenerationSpec(ModelSpec(dtype="bfloat16", numerics="fast"))
REQ = Request(prompt=(5,), max_tokens=4)
RTOL = Tolerance("fast", "bfloat16").rtol


def taken(row: torch.Tensor, sid: int = 0, pos: int = 0) -> Taken:
    log = DecisionLog(keep_scores=True)
    with log:
        decide(DecisionKey(sid, pos, "token"), row)
    return Taken(row, log.records)


def near_tie() -> tuple[torch.Tensor, torch.Tensor]:
    ref = torch.zeros(16, dtype=torch.bfloat16)
    ref[3], ref[7] = 4.0, 3.984375  # one bf16 step apart at 4
    impl = ref.clone()
    impl[7] = 4.0  # the implementation's kernel rounded the two the other way
    impl[3] = 3.984375
    return ref, impl


def explain_one(d, choice, ref, impl):
    return explain_token(SPEC, REQ, LogitsContext(), d, choice, ref, impl)


def test_a_tie_flipped_by_one_rounding_step_is_forced() -> None:
    ref, impl = near_tie()
    forced, refused = divergences({(0, 0): taken(ref)}, {(0, 0): taken(impl)}, explain_one)
    assert refused == [] and len(forced) == 1
    f = forced[0]
    assert (f.ref_choice, f.impl_choice) == (3, 7) and f.ref_margin <= f.bound


def test_a_decision_rounding_does_not_explain_is_refused() -> None:
    ref = torch.zeros(16, dtype=torch.bfloat16)
    ref[3] = 4.0
    impl = ref.clone()
    impl[7] = 8.0  # far beyond the rounding of a row whose largest logit is 4 to 8
    forced, refused = divergences({(0, 0): taken(ref)}, {(0, 0): taken(impl)}, explain_one)
    assert forced == [] and len(refused) == 1 and "beyond rounding" in refused[0]


def test_equal_decisions_force_nothing() -> None:
    ref, _ = near_tie()
    assert divergences({(0, 0): taken(ref)}, {(0, 0): taken(ref.clone())}, explain_one) == ([], [])


def test_top_logprob_ids_may_swap_only_at_a_near_tie() -> None:
    ref, impl = near_tie()
    model = type("M", (), {"vocab_size": lambda self: 16})()
    a, b = extract_single_logprobs(model, ref, 3, 2), extract_single_logprobs(model, impl, 3, 2)
    assert [i for i, _ in a.top] != [i for i, _ in b.top]
    assert top_ids_explained(a, b, ref, impl, RTOL) is None
    far = impl.clone()
    far[0] = 6.0
    c = extract_single_logprobs(model, far, 3, 2)
    assert top_ids_explained(a, c, ref, far, RTOL) is not None
