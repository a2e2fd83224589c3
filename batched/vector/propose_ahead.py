"""The batched propose launched ahead: the drafter pass of every row of a bootstrap batch queued as
soon as the rows' tokens exist on the device, before the step has read them back, emitted, and
decided which rows propose.

What a step later asks of `run_mtp_propose_batched` is usually exactly that pass: every row, in row
order, each from its own stash row, the tokens just sampled. Then the call takes the pass's result
(`take`) instead of running it again, and the drafter's device work has overlapped the step's host
work (sampling's read back, emit, the stash, the call's checks). Whenever the call differs in any
input the pass depended on, or no such call comes, the pass is undone (`undo`) and leaves nothing
behind: it writes only drafter cache entries, keeps what they held, and puts that back.

The pass reads `hidden_states` rows 0..n-1 (the decode's rows, which the step's stash copies next)
and the tokens from a device column; the call passes host lists. `take` accepts only when every
input is the same: positions, stash rows 0..n-1 holding the rows the pass read (version counters of
`hidden_states` and the stash), the sequences and what of them the pass read (slots, lengths, drafter
tables), k, whether confidences are asked, the drafter cache untouched since, and, once read back,
the tokens (which the pass clamps into the vocabulary: a refused row's token is not checked). On CUDA
the pass runs on a stream of its own, after everything the main stream queued before it (the decode,
the passes that made the tokens), so that the step's reads on the main stream do not wait for it;
taking or undoing it first makes the main stream wait.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from batched.propose_call import ProposeCall
from batched.vector.checks import block_ids_in, ints_in, propose_batch_ok, slots_ok
from batched.vector.passes import ProposeLaunch, Read, finish_propose, launch_propose
from batched.vector.static_passes import HostCopy, PassCache
from batched.vector.table_mirror import TableMirror
from reference.model.model import TinyMtpModel
from reference.state import SequenceState

RowInputs = list[tuple[int, int | None, int, list[int]]]  # (slot, SSM slot, seq_len, drafter table) per row


@dataclass(slots=True, frozen=True)
class AheadUses:
    """What a launch ahead takes from its model beyond the model's own buffers (`VectorMtpModel`
    gives its own): whether launching ahead is on, and, asked for only once a launch is going
    ahead, the drafter tables' device mirror, the static passes to run it on, and the attention
    read."""

    enabled: bool
    tables: Callable[[], TableMirror]
    passes: Callable[[], PassCache]
    read: Callable[[], Read | None]


@dataclass(slots=True)
class Ahead:
    """A propose pass launched ahead and not yet taken or undone."""

    launch: ProposeLaunch
    inputs: RowInputs  # what the pass read of each sequence, copied at launch
    positions: list[int]
    hidden_version: int  # `hidden_states._version` when the pass read it
    kv_versions: tuple[int, int]  # the drafter cache's keys' and values' versions after the pass
    host: HostCopy  # `launch.out[:, :n]`, queued
    tokens: torch.Tensor  # [n] the device column the pass read (kept alive until the pass is settled)
    stream: Any = None  # torch.cuda.Stream it runs on; None off CUDA
    stash_version: int | None = None  # the stash's version right after it copied the rows the pass read


def row_inputs(seqs: list[SequenceState]) -> RowInputs:
    """What a propose pass reads of each sequence (tables copied, so later edits show)."""
    return [(s.slot_idx, s.ssm_slot, s.seq_len, list(s.draft_block_table)) for s in seqs]


def kv_versions(model: TinyMtpModel) -> tuple[int, int]:
    """The drafter cache's version counters (every eager write bumps them; the pass's own replay does not)."""
    return model.draft_kv.k._version, model.draft_kv.v._version


def stashed(a: Ahead, model: TinyMtpModel, rows: int) -> None:
    """Record that the stash's rows 0..rows-1 were just copied from `hidden_states`: the rows the pass
    read when `hidden_states` is unchanged since and the copy covers them, else nothing it can use."""
    ok = model.hidden_states._version == a.hidden_version and rows >= a.launch.n and model.stash is not None
    a.stash_version = model.stash._version if ok else None  # type: ignore[union-attr]


def matches(
    a: Ahead, model: TinyMtpModel, positions: list[int], stash_idx: list[int], k: int, seqs: list[SequenceState]
) -> bool:
    """The call's inputs other than its tokens are the pass's: the same k, positions, stash rows
    0..n-1 holding the rows the pass read, what the pass read of the sequences, and a drafter cache
    no one else has written since."""
    n = a.launch.n
    return (
        k == a.launch.k
        and len(seqs) == n
        and positions == a.positions
        and stash_idx == list(range(n))
        and a.stash_version is not None
        and model.stash is not None
        and model.stash._version == a.stash_version
        and kv_versions(model) == a.kv_versions
        and row_inputs(seqs) == a.inputs
    )


def wait(a: Ahead) -> None:
    """Make the current stream wait for the pass (nothing off CUDA)."""
    if a.stream is not None:
        torch.cuda.current_stream(a.stream.device).wait_stream(a.stream)


def take(
    a: Ahead, model: TinyMtpModel, tokens: list[int], with_conf: bool
) -> tuple[list[list[int]], list[list[float]]] | None:
    """The pass's (drafts, confidences) for a call that `matches` it, with `tokens` and `with_conf`:
    written and captured as the call's own pass would (`finish_propose`, which raises its ModelError
    for a row that is not finite, once the pass is undone); None, with the pass left for the caller
    to undo, when the tokens or `with_conf` differ."""
    wait(a)
    if with_conf != a.launch.with_conf:
        return None
    host = a.host.values().T.tolist()  # per member: drafts, confidences, finite flag, token
    if [int(row.pop()) for row in host] != tokens:
        return None
    if not all(row[-1] for row in host):  # refused: the pass wrote its entries all the same
        undo(a, model)
    n = a.launch.n
    return finish_propose(model, a.launch, host, list(range(n)), [row[0] for row in a.inputs], a.positions)


def undo(a: Ahead, model: TinyMtpModel) -> None:
    """Put back every drafter cache entry the pass overwrote (a padding row rewrites row 0's entry
    with the same value)."""
    wait(a)
    kv = model.draft_kv
    for blocks, offs, (old_k, old_v) in zip(a.launch.blocks, a.launch.offs, a.launch.overwritten, strict=True):
        kv.k[:, blocks, offs] = old_k
        kv.v[:, blocks, offs] = old_v


def side_stream(device: torch.device) -> Any:
    """The stream proposes launched ahead run on (one per CUDA device, made once); None off CUDA."""
    return _cuda_stream(device) if device.type == "cuda" else None


@functools.cache
def _cuda_stream(device: torch.device) -> Any:
    return torch.cuda.Stream(device)


def launch_ahead(
    model: TinyMtpModel,
    tokens: torch.Tensor,
    seqs: list[SequenceState],
    k: int,
    with_conf: bool,
    uses: AheadUses,
) -> Ahead | None:
    """The batched propose of rows 0..n-1 of the decode just run, k drafts each, from `tokens` ([n]
    int64 on the model's device, queued), launched now with what `uses` gives. None when nothing was
    launched (fewer than 2 rows, `uses.enabled` off, inputs the pass could not run on) or when the
    call's checks, run while the pass runs, refuse those inputs (the launch is then undone at once)."""
    n, cfg = len(seqs), model.cfg
    if not uses.enabled or not 2 <= n <= min(cfg.max_batch_rows, cfg.stash_capacity) or not ints_in([k], 1):
        return None
    if tokens.shape != (n,) or tokens.dtype != torch.int64 or tokens.device != model.hidden_states.device:
        return None  # the device compared with the buffers': cuda:0 where model.device may say cuda
    positions, rows = [s.seq_len for s in seqs], list(range(n))
    # What the pass needs to stay inside its buffers: positions whose drafts fit the drafter's span
    # (so every gather and length is inside a row's table), slots in range, and valid block ids in
    # every table the mirror is to write. The call's checks proper run once the pass is queued.
    if not (ints_in(positions, 0) and max(positions) + k - 1 < cfg.draft_span and slots_ok(cfg, seqs)):
        return None
    mirror = uses.tables()
    tables = [s.draft_block_table for s in seqs]
    fresh = [tables[j] for j in mirror.changed([s.slot_idx for s in seqs], tables)]
    if not block_ids_in(fresh, cfg.num_draft_blocks):
        return None
    cache = uses.passes()
    stream = side_stream(model.device)
    hidden_version = model.hidden_states._version
    if stream is not None:  # after everything queued so far: the decode's rows, the passes that made the tokens
        stream.wait_stream(torch.cuda.current_stream(model.hidden_states.device))
    read = uses.read()
    call = ProposeCall([0] * n, positions, rows, k, seqs)  # the pass drafts from `tokens`, not these zeros
    with nullcontext() if stream is None else torch.cuda.stream(stream):
        launch = launch_propose(model, cache, mirror, call, with_conf, read, tokens)
        host = HostCopy.of(launch.out[:, :n])
    a = Ahead(launch, row_inputs(seqs), positions, hidden_version, kv_versions(model), host, tokens, stream)
    if propose_batch_ok(cfg, model.stash, model.meta_stride, call, 0):
        return a
    undo(a, model)
    return None
