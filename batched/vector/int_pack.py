"""Python ints to native int64 at C speed: `struct` packs a list about three times as fast as
`array("q", ...)` converts it (2,900 ints: 16 against 45 µs on the development CPU)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import torch


def packed(values: Sequence[int]) -> torch.Tensor:
    """`values` as a new int64 CPU tensor [len(values)]. Raises TypeError naming the problem when a
    value is not an integer in int64 range (what `array("q", ...)` refuses)."""
    buf = bytearray(8 * len(values))
    try:
        struct.pack_into(f"{len(values)}q", buf, 0, *values)
    except struct.error as e:
        raise TypeError(f"int64 packing: {e}") from None
    return torch.frombuffer(buf, dtype=torch.long) if buf else torch.zeros(0, dtype=torch.long)
