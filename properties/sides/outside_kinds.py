"""The kinds of object the outside check's fingerprints know (`properties.sides.outside_fingerprint`):
by class, how an object is fingerprinted (`kind_of`): an atom by itself, an immutable kind by identity,
a container or another kind with state by its `Handler` in `KINDS`, a function, a class or a tensor by
the walk itself; and which code is the implementation's or the spec's (`owned`), whose functions,
classes and objects are fingerprinted by their state.
"""

from __future__ import annotations

import _thread
import abc
import array
import collections
import contextvars
import dataclasses
import enum
import functools
import hashlib
import logging
import pathlib
import random
import re
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

import torch

from properties.sides.outside_scope import ignored, top

IDENTITY = (
    enum.Enum,
    types.ModuleType,
    types.BuiltinFunctionType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.GenericAlias,
    types.UnionType,
    type(Ellipsis),
    type(NotImplemented),
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
    torch.finfo,
    torch.iinfo,
    re.Pattern,
    type(sys.modules["__future__"].annotations),  # `from __future__ import annotations`
    _thread.LockType,
    _thread.RLock,
    type(abc.ABC.__dict__["_abc_impl"]),
    type(dataclasses.MISSING),
    type(dataclasses._HAS_DEFAULT_FACTORY),  # type: ignore[attr-defined]  # a dataclass __init__'s default
    type(collections.namedtuple("_Pair", "a b").a),  # a named tuple's field accessor
)
IDENTITY_MODULES = frozenset({"typing", "typing_extensions"})  # their constructs are immutable
BY_REPR = (range, slice, pathlib.PurePath)
CACHED_FUNCTION = type(functools.cache(lambda: None))
ATOMS = frozenset({type(None), bool, int, str, bytes})
SLOT_DESCRIPTORS = frozenset({types.MemberDescriptorType, types.GetSetDescriptorType})  # state is in the objects
# A class's attributes that say what it is, not what it holds.
CLASS_STANDARD = frozenset(
    {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__", "__annotations__"}
    | {"__firstlineno__", "__static_attributes__", "__orig_bases__", "__parameters__", "__type_params__"}
    | {"__dataclass_fields__", "__dataclass_params__", "__match_args__", "__abstractmethods__", "_abc_impl"}
    | {"__protocol_attrs__", "__non_callable_proto_members__", "__callable_proto_members_only__", "_is_protocol"}
)
_ABSENT = ("<absent>",)  # a context variable with no value


def type_name(v: Any) -> str:
    """`module.Class` of `v`'s class."""
    return f"{type(v).__module__}.{type(v).__qualname__}"


def bound_in_its_module(v: Any) -> bool:
    """Whether function or class `v` is its defining module's global of its own name."""
    return getattr(sys.modules.get(getattr(v, "__module__", "") or ""), getattr(v, "__name__", ""), None) is v


class Named(tuple):  # type: ignore[type-arg]
    """(name, fingerprint) pairs, sorted by name: an object's or a class's attributes, a mapping's
    items (by `repr` of the key). Equal to the plain tuple; marked so that a report can name the
    attribute or key that differs (`properties.sides.outside.first_difference`)."""

    __slots__ = ()


Fp = Callable[[Any], Any]
Handler = Callable[[Any, Fp], Any]
# How a type is fingerprinted: one of these, or a `Handler` from `KINDS` (`kind_of`).
ATOM, REPR, IDENTICAL, NAMED_REPR, TENSOR, FUNCTION, CLASS, UNKNOWN = (
    "atom",
    "repr",
    "identity",
    "named repr",
    "tensor",
    "function",
    "class",
    "unknown",
)


KIND_OF: dict[type, tuple[Any, bool]] = {}
OWNED: dict[str, bool] = {}


def owned(obj: Any) -> bool:
    """Whether function or class `obj` is code of the implementation's or the spec's: defined in a
    package that is neither the standard library's, a library's nor the suite's
    (`properties.sides.outside_scope.ignored`), watched or not (remembered by module)."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return False
    known = OWNED.get(module)
    if known is None:
        known = OWNED[module] = not ignored(top(module))
    return known


def kind_of(cls: type) -> tuple[Any, bool]:
    """How objects of class `cls` are fingerprinted (the module docstring), and whether `cls` is
    `owned`; remembered by class."""
    np = sys.modules.get("numpy")
    if issubclass(cls, enum.Enum) or issubclass(cls, IDENTITY) or cls.__module__ in IDENTITY_MODULES:
        kind: Any = IDENTICAL
    elif cls is type(None) or issubclass(cls, bool | int | str | bytes):
        kind = ATOM
    elif issubclass(cls, float | complex):
        kind = REPR
    elif _enum_like(cls) and not owned(cls):
        kind = IDENTICAL
    elif issubclass(cls, BY_REPR):
        kind = NAMED_REPR
    elif issubclass(cls, torch.Tensor):
        kind = TENSOR
    elif issubclass(cls, types.FunctionType):
        kind = FUNCTION
    elif issubclass(cls, type):
        kind = CLASS
    else:
        kinds = KINDS + (_numpy_kinds(np) if np is not None else ())
        kind = next((how for of, how in kinds if issubclass(cls, of)), UNKNOWN)
    KIND_OF[cls] = (kind, owned(cls))
    return KIND_OF[cls]


def _numpy_kinds(np: Any) -> tuple[tuple[Any, Handler], ...]:
    def array(v: Any, fp: Fp) -> Any:
        content = fp(v.tolist()) if v.dtype.hasobject else hashlib.blake2b(v.tobytes(), digest_size=16).digest()
        return ("ndarray", v.shape, str(v.dtype), content)

    return (
        (np.ndarray, array),
        (np.generic, lambda v, fp: ("numpy", str(v.dtype), v.tobytes())),
        (np.random.Generator, lambda v, fp: ("numpy generator", fp(v.bit_generator.state))),
        (np.random.RandomState, lambda v, fp: ("numpy random state", fp(v.get_state(legacy=False)))),
    )


def _enum_like(cls: type) -> bool:
    """Whether `cls` is an extension's enumeration (pybind11's: a `__members__` mapping)."""
    return isinstance(getattr(cls, "__members__", None), dict) and hasattr(cls, "name")


def object_state(v: Any) -> dict[str, Any]:
    """Every attribute an object holds: its `__dict__`, and each slot of every class in its MRO (a
    slot a subclass declares again keeps the base's under `Base.name`)."""
    state = dict(getattr(v, "__dict__", None) or {})
    for klass in type(v).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            name = _mangled(klass, slot)
            slot_of = klass.__dict__.get(name)
            if not isinstance(slot_of, types.MemberDescriptorType):
                continue  # __dict__ and __weakref__
            try:
                value = slot_of.__get__(v, type(v))
            except AttributeError:
                continue  # never set
            state[name if name not in state else f"{klass.__qualname__}.{name}"] = value
    return state


def _mangled(klass: type, slot: str) -> str:
    if slot.startswith("__") and not slot.endswith("__") and klass.__name__.strip("_"):
        return f"_{klass.__name__.lstrip('_')}{slot}"
    return slot


def _items(pairs: Any, fp: Fp) -> tuple[Any, ...]:
    return Named(sorted(((repr(k), fp(x)) for k, x in pairs), key=lambda kv: kv[0]))


def _members(xs: Any, fp: Fp) -> tuple[Any, ...]:
    return tuple(sorted(repr(fp(x)) for x in xs))


def _dict(v: dict[Any, Any], fp: Fp) -> Any:
    factory = fp(v.default_factory) if isinstance(v, collections.defaultdict) else None
    return ("dict", _items(list(v.items()), fp), factory)


def _logger(v: logging.Logger, fp: Fp) -> Any:
    return ("logger", v.name, v.level, v.disabled, v.propagate, tuple(map(id, v.handlers)), tuple(map(id, v.filters)))


def _memoryview(v: memoryview, fp: Fp) -> Any:
    try:
        return ("memoryview", v.tobytes())
    except ValueError:
        return ("memoryview", "released")


KINDS: tuple[tuple[Any, Handler], ...] = (
    (list | tuple, lambda v, fp: (type(v).__name__, tuple(fp(x) for x in v))),
    (dict, _dict),
    (set | frozenset, lambda v, fp: (type(v).__name__, _members(v, fp))),
    (bytearray, lambda v, fp: ("bytearray", bytes(v))),
    (memoryview, _memoryview),
    (array.array, lambda v, fp: ("array", v.typecode, v.tobytes())),
    (collections.deque, lambda v, fp: ("deque", v.maxlen, tuple(fp(x) for x in list(v)))),
    (collections.ChainMap, lambda v, fp: ("chain map", fp(v.maps))),
    (collections.UserDict | collections.UserList | collections.UserString, lambda v, fp: ("user", fp(v.data))),
    (types.MappingProxyType, lambda v, fp: ("mapping proxy", _items(list(v.items()), fp))),
    (types.SimpleNamespace, lambda v, fp: ("namespace", _items(vars(v).items(), fp))),
    (weakref.WeakValueDictionary, lambda v, fp: ("weak values", _items(list(v.items()), fp))),
    (weakref.WeakKeyDictionary, lambda v, fp: ("weak keys", _items(((fp(k), x) for k, x in list(v.items())), fp))),
    (weakref.WeakSet, lambda v, fp: ("weak set", _members(list(v), fp))),
    (weakref.ref, lambda v, fp: ("weakref", fp(v()))),
    (functools.partial, lambda v, fp: ("partial", fp(v.func), fp(v.args), fp(v.keywords))),
    (types.MethodType, lambda v, fp: ("method", fp(v.__func__), fp(v.__self__))),
    (staticmethod | classmethod, lambda v, fp: (type(v).__name__, fp(v.__func__))),
    (property, lambda v, fp: ("property", fp(v.fget), fp(v.fset), fp(v.fdel))),
    (functools.cached_property, lambda v, fp: ("cached property", fp(v.func))),
    (CACHED_FUNCTION, lambda v, fp: ("cached function", fp(v.__wrapped__))),  # its cache is not state
    (torch.Generator, lambda v, fp: ("generator", str(v.device), bytes(v.get_state().numpy()))),
    (random.Random, lambda v, fp: ("random", v.getstate())),
    (contextvars.ContextVar, lambda v, fp: ("context variable", v.name, fp(v.get(_ABSENT)))),
    (logging.Logger, _logger),
)
