"""The paged KV cache, block tables, the per-call row metadata, and the attention block over them.

A cache holds blocks [num_blocks, block_size, heads, head_dim] per layer (plus one zero block that
masked positions read); a sequence's block table maps position p to block `table[p // block_size]`,
offset `p % block_size`. The scheduler allocates blocks (`BlockAllocator`); the model only checks
that a table covers what it reads and writes.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain

import torch

from reference.errors import ModelError
from reference.model.kernels import Numerics, attention, linear, mlp, rms_norm
from reference.model.weights import BlockWeights
from reference.state import SequenceState

# attend(nm, q, k, v): the rows' new keys and values k, v [M, Hh, D] stored, each row's query q [M, Hh, D]
# attended over its own keys -> [M, Hh, D].
Attend = Callable[[Numerics, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(slots=True)
class PagedKv:
    """Keys and values of `layers` attention layers.

    k, v: [layers, num_blocks + 1, block_size, heads, head_dim]. The extra last block is never
    written and stays zero: `gather` reads it for every position at or past a row's length."""

    k: torch.Tensor
    v: torch.Tensor

    @classmethod
    def zeros(
        cls,
        layers: int,
        num_blocks: int,
        block_size: int,
        heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> PagedKv:
        shape = (layers, num_blocks + 1, block_size, heads, head_dim)
        return cls(torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device))

    @property
    def block_size(self) -> int:
        return self.k.shape[2]

    @property
    def num_blocks(self) -> int:
        return self.k.shape[1] - 1

    def clone(self) -> PagedKv:
        return PagedKv(self.k.clone(), self.v.clone())

    def randomize_(self, gen: torch.Generator) -> None:
        """Fill every block but the zero block with N(0, 1) values drawn from `gen`."""
        for t in (self.k, self.v):
            t[:, :-1].copy_(torch.randn(t[:, :-1].shape, generator=gen, device=gen.device, dtype=torch.float32))

    def write(self, layer: int, blocks: torch.Tensor, offs: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Store row m's k/v [M, Hh, D] at (blocks[m], offs[m]); a (block, offset) pair repeats only
        with the same values."""
        self.k[layer].index_put_((blocks, offs), k)
        self.v[layer].index_put_((blocks, offs), v)

    def gather(self, layer: int, tables: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each row's keys and values through its table [M, nb] -> two [M, nb * block_size, Hh, D];
        positions at or past lengths[m] read zeros (one gather, no masking pass over the result)."""
        bs = self.block_size
        pos = torch.arange(tables.shape[1] * bs, device=tables.device)  # [L]
        flat = tables[:, pos // bs] * bs + pos % bs  # [M, L] rows of the [blocks * BS, Hh, D] view
        flat = torch.where(pos[None, :] < lengths[:, None], flat, self.num_blocks * bs)
        k = self.k[layer].flatten(0, 1)[flat]  # [M, L, Hh, D]
        v = self.v[layer].flatten(0, 1)[flat]
        return k, v

    def rows(self, table: Sequence[int], n_pos: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Positions 0..n_pos-1 of every layer through `table` -> two [layers, n_pos, Hh, D]."""
        nb = math.ceil(n_pos / self.block_size)
        idx = torch.tensor(list(table[:nb]), dtype=torch.long, device=self.k.device)
        k = self.k[:, idx].flatten(1, 2)[:, :n_pos]
        v = self.v[:, idx].flatten(1, 2)[:, :n_pos]
        return k, v


@dataclass(slots=True)
class RowMeta:
    """Device metadata of M rows: each writes its new KV at (write_block, write_off) and attends over
    positions < lengths through tables [M, span_blocks]. With `write_rows`, row m writes the new KV
    of row write_rows[m] instead of its own: a padding row that repeats a real row's slot then
    writes that row's bits, so the write is the same whichever lands last. With `read`, attention
    reads the cache in place: read(q, kv, layer, meta) -> [M, Hh, D] (a kernel over the paged
    cache); without, each row's span is gathered and `attention` runs on it."""

    write_block: torch.Tensor  # [M] int64
    write_off: torch.Tensor  # [M] int64
    tables: torch.Tensor  # [M, span_blocks] int64
    lengths: torch.Tensor  # [M] int64
    write_rows: torch.Tensor | None = None  # [M] int64
    read: Callable[[torch.Tensor, PagedKv, int, RowMeta], torch.Tensor] | None = None


def to_device(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Copy a CPU tensor to `device` without a host sync (through pinned memory on CUDA)."""
    if device.type == "cuda":
        return host.pin_memory().to(device, non_blocking=True)
    return host.to(device)


def pack_sections(sections: Sequence[Sequence[int]], device: torch.device) -> list[torch.Tensor]:
    """Lay int sections end to end in one int64 host tensor, copy it to `device` once, and return a
    view per section."""
    flat = array("q", chain.from_iterable(sections))  # C-speed conversion of many small ints
    host = torch.frombuffer(flat, dtype=torch.long) if flat else torch.zeros(0, dtype=torch.long)
    return list(torch.split(to_device(host, device), [len(s) for s in sections]))


def padded_table(table: Sequence[int], width: int) -> list[int]:
    """`table` cut or zero-padded to `width` entries (padding blocks are only ever read masked)."""
    return list(table[:width]) + [0] * max(0, width - len(table))


def flat_tables(tables: Sequence[Sequence[int]], width: int) -> list[int]:
    """Every table through `padded_table(table, width)`, laid end to end: [len(tables) * width]."""
    flat: list[int] = []
    zeros = [0] * width
    for t in tables:  # list extends, not a comprehension over every entry: a quarter of the time
        flat += t[:width]
        flat += zeros[: max(0, width - len(t))]
    return flat


def row_sections(
    positions: Sequence[int], tables: Sequence[Sequence[int]], span_blocks: int, block_size: int
) -> list[list[int]]:
    """The four host sections of `RowMeta` (write block, write offset, length, flat tables); every
    table must cover its position."""
    return [
        [t[p // block_size] for p, t in zip(positions, tables, strict=True)],
        [p % block_size for p in positions],
        [p + 1 for p in positions],
        flat_tables(tables, span_blocks),
    ]


def row_meta(views: Sequence[torch.Tensor], span_blocks: int) -> RowMeta:
    """`RowMeta` from the four device views of `row_sections`."""
    blocks, offs, lengths, tables = views
    return RowMeta(blocks, offs, tables.view(-1, span_blocks), lengths)


def paged_attend(kv: PagedKv, layer: int, meta: RowMeta) -> Attend:
    """An `Attend` that writes the rows' new keys and values into the cache, then attends each row
    over its span: read in place by `meta.read` when given, else gathered through its table."""

    def attend(nm: Numerics, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        src = meta.write_rows
        if src is None:
            kv.write(layer, meta.write_block, meta.write_off, k, v)
        else:
            kv.write(layer, meta.write_block, meta.write_off, k.index_select(0, src), v.index_select(0, src))
        if meta.read is not None:
            return meta.read(q, kv, layer, meta)
        keys, values = kv.gather(layer, meta.tables, meta.lengths)
        return attention(nm, q, keys, values, meta.lengths)

    return attend


def block_forward(
    nm: Numerics, w: BlockWeights, eps: float, x: torch.Tensor, heads: int, attend: Attend
) -> torch.Tensor:
    """One pre-norm transformer block on rows x [M, H]: x + attn(norm x), then + mlp(norm x), the
    attention by `attend` (see `Attend`)."""
    m, h = x.shape
    xn = rms_norm(nm, x, w.attn_norm, eps)
    q = linear(nm, xn, w.wq).view(m, heads, h // heads)
    k = linear(nm, xn, w.wk).view(m, heads, h // heads)
    v = linear(nm, xn, w.wv).view(m, heads, h // heads)
    o = attend(nm, q, k, v).reshape(m, h)
    x = x + linear(nm, o, w.wo)
    return x + mlp(nm, rms_norm(nm, x, w.mlp_norm, eps), w.w_up, w.w_down)


class BlockAllocator:
    """Hands out block ids of one cache of `num_blocks` blocks of `block_size` positions.
    `generator` shuffles the free list so tables come out scattered."""

    def __init__(self, num_blocks: int, block_size: int, generator: torch.Generator | None = None) -> None:
        order = torch.randperm(num_blocks, generator=generator).tolist() if generator else list(range(num_blocks))
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._free: list[int] = order
        self._used: set[int] = set()

    def free_count(self) -> int:
        return len(self._free)

    def alloc(self, n: int) -> list[int]:
        """n block ids; ModelError when fewer than n are free."""
        if n < 0:
            raise ValueError(f"alloc({n}): expected n >= 0")
        if n > len(self._free):
            raise ModelError(
                f"block allocator exhausted: asked for {n} blocks, {len(self._free)} of {self.num_blocks} free"
            )
        out, self._free = self._free[:n], self._free[n:]
        self._used.update(out)
        return out

    def alloc_for(self, n_positions: int) -> list[int]:
        """Blocks covering positions 0..n_positions-1."""
        return self.alloc(math.ceil(n_positions / self.block_size))

    def sequence(
        self,
        draft: BlockAllocator,
        slot_idx: int,
        ssm_slot: int | None,
        seq_len: int,
        room: int,
        draft_room: int,
    ) -> SequenceState:
        """A `SequenceState` of length seq_len whose main table (from this allocator) covers
        seq_len + room positions and whose drafter table (from `draft`) covers seq_len + draft_room."""
        return SequenceState(
            slot_idx, ssm_slot, seq_len, self.alloc_for(seq_len + room), draft.alloc_for(seq_len + draft_room)
        )

    def free(self, blocks: Sequence[int]) -> None:
        """Return blocks; ModelError (and nothing freed) if any is not allocated or repeats."""
        if len(set(blocks)) != len(blocks) or not set(blocks) <= self._used:
            raise ModelError(f"free({list(blocks)}): blocks repeat or are not allocated")
        self._used.difference_update(blocks)
        self._free.extend(blocks)
