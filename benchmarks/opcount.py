"""Count the device work a call issues, without a profiler: a `TorchDispatchMode` that sees every
aten operator.

`device_ops` counts operators that touch a tensor on the counted device and are neither views nor
bare allocations: on a GPU each is about one kernel launch or copy (a few operators launch more
than one kernel). `host_reads` counts device-to-host reads (`.item()`, `.tolist()`, `.cpu()` of a
device tensor): on a GPU each one waits for the device (on the CPU, `.item()` counts). No CUPTI or
profiler state is involved, so counting leaves later timings untouched.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

NO_KERNEL = frozenset({"empty", "empty_strided", "empty_like", "is_pinned", "_pin_memory", "set_", "resize_"})
HOST_READS = frozenset({"_local_scalar_dense"})
COPIES = frozenset({"_to_copy", "copy_"})


@dataclass(slots=True)
class OpCounts:
    device_ops: int = 0
    host_reads: int = 0


def _tensors(xs: Iterable[Any]) -> list[torch.Tensor]:
    return [x for x in tree_leaves(list(xs)) if isinstance(x, torch.Tensor)]


def _is_view(func: torch._ops.OpOverload) -> bool:
    """The operator returns an alias of an input that it does not write (a view)."""
    return any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns)


class OpCounter(TorchDispatchMode):
    """Counts the device operators and host reads of the calls made while it is active, and the
    operators by name, each under the label `label()` gives when it is issued ("" by default; the
    phase running, for `benchmarks.phases`)."""

    def __init__(self, device: torch.device, label: Callable[[], str] = lambda: "") -> None:
        super().__init__()
        self.device_type = device.type
        self.label = label
        self.ops: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()
        self.by_op: defaultdict[str, Counter[str]] = defaultdict(Counter)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        inputs, outputs = _tensors([args, kwargs]), _tensors([out])
        label = self.label()
        on_device = any(t.device.type == self.device_type for t in inputs + outputs)
        if on_device and name not in NO_KERNEL and not _is_view(func):
            self.ops[label] += 1
            self.by_op[label][name] += 1
        if _reads_to_host(name, func, args, inputs, outputs, self.device_type):
            self.reads[label] += 1
        return out


def _reads_to_host(
    name: str,
    func: torch._ops.OpOverload,
    args: tuple[Any, ...],
    inputs: list[torch.Tensor],
    outputs: list[torch.Tensor],
    device_type: str,
) -> bool:
    """The operator moves data from a `device_type` tensor into host memory (on the CPU: a Python
    number read out of a tensor)."""
    if name in HOST_READS:
        return any(t.device.type == device_type for t in inputs)
    if name not in COPIES or not inputs or device_type == "cpu":
        return False
    if name == "copy_":  # copy_(dst, src)
        dst, src = args[0], args[1]
        return isinstance(src, torch.Tensor) and src.device.type == device_type and dst.device.type == "cpu"
    return inputs[0].device.type == device_type and any(t.device.type == "cpu" for t in outputs)


def count_ops(fn: Callable[[], object], device: torch.device | str) -> OpCounts:
    """Run `fn()` once and return what it issued on `device`."""
    with OpCounter(torch.device(device)) as counter:
        fn()
    return OpCounts(counter.ops[""], counter.reads[""])
