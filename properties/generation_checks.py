"""The checks P9 applies after every engine step: the two engines' whole worlds equal (with the
registered differences applied), each engine's resources neither leaked nor shared, and every
finished request equal to its solo plain decode.

The comparison is exact (bit for bit): the engines run the same requests on identical copies of
one world, and in exact numerics the batched operations are bit-equal to the per-sequence ones. In
fast numerics the implementation's numbers may differ by rounding and a near-tie may flip a token,
after which the two generations legitimately part ways: that needs the replay oracle over whole
generations, which `compare_engines` and `check_solo` are the places to plug it into.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from properties.compare import check_fresh_checkpoint, seq_fields, values_equal
from properties.mismatch import Mismatch, short
from properties.numerics import rounding
from properties.world_state import Owners, compare_buffers
from reference.engine import Engine, Finished, StepRecord
from reference.solo import SoloResult

# Which behaviour ids a differing field of a running sequence points at.
FIELD_IDS: dict[str, tuple[str, ...]] = {
    "last_token": ("B11", "B12"),
    "output_tokens": ("B8", "B11"),
    "output_logprobs": ("B10",),
    "pending_drafts": ("B16", "B17", "B19", "B22"),
    "pending_draft_conf": ("B18", "D4"),
    "finished": ("B3", "B9", "B11"),
    "finish_reason": ("B11",),
    "spec": ("B12",),
    "seq": ("B1", "B2"),
}


@dataclass(slots=True)
class StepView:
    """What the comparison needs besides the engines: both step records, the D1 entries whose
    checkpoint legitimately differs (("ssm.ckpt", SSM slot) and ("ckpt_pos", slot)), the slots D1
    engaged this step, and the confidences D4 requires of the implementation's sequences (by slot)."""

    rec_impl: StepRecord
    rec_ref: StepRecord
    d1_skip: frozenset[tuple[str, int]]
    d1_new: frozenset[int]
    conf: dict[int, list[float]]


def compare_engines(impl: Engine, ref: Engine, view: StepView) -> list[Mismatch]:
    """Every difference between the engine whose bootstrap is the implementation's and the one
    whose bootstrap is the per-sequence loop (the reference)."""
    out = compare_records(view)
    if [sid for sid, _ in impl.waiting] != [sid for sid, _ in ref.waiting]:
        out.append(Mismatch(None, "waiting requests", str(ref.waiting), str(impl.waiting)))
    out += compare_finished(ref.finished, impl.finished)
    ref_ids, impl_ids = [a.seq_id for a in ref.active], [a.seq_id for a in impl.active]
    if ref_ids != impl_ids:
        return [*out, Mismatch(None, "running requests", str(ref_ids), str(impl_ids), ("B1",))]
    for r, m in zip(ref.active, impl.active, strict=True):
        rf, mf = seq_fields(r), seq_fields(m)
        rf["pending_draft_conf"] = view.conf.get(r.seq.slot_idx, rf["pending_draft_conf"])  # D4
        out += [
            Mismatch(r.seq_id, key, short(rf[key]), short(mf[key]), FIELD_IDS.get(key, ()))
            for key in rf
            if not values_equal(rf[key], mf[key])
        ]
    out += model_state(impl, ref, view)
    for what, r_count, m_count in resource_counts(ref, impl):
        if r_count != m_count:
            out.append(Mismatch(None, f"free {what}", str(r_count), str(m_count)))
    return out


def compare_records(view: StepView) -> list[Mismatch]:
    """The steps admitted, bootstrapped, verified and released the same requests with the same
    outcomes; a verify that restored a checkpoint D1 left different may have replayed from
    another position (its outcome is held to the state comparison instead)."""
    r, m = view.rec_ref, view.rec_impl
    out = [
        Mismatch(None, f"step: {what}", str(getattr(r, what)), str(getattr(m, what)))
        for what in ("admitted", "bootstrapped", "released")
        if getattr(r, what) != getattr(m, what)
    ]
    rv = [(v.seq_id, v.proposed, v.accepted, v.emitted) for v in r.verified]
    mv = [(v.seq_id, v.proposed, v.accepted, v.emitted) for v in m.verified]
    if rv != mv:
        out.append(Mismatch(None, "step: verified (seq, proposed, accepted, emitted)", str(rv), str(mv)))
    return out


def compare_finished(ref: dict[int, Finished], impl: dict[int, Finished]) -> list[Mismatch]:
    out = []
    for sid in sorted(set(ref) | set(impl)):
        r, m = ref.get(sid), impl.get(sid)
        if r is None or m is None or not values_equal(r, m):
            out.append(Mismatch(sid, "finished request", short(r), short(m), ("B11",)))
    return out


def model_state(impl: Engine, ref: Engine, view: StepView) -> list[Mismatch]:
    """The whole persistent state of both models (every block owned or not, every SSM slot and
    checkpoint), D1's checkpoints excepted; where D1 engaged this step, the implementation's
    checkpoint must hold the current SSM state at the current length."""
    cfg = ref.model.cfg
    rtol = rounding(cfg.dtype, cfg.numerics == "exact")
    owners = Owners(ref.active, cfg.block_size)
    seq_of_slot = {a.seq.slot_idx: a.seq_id for a in ref.active}
    out = [
        Mismatch(seq_of_slot.get(d.slot) if d.slot is not None else None, d.where, d.ref, d.impl, d.ids)
        for d in compare_buffers(ref.model, ref.model, impl.model, owners, rtol, view.d1_skip)
    ]
    for a in impl.active:
        if a.seq.slot_idx in view.d1_new:
            out += check_fresh_checkpoint(impl.model.snapshot(a.seq), a.seq.seq_len, a.seq_id)
    return out


def resource_counts(*engines: Engine) -> Iterable[tuple[str, int, int]]:
    res = [e.resources for e in engines]
    yield "main blocks", res[0].blocks.free_count(), res[1].blocks.free_count()
    yield "drafter blocks", res[0].draft_blocks.free_count(), res[1].draft_blocks.free_count()
    yield "slots", res[0].slots.free_count(), res[1].slots.free_count()
    yield "SSM slots", res[0].ssm_slots.free_count(), res[1].ssm_slots.free_count()


def check_resources(eng: Engine, name: str) -> list[Mismatch]:
    """No block, slot or SSM slot leaked (every one is free or held by a running request) or held by
    two running requests; a finished request holds nothing."""
    out: list[Mismatch] = []
    res, live = eng.resources, [a.seq for a in eng.active]
    for what, tables, alloc in (
        ("main blocks", [s.block_table for s in live], res.blocks),
        ("drafter blocks", [s.draft_block_table for s in live], res.draft_blocks),
    ):
        held = [b for t in tables for b in t]
        if len(set(held)) != len(held):
            out.append(Mismatch(None, f"{name}: {what} held twice", "each block by one request", str(tables)))
        if alloc.free_count() + len(held) != alloc.num_blocks:
            out.append(
                Mismatch(None, f"{name}: {what} leaked", f"{alloc.num_blocks} free or held",
                         f"{alloc.free_count()} free + {len(held)} held")
            )  # fmt: skip
    for what, ids, pool in (
        ("slots", [s.slot_idx for s in live], res.slots),
        ("SSM slots", [s.ssm_slot for s in live if s.ssm_slot is not None], res.ssm_slots),
    ):
        if len(set(ids)) != len(ids) or set(ids) != pool.used_ids() or set(ids) & set(pool.free_ids()):
            out.append(
                Mismatch(None, f"{name}: {what} leaked or shared", f"held {sorted(ids)}",
                         f"in use {sorted(pool.used_ids())}, free {pool.free_ids()}")
            )  # fmt: skip
    return out


def check_solo(done: Finished, want: SoloResult, hit_by_fault: bool) -> list[Mismatch]:
    """A request finished by its own reason equals its solo decode (tokens, logprobs, reason). One
    aborted, or finished by an error, holds a prefix of it; an error needs a fault that hit it."""
    sid = done.seq_id
    got = (done.tokens, done.logprobs, done.finish_reason)
    if not done.aborted and values_equal(got, (want.tokens, want.logprobs, want.finish_reason)):
        return []  # a sampling failure ends the solo decode without a reason too
    if done.finish_reason is not None:
        if not values_equal(got, (want.tokens, want.logprobs, want.finish_reason)):
            return [Mismatch(sid, "result against its solo decode", short(want), short(done), ("B8", "B11"))]
        return []
    out = []
    n = len(done.tokens)
    if not values_equal((done.tokens, done.logprobs), (want.tokens[:n], want.logprobs[:n])):
        out.append(Mismatch(sid, "partial result against its solo decode (a prefix)", short(want), short(done)))
    if done.errored and not hit_by_fault:
        out.append(Mismatch(sid, "finished by an error with no fault", "a finish reason", short(done), ("B3", "B9")))
    return out
