"""`BatchedMtpModel`: the batched operations of the bootstrap step on top of `TinyMtpModel`.

Each operation checks its preconditions on the host first (a violated one is a `ModelError` with the
operation's context and nothing changed), packs all per-row integers into one int64 tensor copied to
the device once, and then runs as one pass over the rows: no per-row loop on the device side, and no
host sync except where a result must reach the host (`argmax_batch`'s tokens; a propose's drafts,
confidences, and the finiteness check of its input rows, made before anything is written).

In exact numerics the passes use the per-sequence kernels on the same tile-padded shapes, so every
row's logits, drafts, confidences, cache writes and SSM states are bit-equal to the per-sequence
operations'. In fast numerics they run native batched kernels on the real row count.
"""

from __future__ import annotations

import torch

from batched.model_checks import check_decode_batch, check_propose_batched, check_stash
from batched.propose_call import ProposeCall
from reference.capture import capture_draft_rows
from reference.errors import ModelError
from reference.model.checks import check_rank
from reference.model.drafter import draft_span_blocks, drafter_rows
from reference.model.kernels import argmax_rows, softmax_confidence
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import RowMeta, pack_sections, padded_table, row_meta, row_sections
from reference.state import SequenceState

# argmax_batch's refusal codes: what a row holds that the per-row sampler refuses.
REFUSED_ROWS = {1: "NaN logits", 2: "a +inf logit", 3: "no finite logit"}


def argmax_verdicts(rows: torch.Tensor) -> torch.Tensor:
    """[2, n] for logits rows [n, V]: each row's argmax (ties to the lowest id) and its refusal code
    (REFUSED_ROWS, 0: none). A row the per-row sampler refuses has no argmax it would agree with."""
    nan = rows.isnan().any(dim=1)  # [n]
    posinf = rows.isposinf().any(dim=1)
    no_finite = ~rows.isfinite().any(dim=1)
    code = torch.where(nan, 1, torch.where(posinf, 2, torch.where(no_finite, 3, 0)))  # [n]
    return torch.stack([argmax_rows(rows), code])


class BatchedMtpModel(TinyMtpModel):
    """`TinyMtpModel` plus decode_batch, argmax_batch, the hidden stash and batched proposes."""

    # Envelope ----------------------------------------------------------------------------------

    def mtp_propose_batch_max(self) -> int:
        return self.cfg.mtp_propose_batch_max

    def propose_meta_stride(self) -> int:
        """Drafter block-table entries packed per sequence for a batched propose."""
        return self.meta_stride

    def can_batch_verify(self, ks: list[int]) -> bool:
        """A stash with room for len(ks) rows, no EP, no HSS, and every k in 1..max_drafts."""
        cfg = self.cfg
        return (
            self.stash is not None
            and cfg.stash_capacity >= len(ks)
            and not cfg.ep
            and not cfg.hss
            and all(1 <= k <= cfg.max_drafts for k in ks)
        )

    # Decode --------------------------------------------------------------------------------------

    def decode_batch(self, tokens: list[int], seqs: list[SequenceState], rank: int = 0) -> torch.Tensor:
        """Decode tokens[j] for seqs[j], all rows in one pass; rows must come sorted by SSM slot
        (slot_idx where a sequence has none) with no slot twice. Writes hidden_states rows 0..n-1,
        advances every seq_len and SSM slot. Returns logits [n, vocab]."""
        try:
            self._check_decode_batch(tokens, seqs, rank)
        except ModelError as e:
            raise e.context("decode_batch") from None
        return self._decode_rows(tokens, seqs)

    def _decode_rows(self, tokens: list[int], seqs: list[SequenceState]) -> torch.Tensor:
        """decode_batch's work after its checks."""
        cfg, n = self.cfg, len(seqs)
        pos = [s.seq_len for s in seqs]
        span = cfg.main_blocks_per_seq if self.nm.exact else -(-(max(pos) + 1) // cfg.block_size)
        with_slot = [j for j, s in enumerate(seqs) if s.ssm_slot is not None]
        views = pack_sections(
            [
                tokens,
                [0 if s.ssm_slot is None else s.ssm_slot for s in seqs],
                [int(s.ssm_slot is not None) for s in seqs],
                with_slot,
                [seqs[j].ssm_slot for j in with_slot],
                *row_sections(pos, [s.block_table for s in seqs], span, cfg.block_size),
            ],
            self.device,
        )
        tok, slot, has, rows_w, slots_w = views[:5]
        state = self.ssm.state
        h = torch.where(has.bool()[:, None], state[slot], 0)  # [n, S]: zeros for rows without a slot
        hidden, logits, h_new = self._main_rows(tok, row_meta(views[5:], span), h)  # [n, H], [n, V], [n, S]
        if with_slot:
            state.index_copy_(0, slots_w, h_new.index_select(0, rows_w))
        self.hidden_states[:n].copy_(hidden)
        for s in seqs:
            s.seq_len += 1
        return logits

    def argmax_batch(self, logits: torch.Tensor, n: int, rank: int = 0) -> list[int]:
        """Argmax of rows 0..n-1 of logits [>= n, vocab], ties to the lowest id: one argmax launch and
        one device-to-host copy. A row the per-row sampler refuses (a NaN, a +inf logit, no finite
        logit) fails the call, naming the first such row; the caller then samples every row per row."""
        try:
            check_rank(rank)
            if logits.dim() != 2 or logits.shape[1] != self.cfg.vocab_size:
                raise ModelError(f"logits must be [n, {self.cfg.vocab_size}], got {tuple(logits.shape)}")
            if not (isinstance(n, int) and 1 <= n <= logits.shape[0]):
                raise ModelError(f"n={n!r} rows out of range 1..{logits.shape[0]}")
        except ModelError as e:
            raise e.context("argmax_batch") from None
        ids, codes = self._argmax_verdicts(logits, n)
        refused = [j for j, c in enumerate(codes) if c]
        if refused:
            j = refused[0]
            raise ModelError(f"row {j} has {REFUSED_ROWS[codes[j]]}").context("argmax_batch")
        return ids

    def _argmax_verdicts(self, logits: torch.Tensor, n: int) -> tuple[list[int], list[int]]:
        """argmax_batch's work after its checks: rows 0..n-1's argmax and refusal code, one host read."""
        ids, codes = argmax_verdicts(logits[:n]).tolist()
        return ids, codes

    # Stash -------------------------------------------------------------------------------------

    def stash_verify_hidden_rows(self, rows: list[int], rank: int = 0) -> None:
        """stash[i] = hidden_states[rows[i]] for every i, in one gather."""
        try:
            check_rank(rank)
            self._check_stash(0, "row")
            if len(rows) > self.cfg.stash_capacity:
                raise ModelError(f"{len(rows)} rows exceed the stash capacity {self.cfg.stash_capacity}")
            for r in rows:
                if not (isinstance(r, int) and 0 <= r < self.cfg.max_batch_rows):
                    raise ModelError(f"hidden row {r!r} out of range (hidden_states has {self.cfg.max_batch_rows})")
        except ModelError as e:
            raise e.context("stash_verify_hidden_rows") from None
        if rows:
            (idx,) = pack_sections([rows], self.device)
            self.stash[: len(rows)].copy_(self.hidden_states.index_select(0, idx))  # type: ignore[index]

    def save_hidden_for_mtp_from_stash(self, row: int, rank: int = 0) -> None:
        """The drafter input buffer = stash[row]."""
        try:
            check_rank(rank)
            self._check_stash(row, "row")
        except ModelError as e:
            raise e.context(f"save_hidden_for_mtp_from_stash({row})") from None
        self.mtp_hidden_in.copy_(self.stash[row])  # type: ignore[index]

    # Propose -----------------------------------------------------------------------------------

    def run_mtp_propose_batched(
        self,
        tokens: list[int],
        positions: list[int],
        stash_idx: list[int],
        k: int,
        seqs: list[SequenceState],
        rank: int = 0,
        conf_out: list[list[float]] | None = None,
    ) -> list[list[int]] | None:
        """k greedy drafts for every member g: input hidden stash[stash_idx[g]], token tokens[g] at
        drafter position positions[g], one drafter pass per draft position for the whole group.
        Returns None when k > max_batched_drafts (nothing done). Drafter block tables are packed at
        the propose-meta stride; a longer one fails with "... exceeds meta stride ..." in the chain.
        `conf_out` (on success) is replaced by one list of confidences per member. Overwrites
        hidden_states rows 0..n-1."""
        op = "run_mtp_propose_batched"
        if isinstance(k, int) and k > self.cfg.max_batched_drafts:
            return None
        call = ProposeCall(tokens, positions, stash_idx, k, seqs)
        try:
            self._check_propose_batched(call, rank)
        except ModelError as e:
            raise e.context(op) from None
        n = len(seqs)
        if k == 0:
            if conf_out is not None:
                conf_out[:] = [[] for _ in range(n)]
            return [[] for _ in range(n)]
        return self._propose_rows(call, conf_out)

    def _propose_rows(self, call: ProposeCall, conf_out: list[list[float]] | None) -> list[list[int]]:
        """run_mtp_propose_batched's work after its checks, for k >= 1."""
        op = "run_mtp_propose_batched"
        positions, k, seqs = call.positions, call.k, call.seqs
        n, cfg, stride = len(seqs), self.cfg, self.meta_stride
        steps = [[p + i for p in positions] for i in range(k)]  # drafter positions written per step
        write_blocks = [
            [s.draft_block_table[p // cfg.block_size] for p, s in zip(ps, seqs, strict=True)] for ps in steps
        ]
        propose_meta = [b for s in seqs for b in padded_table(s.draft_block_table, stride)]  # [n, stride]
        views = pack_sections(
            [
                call.tokens,
                call.stash_idx,
                [p + 1 for p in positions],
                *write_blocks,
                *[[p % cfg.block_size for p in ps] for ps in steps],
                propose_meta,
            ],
            self.device,
        )
        tok, rows, base_len = views[:3]
        blocks, offs, meta = views[3 : 3 + k], views[3 + k : 3 + 2 * k], views[-1].view(n, stride)
        span = draft_span_blocks(cfg, self.nm.exact, [p + k - 1 for p in positions])
        tables = meta[:, :span] if span <= stride else torch.nn.functional.pad(meta, (0, span - stride))
        hidden = self.stash.index_select(0, rows)  # type: ignore[union-attr]  # [n, H]
        finite = torch.isfinite(hidden).all(dim=1)  # [n]
        if not bool(finite.all()):
            g = finite.tolist().index(False)
            raise ModelError(f"member {g} (stash row {call.stash_idx[g]}): drafter input is not finite").context(op)
        drafts, confs, slots = [], [], [s.slot_idx for s in seqs]
        for i in range(k):
            step_meta = RowMeta(blocks[i], offs[i], tables, base_len + i)
            hidden, logits = drafter_rows(self.nm, cfg, self.weights, self.draft_kv, hidden, tok, step_meta)
            capture_draft_rows(slots, positions, i, logits)
            tok = argmax_rows(logits)  # [n]
            drafts.append(tok)
            if conf_out is not None:
                confs.append(softmax_confidence(self.nm, logits, tok).double())
        self.hidden_states[:n].copy_(hidden)
        out = torch.stack(drafts).double()  # [k, n]: ids are exact in float64
        host = torch.cat([out, torch.stack(confs)]).T.tolist() if confs else out.T.tolist()  # one D2H
        if conf_out is not None:
            conf_out[:] = [row[k:] for row in host]
        return [[int(d) for d in row[:k]] for row in host]

    # Checks (`batched.model_checks`) -----------------------------------------------------------

    def _check_stash(self, row: int, what: str) -> None:
        check_stash(self.cfg, self.stash, row, what)

    def _check_decode_batch(self, tokens: list[int], seqs: list[SequenceState], rank: int) -> None:
        check_decode_batch(self.cfg, tokens, seqs, lambda t, s: self._check_decode(t, s, rank))

    def _check_propose_batched(self, call: ProposeCall, rank: int) -> None:
        check_propose_batched(self.cfg, self.stash, self.meta_stride, call, rank)
