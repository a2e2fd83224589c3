"""Fingerprints of module state for the outside check (`properties.sides.outside`): values that
compare equal exactly when the state they stand for is the same, and a record of every kind of object
met that was compared by identity only (its state could change unseen).

By value: data (numbers, strings, containers, `deque`, `array.array`, `SimpleNamespace`, weak
mappings and sets, `bytearray`), tensors and NumPy arrays by a hash of their bytes (written through
`.data` or `.numpy()`, a tensor's version counter does not move), random generators by their state
(torch, `random.Random`, NumPy), context variables by their current value, loggers by their
configuration, partials, bound methods and cached functions by what they wrap; and the code of the
implementation and the spec (`outside_kinds.owned`: what no library, the standard library nor the suite
defines): its functions and classes (a function's defaults, closure cells and attributes; a class's
attributes, its methods' defaults among them), and its classes' objects (their `__dict__` and the
slots of every class in their MRO). Immutable kinds (enum members, modules, built-in functions,
torch's dtypes and devices, typing constructs, compiled patterns, locks) and libraries' functions
and classes by identity, as code. Anything else by identity, recorded.
"""

from __future__ import annotations

import enum
import hashlib
import types
from typing import Any

import torch

from properties.sides.outside_kinds import (
    ATOM,
    ATOMS,
    CLASS,
    CLASS_STANDARD,
    FUNCTION,
    IDENTICAL,
    KIND_OF,
    NAMED_REPR,
    REPR,
    SLOT_DESCRIPTORS,
    TENSOR,
    Fp,
    Named,
    bound_in_its_module,
    kind_of,
    object_state,
    owned,
    type_name,
)

MAX_DEPTH = 8


class Walk:
    """One snapshot's walk over module state: the fingerprints of shared objects taken so far
    (functions, classes, objects of the implementation's classes, kept with their objects so that no
    id is reused while the walk lasts) and `gaps`, the kinds met since it was last reset that were
    compared by identity only."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[Any, Any, tuple[str, ...]]] = {}
        self.gaps: list[str] = []
        self.path: set[int] = set()  # the ids of the objects being fingerprinted (a cycle stops there)
        self.fps: list[Fp] = [self._fp(d + 1) for d in range(MAX_DEPTH + 1)]

    def _fp(self, depth: int) -> Fp:
        """`of` at `depth`, answering the atoms without a call."""
        of = self.of

        def fp(x: Any) -> Any:
            return x if type(x) in ATOMS else of(x, depth)

        return fp

    def of(self, v: Any, depth: int = 0) -> Any:
        """The fingerprint of `v` (the module docstring), `depth` levels below a module global."""
        cls = type(v)
        kind, mine = KIND_OF.get(cls) or kind_of(cls)
        if kind is ATOM:
            return v
        if kind is REPR:
            return repr(v)  # NaN equal to NaN
        if kind is IDENTICAL:
            return ("id", id(v))
        if kind is NAMED_REPR:
            return (cls.__name__, repr(v))
        if kind is TENSOR:
            return self.tensor(v)
        key = id(v)
        if key in self.path:
            return ("id", key)  # a cycle: fingerprinted above
        if depth >= MAX_DEPTH:
            self.gaps.append(f"{type_name(v)} deeper than {MAX_DEPTH} levels")
            return ("id", key)
        if not mine and callable(kind):
            self.path.add(key)
            value = kind(v, self.fps[depth])
            self.path.discard(key)
            return value
        hit = self.memo.get(key)
        if hit is not None:
            self.gaps.extend(hit[2])
            return hit[1]
        start = len(self.gaps)
        self.path.add(key)
        value = self._shared(v, kind, mine, self.fps[depth])
        self.path.discard(key)
        self.memo[key] = (v, value, tuple(self.gaps[start:]))
        return value

    def _shared(self, v: Any, kind: Any, mine: bool, fp: Fp) -> Any:
        """A function, a class, an object of one of the implementation's classes (`mine`), or one of
        an unknown kind."""
        if kind is FUNCTION:
            return self.function(v, fp)
        if kind is CLASS:
            return self.cls(v, fp)
        if mine:
            state = Named(sorted((k, fp(x)) for k, x in object_state(v).items()))
            return ("object", id(type(v)), kind(v, fp) if callable(kind) else None, state)
        self.gaps.append(type_name(v))
        return ("id", id(v))

    def tensor(self, t: torch.Tensor) -> Any:
        """Shape, dtype, layout, version and a hash of the bytes (when strided and on a real device)."""
        try:
            version = t._version
        except RuntimeError:  # an inference tensor keeps no version counter
            version = None
        head = ("tensor", id(t), version, tuple(t.shape), t.dtype, str(t.device), t.layout)
        if t.layout != torch.strided or t.is_quantized or t.is_nested or t.device.type == "meta":
            self.gaps.append(f"tensor ({t.layout}, {t.device.type})")
            return head
        data = t.detach().resolve_conj().resolve_neg().cpu().contiguous().reshape(-1).view(torch.uint8)
        return (*head, tuple(t.stride()), t.storage_offset(), hashlib.blake2b(data.numpy(), digest_size=16).digest())

    def function(self, v: types.FunctionType, fp: Fp) -> Any:
        """The implementation's function by its defaults, closure cells and attributes (a
        `functools.singledispatch` function by its registry); another's by identity (recorded when it
        is a closure made at run time)."""
        if not owned(v):
            if v.__closure__ and not bound_in_its_module(v):
                self.gaps.append(f"closure {v.__module__}.{v.__qualname__}")
            return ("id", id(v))
        attrs = vars(v)
        if isinstance(attrs.get("registry"), types.MappingProxyType) and "dispatch" in attrs:
            return ("single dispatch", id(v), fp(attrs["registry"]))  # its closure holds a dispatch cache
        if v.__defaults__ is None and v.__kwdefaults__ is None and v.__closure__ is None and not attrs:
            return ("function", id(v))
        cells = tuple(fp(c.cell_contents) if _filled(c) else "<empty>" for c in v.__closure__ or ())
        mine = Named(sorted((k, fp(x)) for k, x in attrs.items() if k != "__wrapped__"))
        return ("function", id(v), fp(v.__defaults__), fp(v.__kwdefaults__), cells, mine)

    def cls(self, v: type, fp: Fp) -> Any:
        """The implementation's class by its own attributes: the methods its module defines by their
        defaults and closures, a function another module put on it (a test's spy) by identity. An
        enumeration or a library's class by identity."""
        if not owned(v) or issubclass(v, enum.Enum):
            return ("id", id(v))
        home = v.__module__
        data = Named(
            sorted(
                (k, ("function", id(x)) if _foreign(x, home) else fp(x))
                for k, x in vars(v).items()
                if k not in CLASS_STANDARD and type(x) not in SLOT_DESCRIPTORS
            )
        )
        return ("class", id(v), data)


def _foreign(x: Any, module: str) -> bool:
    """Whether `x` is a function defined in another module than `module`."""
    return isinstance(x, types.FunctionType) and x.__module__ != module


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True
