"""Sequence slots and SSM slots: a fixed set of ids handed out first come, first served."""

from __future__ import annotations

from collections.abc import Iterable

from reference.errors import ModelError


class SlotPool:
    """Hands out the ids in `order` (each once until freed); a freed id goes to the back of the
    queue, so freed slots are reused after the ones never used."""

    def __init__(self, what: str, order: Iterable[int]) -> None:
        self.what = what
        self._free: list[int] = list(order)
        self._used: set[int] = set()
        self.size = len(self._free)

    def free_count(self) -> int:
        return len(self._free)

    def free_ids(self) -> list[int]:
        """The free ids, next to be handed out first."""
        return list(self._free)

    def used_ids(self) -> set[int]:
        return set(self._used)

    def take(self) -> int:
        """The next free id; ModelError when none is free."""
        if not self._free:
            raise ModelError(f"no free {self.what} ({self.size} in use)")
        out = self._free.pop(0)
        self._used.add(out)
        return out

    def free(self, slot: int) -> None:
        """Return `slot`; ModelError (nothing changed) when it is not in use."""
        if slot not in self._used:
            raise ModelError(f"free {self.what} {slot}: not in use")
        self._used.remove(slot)
        self._free.append(slot)
