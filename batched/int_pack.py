"""Python ints to native int64 bytes at C speed: `struct` packs a list about three times as fast as
`array("q", ...)` converts it (2,900 ints: 16 against 45 µs), and it packs straight into a buffer
that already exists, such as the pinned memory behind a host-to-device copy."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence

import torch


def pack_into(buffer: object, values: Sequence[int]) -> None:
    """Write `values` as native int64s at the start of the writable `buffer`. Raises TypeError naming
    the problem when a value is not an integer in int64 range (as `array("q", ...)` refuses)."""
    try:
        struct.pack_into(f"{len(values)}q", buffer, 0, *values)  # type: ignore[arg-type]
    except struct.error as e:
        raise TypeError(f"int64 packing: {e}") from None


def packed(values: Sequence[int]) -> torch.Tensor:
    """`values` as a new int64 CPU tensor [len(values)]; TypeError as `pack_into`."""
    buf = bytearray(8 * len(values))
    pack_into(buf, values)
    return torch.frombuffer(buf, dtype=torch.long) if buf else torch.zeros(0, dtype=torch.long)


def writable_view(t: torch.Tensor) -> ctypes.Array:
    """A writable buffer over the bytes of the contiguous CPU tensor `t` (pinned memory included),
    valid while `t` lives: the caller keeps both."""
    if t.device.type != "cpu" or not t.is_contiguous():
        raise ValueError(f"writable_view: needs a contiguous CPU tensor, got {t.device} contiguous={t.is_contiguous()}")
    return (ctypes.c_char * (t.numel() * t.element_size())).from_address(t.data_ptr())
