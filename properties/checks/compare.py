"""The comparator (P1): the implementation's world against the reference's, whole.

Compared: every field of every sequence (untouched ones bit-identical to before the step), the
model's whole persistent state (`properties.checks.world_state`: every KV block owned or not, past
`seq_len` too, every SSM slot and checkpoint, the drafter's cache), the scheduler context, the
sampling config, the step's index list and the once-per-process telemetry keys; only the scratch
buffers are left out. Exact numerics: all of it bit-equal. Fast numerics: continuous values within
rounding, and the implementation's own numbers and every decision it made on them held to the
replay oracle (`properties.sides.replay_oracle`); discrete decisions it took otherwise were forced onto
the reference by the harness only where that oracle explains them. Registered differences D1 and
D4 are checked, not skipped: where they apply, the implementation must show the documented outcome.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from properties.checks.differences import d1_slots, expected_confidences
from properties.checks.logs import expected_once_keys
from properties.checks.world_state import Owners, compare_buffers
from properties.sides.forcing import top_ids_explained
from properties.sides.mismatch import Mismatch, short
from properties.sides.replay_oracle import own_draw_mismatches, replay_mismatches, row_mismatches
from properties.sides.side_by_side import SideBySide
from properties.tolerance import Tolerance, differing
from reference.state import ActiveSeq

# Which behaviour ids a differing field points at.
FIELD_IDS: dict[str, tuple[str, ...]] = {
    "last_token": ("B5", "B6", "B8", "B11", "B12"),
    "output_tokens": ("B4", "B5", "B6", "B8", "B11"),
    "output_logprobs": ("B10",),
    "pending_drafts": ("B15", "B16", "B17", "B19", "B20", "B21", "B22"),
    "pending_draft_conf": ("B18", "B19", "D4"),
    "finished": ("B3", "B9", "B11"),
    "finish_reason": ("B11",),
    "adaptive_spec": ("B12",),
    "grammar_state": ("B8", "B11"),
    "seq": ("B1", "B2"),
}
# Fields the replay oracle holds in fast numerics (values from the implementation's own rows).
REPLAYED = ("output_logprobs", "pending_draft_conf")


def values_equal(a: Any, b: Any) -> bool:
    """Bit equality of values, tensors and containers of them (NaN equal to NaN)."""
    if hasattr(a, "shape") or hasattr(b, "shape"):
        return (
            hasattr(a, "shape")
            and hasattr(b, "shape")
            and a.shape == b.shape
            and a.dtype == b.dtype
            and not bool(differing(a, b.to(a.device), 0.0).any())
        )
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        return all(values_equal(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    return a == b


def seq_fields(a: ActiveSeq) -> dict[str, Any]:
    """Every observable field of a sequence (the grammar state by the tokens it accepted)."""
    out: dict[str, Any] = {}
    for f in fields(a):
        v = getattr(a, f.name)
        out[f.name] = None if v is None else list(v.accepted) if f.name == "grammar_state" else v
    return out


def shape_of(key: str, v: Any) -> Any:
    """What of a replayed field is compared with the reference in fast numerics: which entries are
    there (None or not), not their values."""
    if key == "output_logprobs":
        return [None if x is None else (x.token, tuple(i for i, _ in x.top)) for x in v]
    return len(v)


def top_ids_swapped_by_rounding(sbs: SideBySide, b: ActiveSeq, ref: list[Any], impl: list[Any]) -> bool:
    """Fast numerics: whether two output_logprobs lists differ only in the order of the step's top
    ids, as rounding of the two logits rows can reorder near-equal candidates
    (`replay_oracle.top_ids_explained`); the values themselves are held by the replay oracle."""
    n = len(b.output_logprobs)
    if (
        len(ref) != len(impl)
        or len(ref) != n + 1
        or shape_of("output_logprobs", ref[:n]) != shape_of("output_logprobs", impl[:n])
    ):
        return False
    slot = b.seq.slot_idx
    ref_row, impl_row = sbs.ref.model.rows.get(slot), sbs.impl.model.rows.get(slot)
    if ref_row is None or impl_row is None:
        return False
    rtol = Tolerance.of(sbs.spec.model).rounding
    return top_ids_explained(ref[n], impl[n], ref_row, impl_row, rtol) is None


def check_equivalence(sbs: SideBySide, registered: tuple[str, ...] = ("D1", "D4")) -> list[Mismatch]:
    """Every difference between the two sides that is not a registered one. `registered` names the
    differences applied here (D2 is applied by fault translation, D3 by the log check); leaving
    one out shows the raw difference it explains."""
    out: list[Mismatch] = []
    for name, side in (("reference", sbs.ref), ("implementation", sbs.impl)):
        if side.error is not None:
            out.append(Mismatch(None, f"{name} raised", "", f"{type(side.error).__name__}: {side.error}"))
    if out:
        return out
    ref_ids = [a.seq_id for a in sbs.ref.world.active]
    impl_ids = [a.seq_id for a in sbs.impl.world.active]
    if ref_ids != impl_ids:
        return [Mismatch(None, "active order", str(ref_ids), str(impl_ids), ("B1",))]

    fast = Tolerance.of(sbs.spec.model).fast
    out += context_mismatches(sbs)
    touched = {sbs.before.active[i].seq_id for i in sbs.before.idxs}
    conf = expected_confidences(sbs) if "D4" in registered else None
    for b, r, m in zip(sbs.before.active, sbs.ref.world.active, sbs.impl.world.active, strict=True):
        if b.seq_id not in touched:
            out += compare_untouched(b, m)
            continue
        rf, mf = seq_fields(r), seq_fields(m)
        if conf is not None:
            rf["pending_draft_conf"] = conf.get(b.seq.slot_idx, [])  # D4
        for key in rf:
            want, got = (
                (shape_of(key, rf[key]), shape_of(key, mf[key])) if fast and key in REPLAYED else (rf[key], mf[key])
            )
            if not values_equal(want, got) and not (
                fast and key == "output_logprobs" and top_ids_swapped_by_rounding(sbs, b, rf[key], mf[key])
            ):
                out.append(Mismatch(b.seq_id, key, short(rf[key]), short(mf[key]), FIELD_IDS.get(key, ())))
    out += model_mismatches(sbs, "D1" in registered)
    out += row_mismatches(sbs)
    out += replay_mismatches(sbs) if fast else own_draw_mismatches(sbs)
    # In exact numerics only an own draw outside the support can be unexplained.
    out += [Mismatch(None, "decision the replay oracle cannot explain", "", why, ("B8",)) for why in sbs.unexplained]
    return out


def model_mismatches(sbs: SideBySide, d1_registered: bool) -> list[Mismatch]:
    """The model's whole persistent state (see `properties.checks.world_state`), with D1 applied: where the
    loop skipped a checkpoint that the implementation took, that checkpoint is held to D1 instead."""
    before = sbs.before
    rtol = Tolerance.of(sbs.spec.model).rtol
    d1 = d1_slots(sbs) if d1_registered else set()
    seq_by_slot = {a.seq.slot_idx: a for a in sbs.impl.world.active}
    skip = set()
    for slot in d1:
        skip.add(("ckpt_pos", slot))
        if seq_by_slot[slot].seq.ssm_slot is not None:
            skip.add(("ssm.ckpt", seq_by_slot[slot].seq.ssm_slot))
    owners = Owners(before.active, before.model.cfg.block_size)
    seq_of_slot = {a.seq.slot_idx: a.seq_id for a in before.active}
    out = [
        Mismatch(seq_of_slot.get(d.slot) if d.slot is not None else None, d.where, d.ref, d.impl, d.ids)
        for d in compare_buffers(before.model, sbs.ref.world.model, sbs.impl.world.model, owners, rtol, frozenset(skip))
    ]
    for slot in sorted(d1):
        a = seq_by_slot[slot]
        out += check_fresh_checkpoint(sbs.impl.world.model.snapshot(a.seq), a.seq.seq_len, a.seq_id)
    return out


def context_mismatches(sbs: SideBySide) -> list[Mismatch]:
    """The step's other inputs are left as they were (levers, watchdog, adaptive-speculation
    settings, sampling config, the index list), and it marked exactly the once-per-process keys the
    seed marks (B24)."""
    before, impl = sbs.before, sbs.impl.world
    out: list[Mismatch] = []
    for what, want, got in (
        ("levers", before.sched.levers, impl.sched.levers),
        ("watchdog", before.sched.watchdog, impl.sched.watchdog),
        ("spec_backoff_steps", before.sched.spec_backoff_steps, impl.sched.spec_backoff_steps),
        ("sampling config", before.verify_ctx, impl.verify_ctx),
        ("bootstrap indices", before.idxs, impl.idxs),
    ):
        if not values_equal(want, got):
            out.append(Mismatch(None, f"{what} (an input the step must not change)", short(want), short(got), ("B1",)))
    want_keys, got_keys = expected_once_keys(sbs), set(impl.sched.telemetry.seen)
    if got_keys != want_keys:
        out.append(Mismatch(None, "telemetry once-keys", str(sorted(want_keys)), str(sorted(got_keys)), ("B24",)))
    return out


def check_fresh_checkpoint(snap: dict[str, Any], seq_len: int, seq_id: int) -> list[Mismatch]:
    """D1: where the loop skipped the checkpoint, the batched path must have taken it: the
    checkpoint holds the current SSM state at the current length."""
    out = []
    if snap.get("ckpt_pos") != seq_len:
        out.append(
            Mismatch(
                seq_id,
                "ckpt_pos (D1)",
                f"{seq_len} (a checkpoint at the current length)",
                short(snap.get("ckpt_pos")),
                ("D1", "B23"),
            )
        )
    if "ssm_state" in snap and not values_equal(snap.get("ckpt_state"), snap["ssm_state"]):
        out.append(
            Mismatch(seq_id, "ckpt_state (D1)", "the current SSM state", short(snap.get("ckpt_state")), ("D1", "B23"))
        )
    return out


def compare_untouched(before: ActiveSeq, after: ActiveSeq) -> list[Mismatch]:
    """A sequence outside `idxs` keeps every field bit for bit (its caches are part of the
    whole-world comparison)."""
    out = []
    bf, af = seq_fields(before), seq_fields(after)
    for key in bf:
        if not values_equal(bf[key], af[key]):
            out.append(Mismatch(before.seq_id, f"{key} (not bootstrapped)", short(bf[key]), short(af[key]), ("B1",)))
    return out
