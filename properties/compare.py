"""Compare the two sides of a run: every observable field of every sequence, the caches,
checkpoints and drafter state of touched sequences, untouched sequences bit-identical to before.

Exact numerics compare bit for bit; fast numerics compare continuous values within the dtype's
tolerance (discrete decisions were already reconciled by teacher forcing in the harness, so any
remaining token difference is a failure). Registered differences D1 and D4 are checked, not skipped:
where they apply, the implementation must show the documented outcome.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import torch

from properties.differences import d1_slots, expected_confidences
from properties.harness import SideBySide
from properties.numerics import close_tolerance
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
    "spec": ("B12",),
    "grammar_state": ("B8", "B11"),
    "seq": ("B1", "B2"),
    "kv": ("B1", "B2"),
    "ssm": ("B1", "B2"),
    "ckpt": ("B23", "D1"),
    "draft_kv": ("B16", "B17", "B22", "B26"),
}


@dataclass(slots=True)
class Mismatch:
    seq_id: int | None
    field: str
    ref: str
    impl: str
    ids: tuple[str, ...] = ()


def _short(v: Any, limit: int = 160) -> str:
    if isinstance(v, torch.Tensor):
        flat = v.detach().flatten()
        text = f"tensor{tuple(v.shape)} {v.dtype} {flat[:6].tolist()}"
    else:
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def values_equal(a: Any, b: Any, rtol: float, atol: float) -> bool:
    """Bit equality when rtol = atol = 0 (NaN equal to NaN), closeness otherwise."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if rtol == 0 and atol == 0:
            return torch.equal(a, b) or bool(
                torch.equal(a.isnan(), b.isnan())
                and torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))
            )
        return torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol, equal_nan=True)
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b if rtol == atol == 0 else math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(values_equal(x, y, rtol, atol) for x, y in zip(a, b, strict=True))
        )
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        return all(values_equal(getattr(a, f.name), getattr(b, f.name), rtol, atol) for f in fields(a))
    return a == b


def seq_fields(a: ActiveSeq) -> dict[str, Any]:
    """Every observable field of a sequence (the grammar state by the tokens it accepted)."""
    out: dict[str, Any] = {}
    for f in fields(a):
        v = getattr(a, f.name)
        out[f.name] = None if v is None else list(v.accepted) if f.name == "grammar_state" else v
    return out


def _field_group(key: str) -> str:
    for prefix in ("draft_kv", "ckpt", "kv", "ssm"):
        if key.startswith(prefix):
            return prefix
    return key


def compare_model_state(sbs: SideBySide, slot: int, seq_id: int, d1: bool, rtol: float, atol: float) -> list[Mismatch]:
    """The caches, checkpoint and drafter state of one sequence on both sides."""
    ref_seq = next(a.seq for a in sbs.ref.world.active if a.seq.slot_idx == slot)
    impl_seq = next(a.seq for a in sbs.impl.world.active if a.seq.slot_idx == slot)
    r = sbs.ref.world.model.snapshot(ref_seq)
    m = sbs.impl.world.model.snapshot(impl_seq)
    out: list[Mismatch] = []
    for key in sorted(set(r) | set(m)):
        if d1 and key.startswith("ckpt"):
            continue  # D1: checked below against the implementation's own state
        if not values_equal(r.get(key), m.get(key), rtol, atol):
            out.append(Mismatch(seq_id, key, _short(r.get(key)), _short(m.get(key)), FIELD_IDS[_field_group(key)]))
    if d1:
        out += check_fresh_checkpoint(m, impl_seq.seq_len, seq_id)
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
                _short(snap.get("ckpt_pos")),
                ("D1", "B23"),
            )
        )
    if "ssm_state" in snap and not values_equal(snap.get("ckpt_state"), snap["ssm_state"], 0.0, 0.0):
        out.append(
            Mismatch(seq_id, "ckpt_state (D1)", "the current SSM state", _short(snap.get("ckpt_state")), ("D1", "B23"))
        )
    return out


def compare(sbs: SideBySide, registered: tuple[str, ...] = ("D1", "D4")) -> list[Mismatch]:
    """Every difference between the two sides that is not a registered one. `registered` names the
    differences applied here (D2 is applied by fault translation, D3 by the log check); leaving
    one out shows the raw difference it explains."""
    exact = sbs.spec.model.numerics == "exact"
    rtol, atol = close_tolerance(sbs.spec.model.dtype, exact)
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

    touched = {sbs.before.active[i].seq_id for i in sbs.before.idxs}
    d1 = d1_slots(sbs) if "D1" in registered else set()
    conf = expected_confidences(sbs) if "D4" in registered else None
    for b, r, m in zip(sbs.before.active, sbs.ref.world.active, sbs.impl.world.active, strict=True):
        if b.seq_id not in touched:
            out += compare_untouched(sbs.before.model, sbs.impl.world.model, b, m)
            continue
        rf, mf = seq_fields(r), seq_fields(m)
        if conf is not None:
            rf["pending_draft_conf"] = conf.get(b.seq.slot_idx, [])  # D4
        for key in rf:
            if not values_equal(rf[key], mf[key], rtol, atol):
                out.append(Mismatch(b.seq_id, key, _short(rf[key]), _short(mf[key]), FIELD_IDS.get(key, ())))
        out += compare_model_state(sbs, b.seq.slot_idx, b.seq_id, b.seq.slot_idx in d1, rtol, atol)
    return out


def compare_untouched(model_before: Any, model_after: Any, before: ActiveSeq, after: ActiveSeq) -> list[Mismatch]:
    """A sequence outside `idxs` must be bit-identical to before the step, caches included."""
    out = []
    bf, af = seq_fields(before), seq_fields(after)
    for key in bf:
        if not values_equal(bf[key], af[key], 0.0, 0.0):
            out.append(Mismatch(before.seq_id, f"{key} (not bootstrapped)", _short(bf[key]), _short(af[key]), ("B1",)))
    snap_b = model_before.snapshot(before.seq)
    snap_a = model_after.snapshot(after.seq)
    for key in snap_b:
        if not values_equal(snap_b[key], snap_a.get(key), 0.0, 0.0):
            out.append(
                Mismatch(
                    before.seq_id, f"{key} (not bootstrapped)", _short(snap_b[key]), _short(snap_a.get(key)), ("B1",)
                )
            )
    return out
