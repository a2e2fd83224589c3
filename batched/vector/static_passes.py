"""Static-shape passes: the fully batched step's decode, drafter and sampling passes over rows (and
spans) padded to buckets, their inputs in static buffers per shape, replayed as CUDA graphs on a GPU.

Padding. A pass of n rows runs on `row_bucket(n)` rows. Padding rows repeat row 0's inputs (token,
SSM slot, position, tables) and write row 0's bits wherever row 0 writes (`RowMeta.write_rows`; the
SSM store takes its source rows the same way), so the padded pass leaves the caches exactly as an
n-row pass does. Fast numerics also attends over `span_bucket` blocks; exact numerics already
attends over the fixed span. In exact numerics a real row's results are then bit-equal to the
unpadded pass's (the kernels are batch invariant, `reference.model.kernels`); in fast numerics
they are another shape's rounding, which the replay oracle judges as it judges any batched kernel.

Graphs. A `PassCache` keeps one `StaticPass` per shape key. On CUDA, a key's pass is captured as a
graph after `graph_after` eager calls (by default 1: the first call, eager, is also the warm-up that
compiles and initialises whatever its kernels need; 0 captures at the first call) and replayed from
then on; capturing runs nothing. A replay's outputs live in the graph's memory, which the next
replay of any of the cache's graphs may reuse: the caller copies what it keeps before the next pass.
Elsewhere (the CPU, `graph_after` None) every call runs the same padded pass eagerly.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch

from batched.vector.int_pack import packed
from reference.model.paged_kv import to_device

Outputs = tuple[Any, ...]
T = TypeVar("T")


def row_bucket(n: int) -> int:
    """Rows a pass of n >= 1 rows runs on: n rounded up to a multiple of 8 up to 64, of 32 above."""
    step = 8 if n <= 64 else 32
    return -(-n // step) * step


def span_bucket(blocks: int, cap: int) -> int:
    """Blocks a fast pass attends over: the least m * 2**e >= blocks with m in 4..7 (at most a
    quarter more than needed, and few distinct shapes), never more than max(blocks, cap)."""
    e = max(0, blocks.bit_length() - 3)
    return min(-(-blocks >> e) << e, max(blocks, cap))


def padded(values: Sequence[T], rows: int) -> list[T]:
    """`values` (at least one) followed by copies of its first entry, `rows` entries in all."""
    return list(values) + [values[0]] * (rows - len(values))


@dataclass(slots=True)
class StaticPass:
    """One shape's buffers: `ints` holds every integer input (sections laid end to end, `views` one
    per section), `tensors` the other inputs by name; once captured, `graph` and its `outputs`."""

    ints: torch.Tensor
    views: list[torch.Tensor]
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    calls: int = 0
    graph: Any = None  # torch.cuda.CUDAGraph
    outputs: Outputs = ()
    staging: dict[str, Staging] = field(default_factory=dict)  # by input ("": ints), on CUDA

    def load(self, sections: Sequence[Sequence[int]]) -> None:
        """Copy the sections (of the sizes the views were made with) into `ints`, one host copy."""
        flat: list[int] = []
        for section in sections:
            flat += section  # one list, then one conversion: twice as fast as converting a chain
        if len(flat) != self.ints.numel():
            raise ValueError(f"static pass inputs: {len(flat)} integers for a buffer of {self.ints.numel()}")
        self._copy_in("", self.ints, packed(flat))  # packed: a third of array("q")'s time

    def fill(self, name: str, host: torch.Tensor) -> None:
        """Copy the host tensor into the input `name` (same shape and dtype), one host copy."""
        dst = self.tensors[name]
        if host.shape != dst.shape or host.dtype != dst.dtype:
            got, want = f"{host.dtype} {tuple(host.shape)}", f"{dst.dtype} {tuple(dst.shape)}"
            raise ValueError(f"static pass input {name}: {got} for a buffer of {want}")
        self._copy_in(name, dst, host)

    def _copy_in(self, key: str, dst: torch.Tensor, host: torch.Tensor) -> None:
        """dst <- host without a host sync: on CUDA through a pinned buffer kept per input, rewritten
        only once its last copy has landed."""
        if dst.device.type != "cuda":
            dst.copy_(host)
            return
        staged = self.staging.get(key)
        if staged is None:
            staged = self.staging[key] = Staging(torch.empty(dst.shape, dtype=dst.dtype, pin_memory=True))
        staged.copy_to(dst, host)


@dataclass(slots=True)
class Staging:
    """A pinned host buffer that feeds one device buffer, and the event after its last copy."""

    pinned: torch.Tensor
    landed: Any = None  # torch.cuda.Event

    def copy_to(self, dst: torch.Tensor, host: torch.Tensor) -> None:
        if self.landed is None:
            self.landed = torch.cuda.Event()  # recorded after every copy (one event, reused)
        else:
            self.landed.synchronize()  # the previous copy still reads the buffer until it lands
        self.pinned.copy_(host.view(self.pinned.shape))
        dst.copy_(self.pinned, non_blocking=True)
        self.landed.record(torch.cuda.current_stream(dst.device))


@dataclass(slots=True)
class HostCopy:
    """A device tensor's copy on the host, queued without a sync; `values()` waits for it."""

    host: torch.Tensor
    done: Any = None  # torch.cuda.Event recorded after the copy; None: the copy is complete

    @classmethod
    def of(cls, t: torch.Tensor) -> HostCopy:
        """Queue the copy of `t` on its device's current stream (a plain copy off CUDA)."""
        if t.device.type != "cuda":
            return cls(t.to("cpu", copy=True))
        host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
        host.copy_(t, non_blocking=True)
        done = torch.cuda.Event()
        done.record(torch.cuda.current_stream(t.device))
        return cls(host, done)

    def values(self) -> torch.Tensor:
        """The host tensor, once the copy has landed."""
        if self.done is not None:
            self.done.synchronize()
            self.done = None
        return self.host


Specs = dict[str, tuple[tuple[int, ...], torch.dtype]]


@dataclass(slots=True)
class PassCache:
    """The static passes of one model, by shape key, and their graphs (see the module docstring)."""

    device: torch.device
    graph_after: int | None = 1
    passes: dict[tuple[Any, ...], StaticPass] = field(default_factory=dict)
    pool: Any = None
    captures: int = 0
    replays: int = 0
    prepare: Callable[[], None] | None = None  # run once before the first capture (compiling kernels)

    @property
    def graphs(self) -> bool:
        return self.graph_after is not None and self.device.type == "cuda"

    def get(self, key: tuple[Any, ...], sizes: Sequence[int], tensors: Specs | None = None) -> StaticPass:
        """The pass of `key`, made on first use with an integer buffer of sections of `sizes` and the
        named inputs `tensors` gives as (shape, dtype)."""
        p = self.passes.get(key)
        if p is None:
            ints = torch.zeros(sum(sizes), dtype=torch.long, device=self.device)
            named = {k: torch.zeros(shape, dtype=dt, device=self.device) for k, (shape, dt) in (tensors or {}).items()}
            p = self.passes[key] = StaticPass(ints, list(torch.split(ints, list(sizes))), named)
        return p

    def run(self, p: StaticPass, fn: Callable[[], Outputs]) -> tuple[Outputs, bool]:
        """fn()'s outputs for the inputs now in `p`, and whether they came from a graph replay (then
        they are the graph's buffers: copy what must outlive the next pass)."""
        if p.graph is None and self.graphs and p.calls >= (self.graph_after or 0):
            p.graph, p.outputs = self._capture(fn)
        p.calls += 1
        if p.graph is None:
            return fn(), False
        p.graph.replay()
        self.replays += 1
        return p.outputs, True

    def _capture(self, fn: Callable[[], Outputs]) -> tuple[Any, Outputs]:
        """Record fn on the device's capture stream into a graph sharing this cache's memory pool;
        runs nothing."""
        side = capture_stream(self.device)
        if self.pool is None:
            with torch.cuda.stream(side):
                if self.prepare is not None:
                    self.prepare()
            torch.cuda.synchronize(self.device)
            self.pool = torch.cuda.graph_pool_handle()
        main = torch.cuda.current_stream(self.device)
        side.wait_stream(main)
        graph = torch.cuda.CUDAGraph()
        # A garbage collection inside the capture could free pinned host memory or CUDA events, calls
        # a capture forbids (they invalidate it): collect first, then keep the collector off. Calls
        # from other threads do not concern this capture (thread_local).
        gc.collect()
        collecting = gc.isenabled()
        gc.disable()
        try:
            with torch.cuda.stream(side):
                graph.capture_begin(pool=self.pool, capture_error_mode="thread_local")
                try:
                    out = fn()
                finally:
                    graph.capture_end()
        finally:
            if collecting:
                gc.enable()
        main.wait_stream(side)
        self.captures += 1
        return graph, out


@functools.cache
def capture_stream(device: torch.device) -> Any:
    """The one stream every capture on `device` records on, made once per process, its matrix and
    attention libraries initialised on it (a capture must not be the first call into them)."""
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        for dt in (torch.float32, torch.bfloat16):
            a = to_device(torch.ones(8, 8, dtype=dt), device)
            torch.nn.functional.linear(a, a)
            q = a.view(1, 1, 8, 8)
            torch.nn.functional.scaled_dot_product_attention(q, q, q)
    torch.cuda.synchronize(device)
    return stream
