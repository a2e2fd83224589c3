"""Block tables kept on the device between passes, one row per sequence slot, as serving engines keep
them: a pass gathers its rows' tables by slot instead of packing and copying every table on every
call (at n = 64 in the benchmark's world, 2,048 integers a decode and as many a propose).

A mirror remembers, per slot, the table its device row was last written from (a host copy). A table
equal to that copy (one list comparison, in C) needs no copy. A table that differs in any entry, or
in length, is written again: a slot handed to another sequence, a table grown by a block, an entry
edited in place. Equal in value is not the same as valid: a float 3.0 equals the block id 3 but is
not one, so callers still check every table before a call proceeds; the mirror saves copies only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from batched.vector.int_pack import packed
from reference.model.paged_kv import flat_tables, to_device


@dataclass(slots=True)
class TableMirror:
    """Tables by slot on the device, and what each slot's row was written from."""

    rows: torch.Tensor  # [slots, width] int64: slot s's table, cut or zero-padded to width
    seen: list[list[int] | None]  # per slot: the table rows[s] was written from; None: never written

    @classmethod
    def make(cls, slots: int, width: int, device: torch.device) -> TableMirror:
        return cls(torch.zeros(slots, width, dtype=torch.long, device=device), [None] * slots)

    def changed(self, slots: Sequence[int], tables: Sequence[Sequence[int]]) -> list[int]:
        """The j whose tables[j] is not what slot slots[j]'s row was written from (slots in range)."""
        seen = self.seen
        return [j for j, (s, t) in enumerate(zip(slots, tables, strict=True)) if seen[s] != t]

    def write(self, slots: Sequence[int], tables: Sequence[Sequence[int]]) -> None:
        """Make the rows of `slots` (distinct, in range) hold `tables`, whose block ids the caller has
        checked: the changed rows in one copy queued on the current stream, the others left as they are."""
        todo = self.changed(slots, tables)
        if not todo:
            return
        width = self.rows.shape[1]
        host = packed(flat_tables([tables[j] for j in todo], width)).view(len(todo), width)
        at = packed([slots[j] for j in todo])
        dev = self.rows.device
        self.rows.index_copy_(0, to_device(at, dev), to_device(host, dev))
        for j in todo:
            self.seen[slots[j]] = list(tables[j])
