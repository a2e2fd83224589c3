"""`ProposeCall`: the inputs of one batched propose, as its internal steps pass them along."""

from __future__ import annotations

from dataclasses import dataclass

from reference.state import SequenceState


@dataclass(slots=True, frozen=True)
class ProposeCall:
    """The member inputs of one `run_mtp_propose_batched(tokens, positions, stash_idx, k, seqs, ...)`
    call: the very objects the caller passed, neither copied nor checked (its checks take one of these),
    so an identity test on a field is one on the caller's list. Made once the call is past its
    `k > max_batched_drafts` early return; `rank` and `conf_out` are passed on separately. The propose
    launched ahead (`batched.vector.propose_ahead`) makes one of its own for its pass and checks, with
    placeholder tokens (the pass reads them from the device)."""

    tokens: list[int]  # each member's input token
    positions: list[int]  # each member's drafter position
    stash_idx: list[int]  # each member's stash row (its drafter input hidden state)
    k: int  # drafts per member
    seqs: list[SequenceState]  # the members
