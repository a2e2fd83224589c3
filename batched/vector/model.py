"""`VectorMtpModel`: `BatchedMtpModel` with static-shape passes and a scope in which checkpoints are
copied in one pass.

Its `decode_batch` and batched propose accept and refuse exactly what `BatchedMtpModel`'s do (all rows
checked at once, `batched.vector.checks`, row by row only to word a refusal), then run on rows and
spans padded to buckets (`batched.vector.passes`), replayed as CUDA graphs on a GPU
(`batched.vector.static_passes`; `graph_after` eager calls per shape first, None: never a graph). The passes
read the block tables from the model's mirrors of them on the device (`batched.vector.table_mirror`), which
copy only the tables that changed since they were last written.

Inside `deferred_checkpoints()`, `start_checkpoint_async` runs its checks and records the position
at once (a failing one raises and records nothing, as always) but leaves the state copy pending;
leaving the scope copies every pending SSM slot's state into its checkpoint with one gather and
one scatter instead of one copy per sequence. Nothing in between may read or write those states:
the fully batched step opens the scope around its checkpoint loop only. Outside the scope the model
is a `BatchedMtpModel`. `from_model` turns a `BatchedMtpModel` into one, sharing its buffers.

`propose_ahead` launches a batched propose of all rows of the last decode before its call is made
(`batched.vector.propose_ahead`: on a stream of its own on CUDA, in a memory pool of its own), and runs the
call's checks while it runs; the call that matches it takes it, any other propose undoes it first,
and so does `settle_ahead`. Until then the drafter cache may be written only through this model's
operations. `plan_ahead` asks the next `decode_batch` of given sequences to make that launch itself,
from its rows' argmax, as soon as its pass is queued: for a step whose rows all take the batched
argmax, whose tokens are then known on the device before the call returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from batched.batched_model import BatchedMtpModel
from batched.propose_call import ProposeCall
from batched.vector import noise
from batched.vector.attention import paged_read, warm
from batched.vector.checks import decode_batch_ok, ints_in, propose_batch_ok
from batched.vector.passes import Read, Verdicts, copy_checkpoints, decode_padded, propose_padded
from batched.vector.propose_ahead import Ahead, AheadUses, launch_ahead, matches, stashed, take, undo
from batched.vector.static_passes import PassCache
from batched.vector.table_mirror import TableMirror
from batched.vector.triton_device import available
from reference.errors import ModelError
from reference.model.checks import check_slots
from reference.state import SequenceState


class VectorMtpModel(BatchedMtpModel):
    """A `BatchedMtpModel` whose checkpoints can be batched (see the module docstring)."""

    _pending: list[int] | None = None  # SSM slots whose checkpoint copy is pending; None: not deferring
    _passes: PassCache | None = None  # made on first use: a clone starts without graphs
    _verdicts: Verdicts | None = None  # the last decode's batched-argmax work
    _ahead: Ahead | None = None  # the propose launched ahead, not yet taken or undone
    _ahead_passes: PassCache | None = None  # its passes: a memory pool of their own (another stream)
    _ahead_call: tuple[list[int], list[SequenceState]] | None = None  # the call whose checks it passed
    _tables: TableMirror | None = None  # the main block tables on the device, by slot (made on first use)
    _draft_tables: TableMirror | None = None  # the drafter's
    _plan: tuple[list[SequenceState], int, bool] | None = None  # `plan_ahead`'s (seqs, k, with_conf)
    ahead: bool = True  # whether `propose_ahead` launches anything
    launch_in_decode: bool = True  # whether `plan_ahead` plans (else the sampling launches; for figures)
    taken_ahead: int = 0  # proposes launched ahead that a call took (for tests and figures)
    graph_after: int | None = 1
    paged: bool = True  # fast numerics on a GPU: attention reads the paged cache in place

    @classmethod
    def from_model(cls, model: BatchedMtpModel, graph_after: int | None = 1, paged: bool = True) -> VectorMtpModel:
        """A `VectorMtpModel` over `model`'s weights, caches and scratch (shared, not copied), with
        passes of its own: captured as graphs after `graph_after` eager calls (None: never), and in
        fast numerics on a GPU with `paged` attention (`batched.vector.attention`)."""
        new = object.__new__(cls)
        for name, value in vars(model).items():
            setattr(new, name, value)
        new._passes = None
        new._verdicts = None
        new._ahead = new._ahead_passes = new._ahead_call = None
        new._tables = new._draft_tables = None
        new._plan = None
        new.graph_after = graph_after
        new.paged = paged
        return new

    def attention_read(self) -> Read | None:
        """The `RowMeta.read` of this model's passes: the paged kernel in fast numerics where it can
        run (a GPU, Triton, a head size and block size that are powers of two), else None (gather,
        then the numerics' own attention)."""
        cfg = self.cfg
        pow2 = all(x & (x - 1) == 0 for x in (cfg.head_dim, cfg.block_size))  # the kernel's tile sizes
        return paged_read if self.paged and pow2 and not self.nm.exact and available(self.device) else None

    def clone(self) -> VectorMtpModel:
        """As `TinyMtpModel.clone`, keeping `graph_after` (the clone makes its own passes)."""
        new = super().clone()
        new.graph_after, new.paged, new.ahead = self.graph_after, self.paged, self.ahead
        new.launch_in_decode = self.launch_in_decode
        return new

    def pass_cache(self) -> PassCache:
        """This model's static passes (and graphs, which hold its buffers' addresses)."""
        if self._passes is None:
            self._passes = PassCache(self.device, self.graph_after, prepare=self._warm_kernels)
        return self._passes

    def ahead_passes(self) -> PassCache:
        """The cache of the passes launched ahead (a memory pool of their own on CUDA)."""
        if self._ahead_passes is None:
            self._ahead_passes = PassCache(self.device, self.graph_after, prepare=self._warm_kernels)
        return self._ahead_passes

    def main_tables(self) -> TableMirror:
        """The main block tables of every slot on the device (`batched.vector.table_mirror`)."""
        if self._tables is None:
            self._tables = TableMirror.make(self.cfg.num_slots, self.cfg.main_blocks_per_seq, self.device)
        return self._tables

    def draft_tables(self) -> TableMirror:
        """The drafter's block tables of every slot on the device (`batched.vector.table_mirror`)."""
        if self._draft_tables is None:
            self._draft_tables = TableMirror.make(self.cfg.num_slots, self.cfg.draft_blocks_per_seq, self.device)
        return self._draft_tables

    def _warm_kernels(self) -> None:
        """Compile the Triton kernels this model's passes may call (before any graph capture)."""
        cfg = self.cfg
        if self.attention_read() is not None:
            warm(self.device, cfg.torch_dtype, cfg.n_heads, cfg.head_dim, cfg.block_size)
        if available(self.device):
            noise.warm(self.device, cfg.vocab_size)

    def _check_decode_batch(self, tokens: list[int], seqs: list[SequenceState], rank: int) -> None:
        """All rows at once (`batched.vector.checks`); row by row, for the message, when that fails."""
        if not decode_batch_ok(self.cfg, tokens, seqs, rank):
            super()._check_decode_batch(tokens, seqs, rank)

    def _check_propose_batched(self, call: ProposeCall, rank: int) -> None:
        """All members at once (`batched.vector.checks`); one by one, for the message, when that fails.
        A call that matches the propose launched ahead (whose launch ran these checks on the same
        inputs) checks only its tokens."""
        a, tokens, seqs = self._ahead, call.tokens, call.seqs
        if (
            a is not None
            and type(rank) is int
            and rank == 0
            and matches(a, self, call.positions, call.stash_idx, call.k, seqs)
            and len(tokens) == len(seqs)
            and ints_in(tokens, 0, self.cfg.vocab_size)
        ):
            self._ahead_call = (tokens, seqs)
            return
        if not propose_batch_ok(self.cfg, self.stash, self.meta_stride, call, rank):
            super()._check_propose_batched(call, rank)

    def stash_verify_hidden_rows(self, rows: list[int], rank: int = 0) -> None:
        """As `BatchedMtpModel`'s; rows 0..n-1 in order (the step's stash) are one slice copy, checked
        at once. Anything else takes the general path and its checks."""
        n, cfg = len(rows), self.cfg
        if (
            type(rank) is int
            and rank == 0
            and self.stash is not None
            and n <= min(cfg.stash_capacity, cfg.max_batch_rows)
            and all(type(r) is int for r in rows)
            and rows == list(range(n))
        ):
            self.stash[:n].copy_(self.hidden_states[:n])
            if self._ahead is not None:
                stashed(self._ahead, self, n)
            return
        super().stash_verify_hidden_rows(rows, rank)

    def decode_batch(self, tokens: list[int], seqs: list[SequenceState], rank: int = 0) -> torch.Tensor:
        """As `BatchedMtpModel.decode_batch`; then, when `plan_ahead` planned it for exactly `seqs`, the
        propose launched ahead from the rows' argmax. Drops any plan."""
        plan, self._plan = self._plan, None
        logits = super().decode_batch(tokens, seqs, rank)
        if plan is not None and plan[0] is seqs and self._verdicts is not None:
            self.propose_ahead(self._verdicts.ids, seqs, plan[1], plan[2])
        return logits

    def _decode_rows(self, tokens: list[int], seqs: list[SequenceState]) -> torch.Tensor:
        self.settle_ahead()
        tables, read = self.main_tables(), self.attention_read()
        logits, verdicts, ids = decode_padded(self, self.pass_cache(), tables, tokens, seqs, read)
        self._verdicts = Verdicts(logits, logits._version, verdicts, ids)
        return logits

    def plan_ahead(self, seqs: list[SequenceState], k: int, with_conf: bool) -> bool:
        """Have the next `decode_batch` launch `propose_ahead(tokens, seqs, k, with_conf)` once its pass
        is queued, when it decodes exactly `seqs` (this list object) and passes its checks, the tokens
        being its rows' argmax (ties to the lowest id) as its pass computed them. The next
        `decode_batch`, `propose_ahead` or `settle_ahead` drops the plan, launched or not; a launch
        the call does not match is undone as any other. Returns whether it planned: not when
        `launch_in_decode` is off (the caller then launches the propose itself)."""
        if not self.launch_in_decode:
            return False
        self._plan = (seqs, k, with_conf)
        return True

    def _argmax_verdicts(self, logits: torch.Tensor, n: int) -> tuple[list[int], list[int]]:
        """The verdicts the last decode computed in its pass when `logits` is the tensor it returned,
        unchanged since (its version counter, which every in-place write through any view bumps);
        else `BatchedMtpModel`'s own pass."""
        memo = self._verdicts
        if memo is None or memo.logits is not logits or logits._version != memo.version:
            return super()._argmax_verdicts(logits, n)
        ids, codes = memo.host.values()[:, :n].tolist()
        return ids, codes

    def _propose_rows(self, call: ProposeCall, conf_out: list[list[float]] | None) -> list[list[int]]:
        a, checked, tokens = self._ahead, self._ahead_call, call.tokens
        if a is not None:
            self._ahead = self._ahead_call = None
            matched = checked is not None and checked[0] is tokens and checked[1] is call.seqs
            taken = take(a, self, tokens, conf_out is not None) if matched else None
            if taken is not None:
                self.taken_ahead += 1
                if conf_out is not None:
                    conf_out[:] = taken[1]
                return taken[0]
            undo(a, self)
        drafts, confs = propose_padded(
            self, self.pass_cache(), self.draft_tables(), call, conf_out is not None, self.attention_read()
        )
        if conf_out is not None:
            conf_out[:] = confs
        return drafts

    def propose_ahead(self, tokens: torch.Tensor, seqs: list[SequenceState], k: int, with_conf: bool) -> None:
        """Launch now the batched propose of rows 0..n-1 of the decode just run, k drafts each, from
        `tokens` ([n] int64 on this model's device, queued; `batched.vector.propose_ahead`), for a later
        `run_mtp_propose_batched` that asks exactly that to take. Launches nothing for fewer than 2
        rows, when `ahead` is off, or when the pass could not run on those inputs; undoes it at once
        when the call's checks, run while the pass runs, would refuse them. A propose launched
        earlier and not taken is undone first."""
        self.settle_ahead()
        uses = AheadUses(self.ahead, self.draft_tables, self.ahead_passes, self.attention_read)
        self._ahead = launch_ahead(self, tokens, seqs, k, with_conf, uses)

    def settle_ahead(self) -> None:
        """Undo the propose launched ahead if it is still pending (nothing otherwise); drop a plan."""
        a, self._ahead, self._ahead_call, self._plan = self._ahead, None, None, None
        if a is not None:
            undo(a, self)

    def run_mtp_propose_multi(self, *args: Any, **kwargs: Any) -> list[int]:
        """As `TinyMtpModel.run_mtp_propose_multi`, once a propose launched ahead is undone (it wrote
        the drafter cache entries this one may write)."""
        self.settle_ahead()
        return super().run_mtp_propose_multi(*args, **kwargs)

    @contextmanager
    def deferred_checkpoints(self) -> Iterator[None]:
        """Within the scope, `start_checkpoint_async` defers its state copy; on leaving it (also by
        an exception), every deferred copy runs in one pass."""
        self._pending = []
        try:
            yield
        finally:
            slots, self._pending = self._pending, None
            if slots:
                copy_checkpoints(self, self.pass_cache(), slots)

    def start_checkpoint_async(self, seq: SequenceState) -> None:
        """As `TinyMtpModel.start_checkpoint_async`; inside `deferred_checkpoints` the state copy
        waits for the end of the scope."""
        if self._pending is None:
            super().start_checkpoint_async(seq)
            return
        try:
            check_slots(self.cfg, seq)
        except ModelError as e:
            raise e.context("start_checkpoint_async") from None
        if seq.ssm_slot is not None:
            self._pending.append(seq.ssm_slot)
        self.ssm.ckpt_pos[seq.slot_idx] = seq.seq_len
