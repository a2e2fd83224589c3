"""Rolling a sequence back to the tokens a verify kept: KV length, SSM state, drafter entries.

The verify's target pass decoded every draft; only a prefix of them is kept. The main KV past the
kept length is stale but never read (attention reads positions below `seq_len`, and each position
is written before it is read). The SSM state ran past the kept tokens and cannot be rewound, so it
is restored from the checkpoint and the kept tokens after the checkpoint are decoded again. The
checkpoint is normally the one the bootstrap took at the verify's first position; after a failed
checkpoint it is an older one of the same request, and the replay starts there.

The drafter cache must hold, before a propose at position P, the entry of every position p < P for
(main hidden of p - 1, token p): that is what the drafter was trained to read. A propose writes its
first position with a main hidden and the rest with its own speculative hidden and drafts, which a
verify may reject. So the replay, after decoding a position p the verify decoded, writes the drafter
entry of p + 1 from that decode's hidden and the token at p + 1, up to the position of the next
token to decode. Past it the drafter holds stale speculative entries, which the next propose
overwrites before it reads them (a propose writes each position before attending over it). One
hole stays: a bootstrap that proposes nothing (speculation backed off, a failed save or propose)
writes no entry for its token, and no later step has that main hidden any more; the position keeps
a blank entry (drafter blocks are cleared when allocated) or an earlier speculative entry of the
same request. Drafts may read it; outputs never depend on drafts.
"""

from __future__ import annotations

from collections.abc import Sequence

from reference.model.model import TinyMtpModel
from reference.state import SequenceState


def roll_back(model: TinyMtpModel, seq: SequenceState, tokens: Sequence[int], start: int, keep: int) -> int:
    """Leave `seq` as if exactly `tokens[:keep]` had been decoded, after a verify decoded positions
    `start`.. of it: restore its checkpoint (SSM state and seq_len = the checkpoint's position c),
    decode `tokens[c:keep]` one at a time, and after each decode of a position p >= `start` write
    the drafter entry of p + 1 (with `tokens[p + 1]`, so `tokens[keep]`, the next token to decode,
    must exist). Positions before `start` are decoded again only to rebuild the SSM state: which
    drafter entries are written depends on the verify, not on where the checkpoint happens to be.
    Returns c. A checkpoint past `start` is a ValueError (the sequence is left at its checkpoint, a
    consistent state); model errors propagate."""
    if len(tokens) <= keep or not start < keep:
        raise ValueError(f"roll back to {keep} tokens after a verify from {start} of {len(tokens)} tokens")
    model.restore_checkpoint(seq)
    ckpt = seq.seq_len
    if ckpt > start:
        raise ValueError(f"sequence slot {seq.slot_idx}: checkpoint at {ckpt} is past the verify's start {start}")
    for p in range(ckpt, keep):
        model.decode(tokens[p], seq)
        if p >= start:
            model.save_hidden_for_mtp(seq)
            model.run_mtp_propose_multi(tokens[p + 1], p + 1, 1, seq)
    return ckpt
