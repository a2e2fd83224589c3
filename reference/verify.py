"""The verify step of one sequence: check its pending drafts against the target model.

With last token x at position S and drafts d_0..d_{k-1}, one pass of the target model decodes
[x, d_0, .., d_{k-1}] at positions S..S+k; row j of its logits is what plain decoding would see for
the output position after x, d_0..d_{j-1}. Position by position the target token is sampled from
row j exactly as plain decoding samples it there (penalties over the history including the drafts
accepted so far, EOS hold, the grammar advanced along them, temperature, cuts and the counter-based
noise of that output position) and emitted; the run stops at the first target token that differs
from its draft (the correction), after row k (the bonus token), or when the sequence finishes. With
the noise a function of the output position, the emitted tokens are the ones plain decoding emits:
speculation never changes a request's output, only how many steps it takes.

Then the sequence is rolled back to the tokens kept (`reference.rollback`) and the outcome feeds
adaptive speculation. A finished sequence is not rolled back: it is released after the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reference.adaptive_spec import record_verify_outcome
from reference.model.model import TinyMtpModel
from reference.plain_token import sample_and_emit
from reference.rollback import roll_back
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq


@dataclass(slots=True, frozen=True)
class VerifyOutcome:
    """What one verify did: drafts proposed and accepted, tokens emitted, and where the rollback's
    replay started (the checkpoint's position; None when the sequence finished and was not rolled
    back)."""

    seq_id: int
    proposed: int
    accepted: int
    emitted: int
    replayed_from: int | None


def verify_seq(
    model: TinyMtpModel, a: ActiveSeq, prompt: Sequence[int], sched: SchedCtx, verify_ctx: LogitsContext
) -> VerifyOutcome:
    """Verify `a`'s pending drafts (see the module docstring); `prompt` is its request's prompt (the
    rollback replays tokens by position: the prompt, then the output). Clears the pending drafts and
    their confidences. A sampling failure finishes the sequence without a reason, as in plain
    decoding. Raises ValueError for a sequence that is finished, has no drafts or whose length is
    not prompt + output - 1; a failing model call raises (nothing here is expected to fail)."""
    drafts = list(a.pending_drafts)
    start = a.seq.seq_len
    if a.finished or not drafts:
        raise ValueError(f"verify of sequence {a.seq_id}: finished or no pending drafts")
    if start != len(prompt) + len(a.output_tokens) - 1:
        raise ValueError(
            f"verify of sequence {a.seq_id}: seq_len {start} is not prompt {len(prompt)} + output "
            f"{len(a.output_tokens)} - 1"
        )
    logits = model.decode_run(a.seq, [a.last_token, *drafts])  # [k + 1, vocab]
    a.pending_drafts, a.pending_draft_conf = [], []
    k = len(drafts)
    emitted = accepted = 0
    for j in range(k + 1):
        tok = sample_and_emit(model, a, logits[j], sched, verify_ctx, "verify")
        if tok is None:
            break
        emitted += 1
        if j == k or tok != drafts[j]:
            break
        accepted += 1
        if a.finished:
            break
    record_verify_outcome(a, accepted, k, sched)
    if a.finished:
        return VerifyOutcome(a.seq_id, k, accepted, emitted, None)
    a.last_token = a.output_tokens[-1]
    start_of_replay = roll_back(model, a.seq, [*prompt, *a.output_tokens], start, start + emitted)
    return VerifyOutcome(a.seq_id, k, accepted, emitted, start_of_replay)
