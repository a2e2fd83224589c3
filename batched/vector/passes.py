"""`decode_batch` and the batched propose as static-shape passes (`batched.vector.static_passes`): what each
packs on the host for n rows padded to a bucket, and the pass over the packed buffers; the block
tables come from the model's mirrors of them on the device (`batched.vector.table_mirror`).

Both run after the operation's checks, so every input is valid (a propose launched ahead, after the
checks that keep it inside its buffers: `VectorMtpModel.propose_ahead`); both leave the caches, the
SSM states and `hidden_states` rows 0..n-1 as `BatchedMtpModel`'s operations do (bit for bit in
exact numerics) and write nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from batched.batched_model import argmax_verdicts
from batched.propose_call import ProposeCall
from batched.vector.static_passes import HostCopy, PassCache, padded, row_bucket, span_bucket
from batched.vector.table_mirror import TableMirror
from reference.capture import capture_draft_rows
from reference.errors import ModelError
from reference.model.drafter import draft_span_blocks, drafter_rows
from reference.model.kernels import argmax_rows, softmax_confidence
from reference.model.model import TinyMtpModel
from reference.model.paged_kv import PagedKv, RowMeta
from reference.state import SequenceState

Read = Callable[[torch.Tensor, PagedKv, int, RowMeta], torch.Tensor]


@dataclass(slots=True)
class Verdicts:
    """The `argmax_verdicts` a decode computed in its pass, for the logits it returned at `version`."""

    logits: torch.Tensor
    version: int
    host: HostCopy
    ids: torch.Tensor  # [n] int64 on the device: the argmax row of the verdicts, a tensor of its own


def decode_padded(
    model: TinyMtpModel,
    cache: PassCache,
    tables: TableMirror,
    tokens: list[int],
    seqs: list[SequenceState],
    read: Read | None = None,
) -> tuple[torch.Tensor, HostCopy, torch.Tensor]:
    """Decode tokens[j] for seqs[j] on `row_bucket(n)` rows: each row's KV written at its position,
    each SSM slot advanced, hidden rows 0..n-1 written, every seq_len advanced; the block tables read
    from `tables` (a mirror of the main tables, written here where they changed); attention by `read`
    when given (`RowMeta.read`). Returns logits [n, V], the host copy of their `argmax_verdicts`
    [2, n], computed in the same pass (the batched argmax's work, done before anyone asks for it),
    and the argmax itself on the device ([n] int64, a tensor of its own, queued)."""
    cfg, n, bs = model.cfg, len(seqs), model.cfg.block_size
    rows = row_bucket(n)
    pos = [s.seq_len for s in seqs]
    need = -(-(max(pos) + 1) // bs)
    span = cfg.main_blocks_per_seq if model.nm.exact else span_bucket(need, cfg.main_blocks_per_seq)
    slots = [s.ssm_slot for s in seqs]
    first = next((j for j, s in enumerate(slots) if s is not None), None)
    # A row without an SSM slot stores the first slotted row's state into that row's slot: the same
    # bits as that row's own store, so the store has a fixed shape and changes nothing more.
    store_slot = [0] * n if first is None else [slots[first] if s is None else s for s in slots]
    store_src = [0] * n if first is None else [first if s is None else j for j, s in enumerate(slots)]
    seq_slots = [s.slot_idx for s in seqs]
    tables.write(seq_slots, [s.block_table for s in seqs])
    sections = [
        padded(tokens, rows),
        padded([0 if s is None else s for s in slots], rows),
        padded([int(s is not None) for s in slots], rows),
        padded(list(range(n)), rows),  # KV source row: padding rows write row 0's
        padded(store_slot, rows),
        padded(store_src, rows),
        padded(seq_slots, rows),  # each row's table: padding rows read row 0's
        padded(pos, rows),  # positions: padding rows decode at row 0's
    ]
    p = cache.get(("decode", rows, span, first is not None), [rows] * 8)
    p.load(sections)
    tok, slot, has, write_rows, store_to, store_from, table_rows, at = p.views
    state = model.ssm.state

    def run() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tabs = tables.rows[:, :span].index_select(0, table_rows)  # [R, span]
        meta = RowMeta(tabs.gather(1, (at // bs)[:, None])[:, 0], at % bs, tabs, at + 1, write_rows, read)
        h = torch.where(has.bool()[:, None], state[slot], 0)  # [R, S]: zeros for rows without a slot
        hidden, logits, h_new = model._main_rows(tok, meta, h)  # [R, H], [R, V], [R, S]
        if first is not None:
            state.index_copy_(0, store_to, h_new.index_select(0, store_from))
        return hidden, logits, argmax_verdicts(logits)

    (hidden, logits, verdicts), replayed = cache.run(p, run)
    model.hidden_states[:n].copy_(hidden[:n])
    for s in seqs:
        s.seq_len += 1
    # The verdicts' copy to the host is queued behind the pass: it reads them before any later pass.
    ids = verdicts[0, :n].clone()  # the graph's outputs are rewritten by its next replay
    return logits[:n].clone() if replayed else logits[:n], HostCopy.of(verdicts[:, :n]), ids


def propose_padded(
    model: TinyMtpModel,
    cache: PassCache,
    tables: TableMirror,
    call: ProposeCall,
    with_conf: bool,
    read: Read | None = None,
) -> tuple[list[list[int]], list[list[float]]]:
    """`call.k` >= 1 greedy drafts for every member of `call` on `row_bucket(n)` rows, as
    `run_mtp_propose_batched` makes them: (drafts, confidences; empty lists unless `with_conf`). A member
    whose stash row is not finite raises ModelError, and then nothing is written: the pass checks its
    input rows itself and puts back the drafter cache entries it wrote, so the check costs no host read
    of its own."""
    launch = launch_propose(model, cache, tables, call, with_conf, read)
    host = launch.out[:, : len(call.seqs)].T.tolist()  # one device-to-host copy: drafts, confidences, finite flags
    return finish_propose(model, launch, host, call.stash_idx, [s.slot_idx for s in call.seqs], call.positions)


@dataclass(slots=True)
class ProposeLaunch:
    """A propose pass queued on the device, nothing read back: its `hidden` [R, H] and `out`
    [k (+ k) + 1 (+ 1), R] (drafts, confidences when asked, finite flags, and for a pass on device
    tokens the tokens it drafted from), the drafter logits of each step, and for a pass on device
    tokens where each step wrote (block and offset, [R] each) and the drafter cache entries it
    overwrote there, (keys, values) per step, [L, R, Hh, D] each."""

    n: int
    k: int
    with_conf: bool
    blocks: list[torch.Tensor]
    offs: list[torch.Tensor]
    hidden: torch.Tensor
    out: torch.Tensor
    step_logits: list[torch.Tensor]
    overwritten: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)


def launch_propose(
    model: TinyMtpModel,
    cache: PassCache,
    tables: TableMirror,
    call: ProposeCall,
    with_conf: bool,
    read: Read | None = None,
    ahead: torch.Tensor | None = None,
) -> ProposeLaunch:
    """Queue the propose pass of `propose_padded` (no host read), its drafter tables read from `tables`
    (a mirror of the drafter tables, written here where they changed). With `ahead` (the tokens, [n]
    int64 on the device, in place of `call.tokens`) the members' input rows are
    `hidden_states[call.stash_idx]`, not the stash's, and the pass also hands back the tokens it drafted
    from (clamped into the vocabulary), where it wrote and the entries it overwrote there; it does not
    put those back when an input row is not finite: whoever reads its result undoes it then."""
    positions, k, seqs = call.positions, call.k, call.seqs
    cfg, n, bs = model.cfg, len(seqs), model.cfg.block_size
    rows = row_bucket(n)
    need = draft_span_blocks(cfg, model.nm.exact, [p + k - 1 for p in positions])
    span = need if model.nm.exact else span_bucket(need, cfg.draft_blocks_per_seq)
    slots = [s.slot_idx for s in seqs]
    tables.write(slots, [s.draft_block_table for s in seqs])
    sections = [
        padded(call.tokens, rows),
        padded(call.stash_idx, rows),
        padded(positions, rows),
        padded(list(range(n)), rows),  # KV source row: padding rows write row 0's
        padded(slots, rows),  # each row's drafter table: padding rows read row 0's
    ]
    source = model.stash if ahead is None else model.hidden_states
    assert source is not None  # the checks ran
    p = cache.get(("propose", rows, span, k, with_conf, ahead is not None), [rows] * 5)
    p.load(sections)
    tok, stash_rows, pos, write_rows, table_rows = p.views
    if ahead is not None:
        tok.copy_(ahead.index_select(0, write_rows))  # padding rows take row 0's token
    kv = model.draft_kv

    def run() -> tuple[torch.Tensor, ...]:
        tabs = tables.rows[:, :span].index_select(0, table_rows)  # [R, span]
        at = [pos + i for i in range(k)]  # draft i's position, [R] each
        blocks = [tabs.gather(1, (q // bs)[:, None])[:, 0] for q in at]
        offs = [q % bs for q in at]
        hidden = source.index_select(0, stash_rows)  # [R, H]
        finite = torch.isfinite(hidden).all(dim=1)  # [R]: a padding row repeats member 0
        written = [(kv.k[:, blocks[i], offs[i]], kv.v[:, blocks[i], offs[i]]) for i in range(k)]  # [L, R, Hh, D]
        # Device tokens are not checked: one out of the vocabulary (a row the sampler refused) must not
        # index past the embedding. It drafts from another token, and the token check refuses the pass.
        first = tok if ahead is None else tok.clamp(0, cfg.vocab_size - 1)
        t, drafts, confs, step_logits = first, [], [], []
        for i in range(k):
            meta = RowMeta(blocks[i], offs[i], tabs, pos + (i + 1), write_rows, read)
            hidden, logits = drafter_rows(model.nm, cfg, model.weights, kv, hidden, t, meta)
            step_logits.append(logits)
            t = argmax_rows(logits)  # [R]
            drafts.append(t)
            if with_conf:
                confs.append(softmax_confidence(model.nm, logits, t).double())
        out = torch.cat([torch.stack(drafts + confs).double(), finite.double()[None]])  # [k (+ k) + 1, R]
        if ahead is not None:  # + the tokens it drafted from: [k (+ k) + 2, R]; a refused one is undone
            out = torch.cat([out, first.double()[None]])
            return hidden, out, *step_logits, *blocks, *offs, *[x for pair in written for x in pair]
        ok = finite.all()
        for i, (old_k, old_v) in enumerate(written):  # a refused pass leaves the entries it wrote as they were
            kv.k[:, blocks[i], offs[i]] = torch.where(ok, kv.k[:, blocks[i], offs[i]], old_k)
            kv.v[:, blocks[i], offs[i]] = torch.where(ok, kv.v[:, blocks[i], offs[i]], old_v)
        return hidden, out, *step_logits

    (hidden, out, *rest), _ = cache.run(p, run)
    step_logits, where, old = rest[:k], rest[k : 3 * k], rest[3 * k :]
    overwritten = [(old[2 * i], old[2 * i + 1]) for i in range(len(old) // 2)]
    blocks, offs = (list(where[:k]), list(where[k:])) if where else ([], [])
    return ProposeLaunch(n, k, with_conf, blocks, offs, hidden, out, step_logits, overwritten)


def finish_propose(
    model: TinyMtpModel,
    launch: ProposeLaunch,
    host: list[list[float]],
    stash_idx: list[int],
    slots: list[int],
    positions: list[int],
) -> tuple[list[list[int]], list[list[float]]]:
    """What a launched pass hands back, from `host` (its `out` rows per member: drafts, confidences,
    finite flag): ModelError for a member whose input row is not finite, else the drafter rows
    captured, `hidden_states` rows 0..n-1 written, and (drafts, confidences)."""
    n, k, with_conf = launch.n, launch.k, launch.with_conf
    bad = next((g for g, row in enumerate(host) if not row[-1]), None)
    if bad is not None:
        raise ModelError(f"member {bad} (stash row {stash_idx[bad]}): drafter input is not finite").context(
            "run_mtp_propose_batched"
        )
    for i, logits in enumerate(launch.step_logits):
        capture_draft_rows(slots, positions, i, logits[:n])
    model.hidden_states[:n].copy_(launch.hidden[:n])
    return [[int(d) for d in row[:k]] for row in host], [row[k:-1] for row in host] if with_conf else []


def copy_checkpoints(model: TinyMtpModel, cache: PassCache, slots: list[int]) -> None:
    """Copy the SSM state of every slot of `slots` into its checkpoint in one gather and one scatter,
    the slots padded to a row bucket by repeating the first (its copy lands twice, the same bits)."""
    rows = row_bucket(len(slots))
    p = cache.get(("checkpoint", rows), [rows])
    p.load([padded(slots, rows)])
    (idx,) = p.views
    model.ssm.ckpt.index_copy_(0, idx, model.ssm.state.index_select(0, idx))
