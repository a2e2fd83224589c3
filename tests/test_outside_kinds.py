"""Each kind of module state the outside check fingerprints by value: a step that changes it is
reported, one that only reads it is not (`properties.sides.outside`).

Every case is a small implementation written to a temporary directory and imported: its modules'
globals hold the state, its `step` changes it, its `look` only reads it."""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from properties.sides import outside

Make = Callable[[dict[str, str]], str]


@pytest.fixture
def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Make]:
    """`make(files)`: writes `files` (path: source, `{p}` standing for a fresh name in both) under a
    directory on `sys.path` and returns the fresh name; the modules are forgotten after the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def write(files: dict[str, str]) -> str:
        p = f"outside_kind_{uuid.uuid4().hex[:10]}"
        names.append(p)
        for path, source in files.items():
            target = tmp_path / path.format(p=p)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(source).replace("{p}", p))
        importlib.invalidate_caches()
        return p

    yield write
    for name in [m for m in sys.modules if any(m.startswith(p) for p in names)]:
        del sys.modules[name]


def changed(act: Callable[[], Any], roots: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """What `act` changed in the modules watched from `roots` (the process and no model besides)."""
    before = outside.snapshot([], roots)
    act()
    return [c for c in outside.changes(before, outside.snapshot([], roots)) if c[0].startswith("module ")]


# name: (the module's source, the global its step changes)
KINDS = {
    "deque": ("import collections\nX = collections.deque([1])\ndef step(): X.append(2)", "X"),
    "namespace": ("import types\nX = types.SimpleNamespace(n=0)\ndef step(): X.n += 1", "X"),
    "weak values": (
        "import weakref\nclass K: pass\nKEEP = K()\nX = weakref.WeakValueDictionary()\ndef step(): X['a'] = KEEP",
        "X",
    ),
    "weak keys": (
        "import weakref\nclass K: pass\nKEEP = K()\nX = weakref.WeakKeyDictionary()\ndef step(): X[KEEP] = 1",
        "X",
    ),
    "array": ("import array\nX = array.array('i', [1, 2])\ndef step(): X[0] = 5", "X"),
    "numpy array": ("import numpy\nX = numpy.zeros(3)\ndef step(): X[1] = 1.0", "X"),
    "tensor through .data": ("import torch\nX = torch.zeros(3)\ndef step(): X.data[0] = 1.0", "X"),
    "tensor through .numpy()": ("import torch\nX = torch.zeros(3)\ndef step(): X.numpy()[0] = 1.0", "X"),
    "function default": ("def X(v, seen=[]): seen.append(v)\ndef step(): X(1)", "X"),
    "keyword default": ("def X(*, seen={}): seen['n'] = 1\ndef step(): X()", "X"),
    "inherited slots": (
        "class Base:\n    __slots__ = ('count',)\nclass Child(Base):\n    __slots__ = ()\n"
        "X = Child()\nX.count = 0\ndef step(): X.count += 1",
        "X",
    ),
    "private slot of a base": (
        "class Base:\n    __slots__ = ('__n',)\n    def bump(self): self.__n = 1\nclass Child(Base):\n    pass\n"
        "X = Child()\ndef step(): X.bump()",
        "X",
    ),
    "method default": ("class X:\n    def note(self, seen=[]): seen.append(1)\ndef step(): X().note()", "X"),
    "dunder dict": ("__cache__ = {}\ndef step(): __cache__['k'] = 1", "__cache__"),
    "dunder counter": ("__counter__ = 0\ndef step():\n    global __counter__\n    __counter__ += 1", "__counter__"),
    "module __getattr__'s closure": (
        "def _lazy():\n    seen = {}\n    def get(name): return seen.setdefault(name, len(seen))\n    return get\n"
        "__getattr__ = _lazy()\ndef step(): __getattr__('x')",
        "__getattr__",
    ),
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_that_changes_it_is_reported_and_one_that_reads_it_is_not(make: Make, kind: str) -> None:
    source, name = KINDS[kind]
    p = make({"{p}.py": source + f"\ndef look(): return repr({name})\n"})
    module = importlib.import_module(p)
    assert changed(module.look, (p,)) == []
    found = changed(module.step, (p,))
    assert len(found) == 1 and re.fullmatch(rf"module {p} global {re.escape(name)}([.\[].*)?", found[0][0]), found


def test_a_factory_made_closure_is_fingerprinted_where_it_is_kept(make: Make) -> None:
    """A function another module's factory made, kept as this module's global: no module binds it
    under its own name, so its closure is this module's state."""
    factory = "def make():\n    seen = []\n    def note(v): seen.append(v)\n    return note\n"
    p = make({"{p}_factory.py": factory, "{p}.py": "from {p}_factory import make\nNOTE = make()\ndef step(): NOTE(1)"})
    module = importlib.import_module(p)
    assert [c[0] for c in changed(module.step, (p,))] == [f"module {p} global NOTE"]


def test_a_single_dispatch_function_is_its_registry_not_its_cache(make: Make) -> None:
    source = "import functools\n@functools.singledispatch\ndef show(v): return 'any'\ndef look(): show(1.5)\n"
    p = make({"{p}.py": source + "def step(): show.register(int, lambda v: 'int')"})
    module = importlib.import_module(p)
    assert changed(module.look, (p,)) == []  # a first call of a type fills the dispatch cache
    assert [c[0] for c in changed(module.step, (p,))] == [f"module {p} global show[<class 'int'>]"]


def test_a_standard_module_attribute_is_not_state(make: Make) -> None:
    """The warnings module records a warning shown in the module's `__warningregistry__`."""
    p = make({"{p}.py": "import warnings\ndef step(): warnings.warn('once', UserWarning, stacklevel=1)"})
    module = importlib.import_module(p)
    with pytest.warns(UserWarning):
        assert changed(module.step, (p,)) == []
    assert "__warningregistry__" in vars(module)


def test_the_packages_a_step_imports_from_are_watched(make: Make) -> None:
    """A step in `their_engine.step` that keeps its state in another top-level package of its own,
    reached through a third: both are watched, the libraries it imports are not."""
    p = make(
        {
            "{p}_engine/__init__.py": "",
            "{p}_engine/step.py": "import torch, json\nfrom {p}_utils import cache\ndef step(): cache.remember(1)",
            "{p}_utils/__init__.py": "",
            "{p}_utils/cache.py": "from {p}_store.table import STORE\ndef remember(v): STORE.append(v)",
            "{p}_store/__init__.py": "",
            "{p}_store/table.py": "STORE = []",
        }
    )
    step = importlib.import_module(f"{p}_engine.step").step
    roots = outside.packages_of(step.__module__)
    assert {f"{p}_engine", f"{p}_utils", f"{p}_store"} <= outside.snapshot([], roots).packages
    assert not {"torch", "json", "properties"} & outside.snapshot([], roots).packages
    found = [c[0] for c in changed(step, roots)]  # the list, under each module that binds it
    assert found == [f"module {p}_store.table global STORE", f"module {p}_utils.cache global STORE"]


def test_an_object_of_an_unknown_kind_is_named_not_fingerprinted(make: Make) -> None:
    """A queue holds state the check cannot see into: it is compared by identity, never fails the
    check, and is listed, for the implementation and in the report of a change."""
    p = make({"{p}.py": "import queue\nQ = queue.Queue()\nN = [0]\ndef step(): Q.put(1)\ndef other(): N.append(1)"})
    module = importlib.import_module(p)
    assert [u for u in outside.unwatched((p,)) if u[0].startswith(p)] == [(f"{p}.Q", "queue.Queue")]
    assert changed(module.step, (p,)) == []  # unseen, as recorded
    note = outside.not_fingerprinted(outside.snapshot([], (p,)), limit=1000)
    assert note is not None and note.startswith("not fingerprinted: ") and f"{p}.Q (queue.Queue)" in note
    assert outside.not_fingerprinted(outside.Outside()) is None
