"""A model proxy that records every operation of the step and injects planned faults.

An error (or a group's None) is injected before the wrapped call runs, so that call changes no
state; an empty result or a NaN logits row replaces part of what a call that ran returned. The record
maps batched rows back to sequences (by `slot_idx`), which is what fault translation and call
accounting need.
"""

from __future__ import annotations

from typing import Any

import torch

from properties.worlds.fault_kinds import BAD_ROWS, INJECTED, Call, SeqFault, bad_row
from properties.worlds.specs import FaultSpec
from reference.errors import ModelError
from reference.state import SequenceState

_OWN_FIELDS = frozenset(
    {
        "_model",
        "_plan",
        "_seq_faults",
        "_counts",
        "_last_batch_slots",
        "_last_decode_slot",
        "_capture_conf",
        "_masked",
        "calls",
        "conf_by_slot",
        "rows",
        "unmasked_rows",
    }
)


class FaultyModel:
    """Wraps a model: forwards everything, records the operations in `RECORDED`, and injects the
    faults of `plan` (by call index) and `seq_faults` (by sequence, first matching call).

    It also keeps the numbers the step decides on: the logits row each decode returned, by sequence
    slot (`rows`, after any injected bad row; a copy, so later in-place edits by the step do not
    change it), and the processed row of each `argmax_on_device` call (in `Call.detail["row"]`).
    `masked` gives, by slot, the tokens a sequence's masks exclude (for `masked_row` faults)."""

    def __init__(
        self,
        model: Any,
        plan: tuple[FaultSpec, ...] = (),
        seq_faults: list[SeqFault] | None = None,
        capture_conf: bool = False,
        masked: dict[int, torch.Tensor] | None = None,
    ) -> None:
        self._model = model
        self._plan = plan
        self._seq_faults = list(seq_faults or [])
        self._counts: dict[str, int] = {}
        self._last_batch_slots: tuple[int, ...] = ()
        self._last_decode_slot = -1  # the per-sequence loop samples the sequence it decoded last
        self._capture_conf = capture_conf
        self._masked = masked or {}
        self.calls: list[Call] = []
        self.conf_by_slot: dict[int, list[float]] = {}
        self.rows: dict[int, torch.Tensor] = {}
        # By slot, the row as decoded before a bad-row fault rewrote it: the scale its survivors'
        # rounding belongs to (`properties.tolerance.differing`'s `computed_from`).
        self.unmasked_rows: dict[int, torch.Tensor] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def __setattr__(self, name: str, value: Any) -> None:
        """Only the recorder's own fields: a step that sets an attribute on the model it was given
        (a larger cap, a cache of its own) is refused at once, naming it."""
        if name not in _OWN_FIELDS:
            raise AttributeError(
                f"the step set {name!r} on the model it was given: a model's attributes are not the step's"
            )
        object.__setattr__(self, name, value)

    def moved(self, model: Any) -> None:
        """Wrap `model` (the same world on another device) from now on, and move what was captured
        (logits rows, the tensors in call details) to its device."""
        self._model = model
        self.rows = {k: v.to(model.device) for k, v in self.rows.items()}
        self.unmasked_rows = {k: v.to(model.device) for k, v in self.unmasked_rows.items()}
        for c in self.calls:
            c.detail = {k: v.to(model.device) if isinstance(v, torch.Tensor) else v for k, v in c.detail.items()}

    # -- plan lookup ------------------------------------------------------------------------
    def _planned(self, op: str) -> FaultSpec | None:
        n = self._counts.get(op, 0)
        self._counts[op] = n + 1
        for f in self._plan:
            if f.op == op and f.call == n:
                return f
        return None

    def _seq_fault(self, op: str, slot: int) -> SeqFault | None:
        for i, f in enumerate(self._seq_faults):
            if f.op == op and f.slot == slot:
                return self._seq_faults.pop(i)
        return None

    def _fail(self, call: Call, kind: str) -> None:
        call.outcome, call.injected = kind, True
        if kind == "err":
            call.error = f"{call.op}: {INJECTED}"
            self.calls.append(call)
            raise ModelError(f"{INJECTED}").context(call.op)
        self.calls.append(call)

    # -- recorded operations ----------------------------------------------------------------
    def decode(self, token: int, seq: SequenceState, rank: int = 0) -> torch.Tensor:
        call = Call("decode", (seq.slot_idx,), detail={"token": token})
        self._last_decode_slot = seq.slot_idx
        f = self._planned("decode")
        kind = f.kind if f else (sf.kind if (sf := self._seq_fault("decode", seq.slot_idx)) else None)
        if kind == "err":
            self._fail(call, "err")
        out = self._run(call, lambda: self._model.decode(token, seq, rank))
        if kind in BAD_ROWS:
            call.outcome, call.injected = kind, True
            self.unmasked_rows[seq.slot_idx] = out.detach().clone()
            out = bad_row(out, kind, self._masked.get(seq.slot_idx))
        self.rows[seq.slot_idx] = out.detach().clone()
        return out

    def decode_batch(self, tokens: list[int], seqs: list[SequenceState], rank: int = 0) -> torch.Tensor:
        slots = tuple(s.slot_idx for s in seqs)
        self._last_batch_slots = slots
        call = Call("decode_batch", slots, detail={"tokens": list(tokens)})
        f = self._planned("decode_batch")
        if f and f.kind == "err":
            self._fail(call, "err")
        out = self._run(call, lambda: self._model.decode_batch(tokens, seqs, rank))
        if f and f.kind in BAD_ROWS:
            row = (f.row or 0) % len(seqs)
            call.outcome, call.injected, call.detail["row"] = f.kind, True, row
            if not f.in_place:
                out = out.clone()
            self.unmasked_rows[slots[row]] = out[row].detach().clone()
            out[row] = bad_row(out[row], f.kind, self._masked.get(slots[row]))
        kept = out.detach().clone()
        self.rows.update({slot: kept[j] for j, slot in enumerate(slots)})
        call.detail["logits"] = out
        return out

    def argmax_batch(self, logits: torch.Tensor, n: int, rank: int = 0) -> list[int]:
        decoded = next((c.detail.get("logits") for c in reversed(self.calls) if c.op == "decode_batch"), None)
        call = Call("argmax_batch", self._last_batch_slots, detail={"n": n, "rank": rank, "logits": logits is decoded})
        if (f := self._planned("argmax_batch")) and f.kind == "err":
            self._fail(call, "err")
        return self._run(call, lambda: self._model.argmax_batch(logits, n, rank))

    def stash_verify_hidden_rows(self, rows: list[int], rank: int = 0) -> None:
        call = Call("stash_verify_hidden_rows", tuple(self._slot_of(r) for r in rows), detail={"rows": list(rows)})
        if (f := self._planned("stash_verify_hidden_rows")) and f.kind == "err":
            self._fail(call, "err")
        return self._run(call, lambda: self._model.stash_verify_hidden_rows(rows, rank))

    def save_hidden_for_mtp(self, seq: SequenceState, rank: int = 0) -> None:
        call = Call("save_hidden_for_mtp", (seq.slot_idx,))
        f = self._planned("save_hidden_for_mtp")
        if (f and f.kind == "err") or self._seq_fault("save_hidden_for_mtp", seq.slot_idx):
            self._fail(call, "err")
        return self._run(call, lambda: self._model.save_hidden_for_mtp(seq, rank))

    def save_hidden_for_mtp_from_stash(self, row: int, rank: int = 0) -> None:
        call = Call("save_hidden_for_mtp_from_stash", (self._slot_of(row),), detail={"row": row})
        if (f := self._planned("save_hidden_for_mtp_from_stash")) and f.kind == "err":
            self._fail(call, "err")
        return self._run(call, lambda: self._model.save_hidden_for_mtp_from_stash(row, rank))

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
        call = Call(
            "run_mtp_propose_batched",
            tuple(s.slot_idx for s in seqs),
            detail={
                "tokens": list(tokens),
                "positions": list(positions),
                "stash_idx": list(stash_idx),
                "k": k,
                "conf": conf_out is not None,
            },
        )
        f = self._planned("run_mtp_propose_batched")
        if f and f.kind in ("err", "none"):
            self._fail(call, f.kind)
            return None
        out = self._run(
            call, lambda: self._model.run_mtp_propose_batched(tokens, positions, stash_idx, k, seqs, rank, conf_out)
        )
        if out is None:
            call.outcome = "none"
            return None
        if f and f.kind == "empty":
            row = (f.row or 0) % len(seqs)
            out = [list(d) for d in out]
            out[row] = []
            call.injected = True
        call.empty_rows = tuple(g for g, d in enumerate(out) if not d)
        return out

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
        call = Call("run_mtp_propose_multi", (seq.slot_idx,), detail={"token": token, "position": position, "k": k})
        f = self._planned("run_mtp_propose_multi")
        kind = f.kind if f else (sf.kind if (sf := self._seq_fault("run_mtp_propose_multi", seq.slot_idx)) else None)
        if kind == "err":
            self._fail(call, kind)
        conf = conf_out if conf_out is not None else ([] if self._capture_conf else None)
        out = self._run(call, lambda: self._model.run_mtp_propose_multi(token, position, k, seq, rank, mask, conf))
        if kind == "empty":  # the drafter ran (its KV writes stand) and proposed nothing
            call.outcome, call.injected, out = "empty", True, []
        if conf is not None:
            self.conf_by_slot[seq.slot_idx] = list(conf) if out else []
        if not out:
            call.empty_rows = (0,)
        return out

    def start_checkpoint_async(self, seq: SequenceState) -> None:
        call = Call("start_checkpoint_async", (seq.slot_idx,))
        f = self._planned("start_checkpoint_async")
        if (f and f.kind == "err") or self._seq_fault("start_checkpoint_async", seq.slot_idx):
            self._fail(call, "err")
        return self._run(call, lambda: self._model.start_checkpoint_async(seq))

    def argmax_on_device(self, row: torch.Tensor) -> int:
        """The per-row fast-greedy scan. Its call names no sequence: for the per-sequence loop it is
        the one decoded last; for the batched step the translation maps it (`properties.sides.translate`)."""
        slot = self._last_decode_slot
        call = Call("argmax_on_device", (slot,) if slot >= 0 else (), detail={"row": row.detach().clone()})
        f = self._planned("argmax_on_device")
        if (f and f.kind == "err") or (slot >= 0 and self._seq_fault("argmax_on_device", slot)):
            self._fail(call, "err")
        return self._run(call, lambda: self._model.argmax_on_device(row))

    # -- helpers ----------------------------------------------------------------------------
    def _slot_of(self, row: int) -> int:
        return self._last_batch_slots[row] if 0 <= row < len(self._last_batch_slots) else -1

    def _run(self, call: Call, fn: Any) -> Any:
        try:
            out = fn()
        except ModelError as e:
            call.outcome = "err"
            call.error = ": ".join(e.chain())
            self.calls.append(call)
            raise
        self.calls.append(call)
        return out

    def count(self, op: str) -> int:
        return sum(1 for c in self.calls if c.op == op)
