"""The public API (`properties.api`): its names and signatures as pinned (`tests/api_pin.txt`), the
README's hand-built case run as written (and failing against a step that does nothing), and the
old names kept for one release, each with its warning (`properties.moved`)."""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import properties.api as api
from tests.api_pin import pin

ROOT = Path(__file__).resolve().parents[1]
NULL_STEP = "mutants.wrong_steps.null:do_nothing"


def test_the_api_is_as_pinned() -> None:
    pinned = (ROOT / "tests" / "api_pin.txt").read_text()
    now = pin()
    gone = sorted(set(pinned.splitlines()) - set(now.splitlines()))
    new = sorted(set(now.splitlines()) - set(pinned.splitlines()))
    assert now == pinned, (
        "properties.api changed: a deliberate change rewrites the pin (python -m tests.api_pin > tests/api_pin.txt), "
        "and a removed or renamed name keeps a shim that warns (properties.moved)\n"
        + "".join(f"  - {x}\n" for x in gone)
        + "".join(f"  + {x}\n" for x in new)
    )


def test_every_public_name_is_there() -> None:
    assert sorted(api.__all__) == sorted(set(api.__all__))
    assert all(hasattr(api, n) for n in api.__all__)


def readme_case() -> str:
    """The Python block of the README's "A hand-built case" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## A hand-built case", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "README.md: no python block under 'A hand-built case'"
    return found.group(1)


def readme_tests(namespace: dict[str, Any]) -> list[Any]:
    exec(compile(readme_case(), "README.md (A hand-built case)", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests, "the README's case defines no test"
    return tests


def test_the_readmes_hand_built_case_passes_as_written() -> None:
    code = readme_case()
    assert len([line for line in code.splitlines() if line.strip()]) <= 10, "the README promises ten lines"
    for test in readme_tests({}):
        test()


def test_the_readmes_hand_built_case_fails_against_a_step_that_does_nothing() -> None:
    def against_null(spec: api.WorldSpec, impl: Any = None, **kw: Any) -> api.SideBySide:
        return api.check_world(spec, NULL_STEP, **kw)

    for test in readme_tests({}):
        test.__globals__["check_world"] = against_null
        with pytest.raises(AssertionError, match=r"a hand-built case: .* difference"):
            test()


def test_check_world_takes_the_runs_implementation_and_its_checks() -> None:
    spec = api.WorldSpec(seqs=(api.SeqSpec(),), bootstrap=(0,))
    run = api.RunConfig(impl_name=NULL_STEP)
    with pytest.raises(AssertionError):
        api.check_world(spec, run=run)
    assert api.check_world(spec, run=run, checks=()).under_test.name == NULL_STEP  # no check: nothing to fail


def fresh_import(name: str) -> Any:
    """`name` imported anew (the warning comes once per import)."""
    sys.modules.pop(name, None)
    return importlib.import_module(name)


@pytest.mark.parametrize(
    "old, name, new",
    [
        ("properties.compare", "check_equivalence", "properties.checks.compare"),
        ("properties.call_checks", "check_calls", "properties.checks.calls"),
        ("properties.log_checks", "check_logs", "properties.checks.logs"),
        ("properties.generation_run", "run_script", "properties.generations.run"),
    ],
)
def test_a_moved_module_still_imports_and_warns_where_it_went(old: str, name: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"{re.escape(old)} moved to {re.escape(new)}"):
        module = fresh_import(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_the_old_run_config_and_compare_untouched_keep_their_meaning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        current = fresh_import("properties.run_config").current
        old_compare = fresh_import("properties.compare").compare_untouched
    assert isinstance(current(), api.RunConfig)
    seqs = (api.SeqSpec(slot_idx=0, ssm_slot=0), api.SeqSpec(slot_idx=1, ssm_slot=1))
    world = api.run_side_by_side(api.WorldSpec(seqs=seqs, bootstrap=(0,)), api.load("literal"))
    before, after = world.before.active[1], world.impl.world.active[1]
    models = (world.before.model, world.impl.world.model)
    assert old_compare(*models, before, after) == []
    after.output_tokens.append(1)
    assert old_compare(*models, before, after) == api.compare_untouched(before, after)
    assert api.compare_untouched(before, after), "a changed untouched sequence must be reported"


def test_the_checks_package_exports_its_checks() -> None:
    import properties.checks as checks

    assert checks.check_equivalence is api.check_equivalence and checks.Mismatch is api.Mismatch
    with pytest.raises(AttributeError):
        checks.no_such_check  # noqa: B018


def test_load_without_a_name_warns_that_it_is_the_literal_step() -> None:
    with pytest.warns(DeprecationWarning, match="literal step"):
        assert api.load().step is api.load("literal").step
