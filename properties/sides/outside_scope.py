"""Which modules the outside check watches (`properties.sides.outside`).

Modules are watched by their top-level package: every loaded package except those below, and the
roots (the spec's, `reference` and `batched`, and the implementation's) even when they are. So a step
in `their_engine.step` that keeps its state in `their_engine_utils.cache`, or anywhere else outside
the libraries, is watched there, however the step reaches it. Never watched (`ignored`):
- the standard library: `sys.stdlib_module_names`, the built-in modules, any module whose file
  lies in the standard library's directory (`_sysconfigdata_...`);
- the libraries the suite itself depends on and what they depend on (`library_packages`): their
  state is theirs (a kernel registered on first use, a compiled-graph cache), and torch's global
  flags and generators are watched as facts instead;
- the suite's own package, `properties` (its counters and captures change on every run), and its
  tooling (`SUITE_TOOLING`: the mutation runner, the nightly, the jobs, the benchmarks), unless the
  implementation is in one of them (a wrong step of `mutants.wrong_steps`);
- the test runner's own modules (`test_runner`): a `tests` package, test files and conftests as
  pytest names them. In a run of the whole test suite they hold large tables and fixtures, and
  fingerprinting them made every side-by-side example three times slower; a step's state has no
  business there;
- `MACHINERY`: the import system's, the editable install's finder, the runner's `__main__` and
  execnet's channel module (pytest-xdist's workers talk through them while a step runs), Cython's
  runtime modules.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import os
import re
import sys
import sysconfig
import types
from collections.abc import Iterable
from typing import Any

SUITE_PACKAGE = "properties"
SUITE_TOOLING = ("mutants", "nightly", "jobs", "benchmarks")
TEST_RUNNER = re.compile(r"(tests?|testing|conftest|test_\w*|\w*_test)")

# The distributions the suite depends on (pyproject's dependencies, extras included, and NumPy).
LIBRARIES = (
    "torch",
    "numpy",
    "hypothesis",
    "pytest",
    "pytest-benchmark",
    "pytest-xdist",
    "xgrammar",
    "safetensors",
    "ruff",
    "fakeredis",
    "redis",
    "matplotlib",
    "hypofuzz",
    "flashinfer-python",
)
# Their import names, for an interpreter whose distributions carry no metadata.
LIBRARY_FALLBACK = frozenset(
    {"torch", "torchgen", "functorch", "triton", "numpy", "hypothesis", "_hypothesis_pytestplugin", "pytest"}
    | {"_pytest", "pluggy", "xdist", "pytest_benchmark", "xgrammar", "safetensors", "flashinfer", "sympy"}
)


def top(module_name: str) -> str:
    """The top-level package of a dotted module name."""
    return module_name.partition(".")[0]


def _normal(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def _requirements(dist: str) -> list[str]:
    """The distributions `dist` requires unconditionally (no extra's), or none when not installed."""
    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []
    out = []
    for req in reqs:
        name, _, marker = req.partition(";")
        found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", name)
        if found and "extra" not in marker:
            out.append(_normal(found.group(1)))
    return out


@functools.cache
def library_packages() -> frozenset[str]:
    """The top-level import names of the standard library, of `LIBRARIES` and of every distribution
    they require, transitively (computed once a process)."""
    dists, todo = set(), [_normal(d) for d in LIBRARIES]
    while todo:
        d = todo.pop()
        if d not in dists:
            dists.add(d)
            todo += _requirements(d)
    names = {t for t, ds in metadata.packages_distributions().items() if any(_normal(d) in dists for d in ds)}
    return frozenset(names | LIBRARY_FALLBACK | set(sys.stdlib_module_names) | set(sys.builtin_module_names))


MACHINERY = (
    "_frozen_importlib",
    "__editable__",
    "__main__",
    "__mp_main__",
    "__channelexec__",
    "_cython_",
    "cython_runtime",
)


def _stdlib_dirs() -> tuple[str, ...]:
    paths = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib", vars={"platbase": sys.base_exec_prefix})}
    return tuple(os.path.join(p, "") for p in paths if p)


def _in_stdlib(package: str) -> bool:
    """Whether the module named `package` has a file in the standard library's directory."""
    known = _STDLIB_FILE.get(package)
    if known is None:
        file = getattr(sys.modules.get(package), "__file__", None) or ""
        known = file.startswith(_stdlib_dirs()) and "-packages" + os.sep not in file
        _STDLIB_FILE[package] = known
    return known


_STDLIB_FILE: dict[str, bool] = {}


def ignored(package: str) -> bool:
    """Whether top-level package `package` is never watched unless a root (the module docstring)."""
    return (
        package == SUITE_PACKAGE
        or package in SUITE_TOOLING
        or test_runner(package)
        or package in library_packages()
        or package.startswith(MACHINERY)
        or _in_stdlib(package)
    )


def test_runner(package: str) -> bool:
    """Whether top-level module `package` is the test runner's: a `tests` package, a test file or a
    conftest by pytest's naming (`test_*.py`, `*_test.py`, `conftest.py`)."""
    return TEST_RUNNER.fullmatch(package) is not None


def _modules_by_package() -> dict[str, list[str]]:
    """The names in `sys.modules` by top-level package, kept while `sys.modules` keeps its size and
    its last entry."""
    key = (len(sys.modules), next(reversed(sys.modules), None))
    if _BY_PACKAGE.get("key") != key:
        grouped: dict[str, list[str]] = {}
        for name in list(sys.modules):
            grouped.setdefault(top(name), []).append(name)
        _BY_PACKAGE.clear()
        _BY_PACKAGE.update(key=key, grouped=grouped)
    return _BY_PACKAGE["grouped"]


_BY_PACKAGE: dict[str, Any] = {}


def modules_of(packages: Iterable[str]) -> list[tuple[str, types.ModuleType]]:
    """(name, module) for every loaded module of `packages`."""
    grouped = _modules_by_package()
    out = []
    for package in packages:
        for name in grouped.get(package, ()):
            module = sys.modules.get(name)
            if isinstance(module, types.ModuleType):
                out.append((name, module))
    return out


def watched_packages(roots: Iterable[str]) -> frozenset[str]:
    """`roots` (minus the suite's own) and every loaded top-level package that is not `ignored`."""
    loaded = (p for p in _modules_by_package() if not ignored(p))
    return frozenset(r for r in (*roots, *loaded) if r and r != SUITE_PACKAGE)
