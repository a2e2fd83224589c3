"""The checks P9 applies after every engine step: the two engines' whole worlds equal (with the
registered differences applied), each engine's resources neither leaked nor shared, and every
finished request equal to its solo plain decode.

In exact numerics the comparison is bit for bit: the engines run the same requests on identical
copies of one world, and the batched operations are bit-equal to the per-sequence ones. In fast
numerics the engines' caches are held within the rounding tolerance of the dtype, logprobs and
draft confidences by which entries they hold (their values are the replay oracle's: computed from
rows it holds within rounding), and everything discrete exactly, after the replay oracle forced the
loop engine and the solo decode onto the near-ties it explains (`properties.generations.oracle`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from properties.checks.compare import REPLAYED, check_fresh_checkpoint, seq_fields, shape_of, values_equal
from properties.checks.world_state import (
    BUFFER_IDS,
    BufferDiff,
    Owners,
    compare_buffers,
    first_difference,
    state_buffers,
)
from properties.generations.resources import resource_counts
from properties.sides.mismatch import Mismatch, short
from properties.tolerance import Tolerance, differing
from reference.engine import Engine, Finished, StepRecord
from reference.model.kernels import bits_equal
from reference.model.model import TinyMtpModel

# Which behaviour ids a differing field of a running sequence points at.
FIELD_IDS: dict[str, tuple[str, ...]] = {
    "last_token": ("B11", "B12"),
    "output_tokens": ("B8", "B11"),
    "output_logprobs": ("B10",),
    "pending_drafts": ("B16", "B17", "B19", "B22"),
    "pending_draft_conf": ("B18", "D4"),
    "finished": ("B3", "B9", "B11"),
    "finish_reason": ("B11",),
    "adaptive_spec": ("B12",),
    "seq": ("B1", "B2"),
}


# (request id, logprobs list, logprobs list) -> whether their differences are explained by rounding.
LogprobsCheck = Callable[[int, list[Any], list[Any]], bool]


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
    # Fast numerics: both models as the step found them (what each engine wrote is told apart), and
    # whether two logprobs lists of a request (loop engine's, impl engine's) differ only by rounding.
    before: tuple[TinyMtpModel, TinyMtpModel] | None = None
    logprobs: LogprobsCheck | None = None
    owners_before: Owners | None = None  # the loop engine's running requests before the step


def compare_engines(impl: Engine, ref: Engine, view: StepView) -> list[Mismatch]:
    """Every difference between the engine whose bootstrap is the implementation's and the one
    whose bootstrap is the per-sequence loop (the reference)."""
    fast = not ref.model.cfg.exact
    out = compare_records(view)
    for what, want, got in (
        ("levers", ref.sched.levers, impl.sched.levers),
        ("watchdog", ref.sched.watchdog, impl.sched.watchdog),
        ("spec_backoff_steps", ref.sched.spec_backoff_steps, impl.sched.spec_backoff_steps),
        ("sampling config", ref.verify_ctx, impl.verify_ctx),
    ):
        if want != got:
            out.append(Mismatch(None, f"{what} (an input no step may change)", short(want), short(got), ("B1",)))
    if [sid for sid, _ in impl.waiting] != [sid for sid, _ in ref.waiting]:
        out.append(Mismatch(None, "waiting requests", str(ref.waiting), str(impl.waiting)))
    out += compare_finished(ref.finished, impl.finished, fast, view.logprobs)
    ref_ids, impl_ids = [a.seq_id for a in ref.active], [a.seq_id for a in impl.active]
    if ref_ids != impl_ids:
        return [*out, Mismatch(None, "running requests", str(ref_ids), str(impl_ids), ("B1",))]
    for r, m in zip(ref.active, impl.active, strict=True):
        rf, mf = seq_fields(r), seq_fields(m)
        rf["pending_draft_conf"] = view.conf.get(r.seq.slot_idx, rf["pending_draft_conf"])  # D4
        out += [
            Mismatch(r.seq_id, key, short(rf[key]), short(mf[key]), FIELD_IDS.get(key, ()))
            for key in rf
            if not field_equal(key, rf[key], mf[key], fast, _for(view.logprobs, r.seq_id))
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


def _for(check: LogprobsCheck | None, sid: int) -> Callable[[list[Any], list[Any]], bool] | None:
    return None if check is None else functools.partial(check, sid)


def field_equal(
    key: str, ref: Any, impl: Any, fast: bool, logprobs: Callable[[list[Any], list[Any]], bool] | None = None
) -> bool:
    """A sequence's field equal: bit for bit, or in fast numerics, for the fields the replay oracle
    holds (logprobs, confidences), which entries they hold; top-logprob ids that differ where
    `logprobs` finds the difference explained by rounding (`generation_oracle.top_ids_explained`)."""
    if fast and key in REPLAYED:
        if values_equal(shape_of(key, ref), shape_of(key, impl)):
            return True
        return key == "output_logprobs" and logprobs is not None and logprobs(list(ref), list(impl))
    return values_equal(ref, impl)


def result_equal(
    got: tuple[Any, ...],
    want: tuple[Any, ...],
    fast: bool,
    logprobs: Callable[[list[Any], list[Any]], bool] | None = None,
) -> bool:
    """(tokens, logprobs[, reason]) equal, logprobs as `field_equal` holds them."""
    return all(
        field_equal("output_logprobs", list(g), list(w), fast, logprobs) if i == 1 else values_equal(g, w)
        for i, (g, w) in enumerate(zip(got, want, strict=True))
    )


def compare_finished(
    ref: dict[int, Finished], impl: dict[int, Finished], fast: bool = False, logprobs: LogprobsCheck | None = None
) -> list[Mismatch]:
    out = []
    for sid in sorted(set(ref) | set(impl)):
        r, m = ref.get(sid), impl.get(sid)
        if r is None or m is None or not result_equal(_result(r), _result(m), fast, _for(logprobs, sid)):
            out.append(Mismatch(sid, "finished request", short(r), short(m), ("B11",)))
    return out


def _result(f: Finished) -> tuple[Any, ...]:
    return (f.tokens, f.logprobs, f.finish_reason, f.aborted, f.steps)


def model_state(impl: Engine, ref: Engine, view: StepView) -> list[Mismatch]:
    """The whole persistent state of both models (every block owned or not, every SSM slot and
    checkpoint), D1's checkpoints excepted; where D1 engaged this step, the implementation's
    checkpoint must hold the current SSM state at the current length."""
    cfg = ref.model.cfg
    rtol = Tolerance.of(cfg).rtol
    owners = Owners(ref.active, cfg.block_size)
    seq_of_slot = {a.seq.slot_idx: a.seq_id for a in ref.active}
    if view.before is None or rtol == 0:
        diffs = compare_buffers(ref.model, ref.model, impl.model, owners, rtol, view.d1_skip)
    else:
        diffs = fast_buffers(view.before, (ref.model, impl.model), owners, rtol, view.d1_skip, view.owners_before)
    out = [
        Mismatch(seq_of_slot.get(d.slot) if d.slot is not None else None, d.where, d.ref, d.impl, d.ids) for d in diffs
    ]
    for a in impl.active:
        if a.seq.slot_idx in view.d1_new:
            out += check_fresh_checkpoint(impl.model.snapshot(a.seq), a.seq.seq_len, a.seq_id)
    return out


def _owned(name: str, buf: torch.Tensor, owned: list[Owners]) -> torch.Tensor:
    """Bool mask of the elements of `buf` in a block (KV: dim 1) or SSM slot (dim 0) one of `owned`
    gives to a request."""
    mask = torch.zeros(buf.shape, dtype=torch.bool, device=buf.device)
    for o in owned:
        if name.startswith("kv."):
            idx = list(o.main)
        elif name.startswith("draft_kv."):
            idx = list(o.draft)
        else:
            idx = list(o.ssm)
        if idx:
            at = torch.tensor(idx, dtype=torch.long, device=buf.device)
            if name.startswith(("kv.", "draft_kv.")):
                mask[:, at] = True
            else:
                mask[at] = True
    return mask


def fast_buffers(
    before: tuple[TinyMtpModel, TinyMtpModel],
    after: tuple[TinyMtpModel, TinyMtpModel],
    owners: Owners,
    rtol: float,
    skip: frozenset[tuple[str, int]],
    owned_before: Owners | None = None,
) -> list[BufferDiff]:
    """Fast numerics over whole generations, (loop, impl) engine models before and after a step:
    every element within the dtype's rounding of the loop engine's (the two engines' caches carry
    the rounding of earlier steps, so a value is held to the other engine's, not to its own past),
    and a unit (a head's vector, an SSM state row) outside every running request's blocks and SSM
    slot (before or after the step) that the loop engine did not write is one the impl engine did
    not write either (a stray write is never rounding). Checkpoint positions equal."""
    out: list[BufferDiff] = []
    (rb, mb), (ra, ma) = (state_buffers(m) for m in before), (state_buffers(m) for m in after)
    owned = [owners] + ([owned_before] if owned_before is not None else [])
    for name, r in ra.items():
        m = ma[name].to(r.device)
        if bits_equal(r, m):
            continue
        # A unit (last dimension: a head's vector, an SSM state row) in a block or SSM slot no running
        # request held before or after the step, which the loop engine left alone, must stay so. In
        # a request's own blocks a rollback's replay rewrites positions, and the loop engine's rewrite
        # may come out bit-identical where the impl engine's differs by rounding: those are held to
        # the tolerance only.
        kept = ~differing(r, rb[name].to(r.device), 0.0).any(dim=-1, keepdim=True).expand_as(r)
        stray = differing(m, mb[name].to(r.device), 0.0) & kept & ~_owned(name, r, owned)
        bad = differing(r, m, rtol) | stray
        note = f"{int(stray.sum())} written by the implementation engine only; " if bool(stray.any()) else ""
        diff = first_difference(name, r, m, bad, skip, owners, f"{note}tolerance {rtol:.3g} of its unit's magnitude, ")
        if diff is not None:
            out.append(diff)
    for slot, (pr, pm) in enumerate(zip(after[0].ssm.ckpt_pos, after[1].ssm.ckpt_pos, strict=True)):
        if pr != pm and ("ckpt_pos", slot) not in skip:
            owned = slot in owners.slots
            slot_of = slot if owned else None
            out.append(
                BufferDiff("ckpt_pos", f"ckpt_pos slot {slot}", 1, str(pr), str(pm), BUFFER_IDS["ckpt_pos"], slot_of)
            )
    return out
