"""`TinyMtpModel`: the per-sequence model operations over paged KV, SSM slots and the MTP drafter.

Stack: token embedding; `n_attn_layers` pre-norm attention blocks over the paged KV cache; the
recurrent layer (state in SSM slots); a final RMSNorm and the tied LM head. The hidden state a decode
hands the drafter is the residual stream before the final norm.

Scratch buffers are the engine's: one shared `hidden_states` [max_batch_rows, H] (a decode writes
row 0, a propose overwrites the rows it uses), a `stash` [stash_capacity, H] (None when 0) and the
drafter input `mtp_hidden_in` [H]. Every operation checks all of its inputs before it writes
anything: a failing one raises `ModelError` (with its context chain) and changes nothing. The model
never allocates blocks.

Draft decisions go through `reference.decisions.decide` keyed by `DecisionKey(owner=seq.slot_idx,
position=<propose position>, kind="draft", index=i)`: the model does not know sequence ids, so the
sequence slot stands in for one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import torch

from reference.capture import capture_draft_rows
from reference.decisions import DecisionKey, decide
from reference.errors import ModelError, in_context
from reference.model import runs
from reference.model.checks import (
    check_decode,
    check_decode_run,
    check_mask,
    check_prefill,
    check_propose,
    check_rank,
    check_slots,
    check_tokens,
)
from reference.model.config import ModelConfig
from reference.model.drafter import draft_span_blocks, drafter_rows
from reference.model.kernels import Numerics, argmax_rows, linear, rms_norm, softmax_confidence
from reference.model.paged_kv import (
    PagedKv,
    RowMeta,
    block_forward,
    pack_sections,
    paged_attend,
    row_meta,
    row_sections,
)
from reference.model.ssm import SsmSlots, ssm_layer
from reference.model.state import CacheState
from reference.model.weights import Weights, build_weights, load_files, save_files
from reference.state import SequenceState

M = TypeVar("M", bound="TinyMtpModel")


class TinyMtpModel(CacheState):
    """The tiny hybrid model with an MTP drafter (see the module docstring)."""

    def __init__(self, cfg: ModelConfig, weights: Weights | None = None, env: Mapping[str, str] | None = None) -> None:
        """Build caches and scratch for `cfg`; weights from `cfg.seed` unless given (shared, never
        written). The propose-meta stride is resolved here, from `env` when one is given: by default
        the model reads no environment, so a world is built from its spec alone."""
        cfg.validate()
        self.cfg = cfg
        self.device = torch.device(cfg.device)
        self.nm = Numerics(cfg.exact, cfg.row_tile)
        self.weights = build_weights(cfg) if weights is None else weights
        self.meta_stride = cfg.resolved_meta_stride({} if env is None else env)
        dt, dev, h = cfg.torch_dtype, self.device, cfg.hidden
        self.kv = PagedKv.zeros(cfg.n_attn_layers, cfg.num_blocks, cfg.block_size, cfg.n_heads, cfg.head_dim, dt, dev)
        self.draft_kv = PagedKv.zeros(1, cfg.num_draft_blocks, cfg.block_size, cfg.n_heads, cfg.head_dim, dt, dev)
        self.ssm = SsmSlots.zeros(cfg.num_ssm_slots, cfg.num_slots, cfg.ssm_state, dt, dev)
        self.hidden_states = torch.zeros(cfg.max_batch_rows, h, dtype=dt, device=dev)
        self.stash = torch.zeros(cfg.stash_capacity, h, dtype=dt, device=dev) if cfg.stash_capacity else None
        self.mtp_hidden_in = torch.zeros(h, dtype=dt, device=dev)

    # Model protocol: properties ----------------------------------------------------------------

    def vocab_size(self) -> int:
        return self.cfg.vocab_size

    def dflash_gamma(self) -> int | None:
        return self.cfg.dflash_gamma

    def decode_logits_fp32(self) -> bool:
        return self.cfg.logits_fp32

    def argmax_on_device(self, row: torch.Tensor) -> int:
        """Argmax of one logits row, ties to the lowest id (NaN ranks last)."""
        return int(argmax_rows(row.reshape(1, -1))[0])

    # Model protocol: operations ----------------------------------------------------------------

    def decode(self, token: int, seq: SequenceState, rank: int = 0) -> torch.Tensor:
        """Run `token` at position `seq.seq_len` (see `reference.model.protocol.Model.decode`).
        Needs seq_len < max_seq_len and a block table covering seq_len. Returns logits [vocab]."""
        in_context("decode", self._check_decode, token, seq, rank)
        cfg = self.cfg
        span = cfg.main_blocks_per_seq if self.nm.exact else -(-(seq.seq_len + 1) // cfg.block_size)
        views = pack_sections(
            [[token], *row_sections([seq.seq_len], [seq.block_table], span, cfg.block_size)], self.device
        )
        hidden, logits, h_new = self._main_rows(views[0], row_meta(views[1:], span), self.ssm.initial(seq))
        if seq.ssm_slot is not None:
            self.ssm.state[seq.ssm_slot].copy_(h_new[0])
        self.hidden_states[0].copy_(hidden[0])
        seq.seq_len += 1
        return logits[0]

    def save_hidden_for_mtp(self, seq: SequenceState, rank: int = 0) -> None:
        """Copy row 0 of `hidden_states` (the last decode's) into the drafter input buffer."""
        in_context("save_hidden_for_mtp", self._check_seq_rank, seq, rank)
        self.mtp_hidden_in.copy_(self.hidden_states[0])

    def run_mtp_propose_multi(
        self,
        token: int,
        position: int,
        k: int,
        seq: SequenceState,
        rank: int = 0,
        mask: torch.Tensor | None = None,
        conf_out: list[float] | None = None,
    ) -> list[int]:
        """k greedy drafts from the drafter input buffer (see the protocol). `mask` (bool [vocab])
        restricts the first draft; its confidence is then the probability under the masked logits.
        k = 0 returns [] and reads nothing. A non-finite input hidden state is a ModelError."""
        op = "run_mtp_propose_multi"
        in_context(op, self._check_propose_multi, token, position, k, seq, rank, mask)
        if k == 0:
            if conf_out is not None:
                conf_out.clear()
            return []
        if not bool(torch.isfinite(self.mtp_hidden_in).all()):
            raise ModelError("drafter input is not finite (the drafter input buffer holds NaN/inf)").context(op)
        cfg = self.cfg
        span = draft_span_blocks(cfg, self.nm.exact, [position + k - 1])
        hidden = self.mtp_hidden_in[None].clone()  # [1, H]
        tok, drafts, confs = token, [], []
        for i in range(k):
            views = pack_sections(
                [[tok], *row_sections([position + i], [seq.draft_block_table], span, cfg.block_size)],
                self.device,
            )
            hidden, logits = drafter_rows(
                self.nm, cfg, self.weights, self.draft_kv, hidden, views[0], row_meta(views[1:], span)
            )
            row = logits[0]
            if i == 0 and mask is not None:
                row = row.masked_fill(~mask.to(row.device), float("-inf"))
                capture_draft_rows([seq.slot_idx], [position], i, row[None], logits)
            else:
                capture_draft_rows([seq.slot_idx], [position], i, row[None])
            tok = decide(DecisionKey(owner=seq.slot_idx, position=position, kind="draft", index=i), row)
            drafts.append(tok)
            if conf_out is not None:
                chosen = torch.tensor([tok], dtype=torch.long, device=row.device)
                confs.append(float(softmax_confidence(self.nm, row[None], chosen)[0]))
        self.hidden_states[0].copy_(hidden[0])
        if conf_out is not None:
            conf_out[:] = confs
        return drafts

    def start_checkpoint_async(self, seq: SequenceState) -> None:
        """Copy the SSM slot's state into its checkpoint; record seq_len as the checkpoint position."""
        in_context("start_checkpoint_async", check_slots, self.cfg, seq)
        self.ssm.checkpoint(seq)

    # Beyond the protocol: state handling for tests and world builders -------------------------

    def restore_checkpoint(self, seq: SequenceState) -> None:
        """Roll the sequence back to its checkpoint: SSM state and seq_len (KV past it is stale)."""
        in_context("restore_checkpoint", check_slots, self.cfg, seq)
        in_context("restore_checkpoint", self.ssm.restore, seq)

    def prefill(self, seq: SequenceState, tokens: list[int], prev_hidden: torch.Tensor | None = None) -> torch.Tensor:
        """Run `tokens` at positions seq_len.. through the main model and the drafter (see
        `reference.model.runs.prefill`). Returns the hidden states [T, H]."""
        in_context("prefill", check_prefill, self.cfg, seq, tokens, prev_hidden)
        return runs.prefill(self, seq, tokens, prev_hidden)

    def forward_full(self, tokens: list[int]) -> torch.Tensor:
        """Logits [T, vocab] of `tokens` from scratch (see `reference.model.runs.forward_full`)."""
        in_context("forward_full", check_tokens, self.cfg, tokens, len(tokens))
        return runs.forward_full(self, tokens)

    def save_model(self, directory: str | Path) -> None:
        """Write `config.json` and `model.safetensors` (weights only) into `directory`."""
        save_files(self.cfg, self.weights, directory)

    def decode_run(self, seq: SequenceState, tokens: list[int]) -> torch.Tensor:
        """Decode `tokens` at positions seq_len.. in one pass of the main model (a verify's target
        pass): their KV written, the SSM slot advanced past the last one, seq_len advanced by
        len(tokens), their hidden states in rows 0..T-1 of `hidden_states`. Bit-equal in exact
        numerics to decoding the tokens one at a time. Returns logits [T, vocab]."""
        in_context("decode_run", check_decode_run, self.cfg, seq, tokens)
        hidden, logits = runs.decode_run(self, seq, tokens)
        self.hidden_states[: len(tokens)].copy_(hidden)
        return logits

    # Internals ---------------------------------------------------------------------------------

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """Logits [M, vocab] of residual rows x [M, H]: final norm, tied head, logits dtype."""
        xn = rms_norm(self.nm, x, self.weights.final_norm, self.cfg.rms_eps)
        return linear(self.nm, xn, self.weights.embed).to(self.cfg.logits_dtype)

    def _main_rows(self, tokens: torch.Tensor, meta: RowMeta, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One position for each of M rows: tokens [M], meta (KV write slots and tables), SSM states
        h [M, S] -> (hidden [M, H] before the final norm, logits [M, vocab], new SSM states [M, S]).
        Writes the rows' KV; the caller stores the SSM states."""
        cfg = self.cfg
        x = self.weights.embed[tokens]  # [M, H]
        for i, layer in enumerate(self.weights.layers):
            x = block_forward(self.nm, layer, cfg.rms_eps, x, cfg.n_heads, paged_attend(self.kv, i, meta))
        x, h_new = ssm_layer(self.nm, self.weights.ssm, cfg.rms_eps, x, h)
        return x, self.head(x), h_new

    def _check_decode(self, token: int, seq: SequenceState, rank: int) -> None:
        check_rank(rank)
        check_decode(self.cfg, token, seq)

    def _check_propose_multi(
        self, token: int, position: int, k: int, seq: SequenceState, rank: int, mask: torch.Tensor | None
    ) -> None:
        check_rank(rank)
        check_propose(self.cfg, token, position, k, seq, self.cfg.max_drafts)
        check_mask(self.cfg, mask)

    def _check_seq_rank(self, seq: SequenceState, rank: int) -> None:
        check_rank(rank)
        check_slots(self.cfg, seq)


def load_model(
    directory: str | Path,
    device: str | None = None,
    cls: type[M] = TinyMtpModel,  # type: ignore[assignment]
    env: Mapping[str, str] | None = None,
) -> M:
    """The model `save_model` wrote (weights bit for bit), on `device` if given, as `cls`."""
    cfg, weights = load_files(directory, device)
    return cls(cfg, weights, env)
