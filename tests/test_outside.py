"""What a step changes outside its world fails every property that runs it, naming what changed:
module state, the model's configuration and weights (put back), the global generators, the
environment, the logger, the model object it was given."""

from __future__ import annotations

import dataclasses
import importlib
import os
import queue
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest
import torch

import batched.step as literal
from batched.step import step_mtp_bootstrap_batched
from properties.impl import REGISTRY, Entry, load, plain
from properties.sides import outside_scope, outside_weights
from properties.sides.harness import run_side_by_side
from properties.worlds.specs import SeqSpec, WorldSpec
from properties.worlds.world import base_model
from reference.telemetry import log

SPEC = WorldSpec(seqs=(SeqSpec(slot_idx=0, ssm_slot=0), SeqSpec(slot_idx=1, ssm_slot=1)), bootstrap=(0, 1))


def then(change: Callable[[Any], None]) -> Callable[..., None]:
    """The default step, then `change(model)`."""

    def step(model, active, sched, idxs, ladder_nd, verify_ctx) -> None:  # type: ignore[no-untyped-def]
        step_mtp_bootstrap_batched(model, active, sched, idxs, ladder_nd, verify_ctx)
        change(model)

    return step


def bind_a_module(_: Any) -> None:
    literal.helpers = dataclasses  # type: ignore[attr-defined]  # a module, not batched.step's submodule


def set_module_global(_: Any) -> None:
    literal.FIRST_ERROR_SEEN = True  # type: ignore[attr-defined]


def grow_module_list(_: Any) -> None:
    literal.__dict__.setdefault("_SEEN", []).append(1)


def set_class_attribute(_: Any) -> None:
    type(base_model(SPEC.model)).cached_cap = 8  # type: ignore[attr-defined]


def write_weights(model: Any) -> None:
    model.weights.final_norm.mul_(2.0)


def draw_global_rng(_: Any) -> None:
    torch.rand(1)


def set_environment(_: Any) -> None:
    os.environ["MTP_STEP_WAS_HERE"] = "1"


def quiet_logger(_: Any) -> None:
    log.disabled = True


CHANGES = {
    "module batched.step global FIRST_ERROR_SEEN": set_module_global,
    "module batched.step global helpers": bind_a_module,
    "module batched.step global _SEEN": grow_module_list,
    "cached_cap": set_class_attribute,
    "weight final_norm": write_weights,
    "torch CPU random state": draw_global_rng,
    "environment": set_environment,
    "logger metrale.scheduler": quiet_logger,
}


def flip_cudnn_benchmark(_: Any) -> None:
    torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark


def prepare_then(change: Callable[[Any], None]) -> Callable[[Any], Any]:
    """A `prepare_model` that does `change(model)` and runs the step on the world's model."""

    def prepare(model: Any) -> Any:
        change(model)
        return model

    return prepare


PREPARED = {
    "module batched.step global FIRST_ERROR_SEEN": set_module_global,
    "weight final_norm": write_weights,
    "torch cudnn flags": flip_cudnn_benchmark,
    "environment": set_environment,
}


@pytest.fixture(autouse=True)
def undo() -> Any:
    """Put back what the changes below change, so that no other test sees them."""
    env, rng, cls = dict(os.environ), torch.get_rng_state(), type(base_model(SPEC.model))
    benchmark = torch.backends.cudnn.benchmark
    yield
    torch.backends.cudnn.benchmark = benchmark
    for name in ("FIRST_ERROR_SEEN", "_SEEN", "helpers"):
        literal.__dict__.pop(name, None)
    if "cached_cap" in vars(cls):
        delattr(cls, "cached_cap")
    os.environ.clear()
    os.environ.update(env)
    torch.set_rng_state(rng)
    log.disabled = False


@pytest.mark.parametrize("what", CHANGES)
def test_a_change_outside_the_world_fails_and_is_named(what: str) -> None:
    weights = base_model(SPEC.model).weights.final_norm.clone()
    with pytest.raises(AssertionError, match="outside the world") as failed:
        run_side_by_side(SPEC, plain(then(CHANGES[what])))
    assert what in str(failed.value)
    assert torch.equal(base_model(SPEC.model).weights.final_norm, weights), "weights written are put back"


@pytest.mark.parametrize("what", PREPARED)
def test_a_preparation_that_changes_state_outside_the_world_fails_and_is_named(
    what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`prepare_model` runs inside the watch: it may build a new model, never change what exists;
    even in a process's first example, before any copy of the weights was taken."""
    monkeypatch.setattr(outside_weights, "PRISTINE", {})
    weights = base_model(SPEC.model).weights.final_norm.clone()
    impl = dataclasses.replace(plain(step_mtp_bootstrap_batched), prepare=prepare_then(PREPARED[what]))
    with pytest.raises(AssertionError, match="outside the world") as failed:
        run_side_by_side(SPEC, impl)
    assert what in str(failed.value)
    assert torch.equal(base_model(SPEC.model).weights.final_norm, weights), "weights written are put back"


def test_a_preparation_that_builds_a_new_model_passes() -> None:
    """The fully batched step's preparation wraps the world's model in a new `VectorMtpModel`."""
    sbs = run_side_by_side(SPEC, load("vector"))
    assert sbs.outside == [] and sbs.impl.error is None
    assert type(sbs.impl.world.model).__name__ == "VectorMtpModel"


def test_a_report_names_what_was_not_fingerprinted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A queue's contents are not fingerprinted: filling it is no change, but a failure's report
    says that it was compared by identity only."""
    monkeypatch.setattr(literal, "PENDING", queue.Queue(), raising=False)
    sbs = run_side_by_side(SPEC, plain(then(lambda _: literal.PENDING.put(1))))  # type: ignore[attr-defined]
    assert sbs.outside == [] and sbs.impl.error is None
    with pytest.raises(AssertionError, match="FIRST_ERROR_SEEN") as failed:
        run_side_by_side(SPEC, plain(then(set_module_global)))
    assert "not fingerprinted: batched.step.PENDING (queue.Queue)" in str(failed.value)


def test_a_frozen_configuration_and_the_model_given_refuse_writes() -> None:
    def raise_cap(model: Any) -> None:
        model.cfg.mtp_propose_batch_max = 8

    def set_attribute(model: Any) -> None:
        model.holds = {}

    for change, error in ((raise_cap, dataclasses.FrozenInstanceError), (set_attribute, AttributeError)):
        sbs = run_side_by_side(SPEC, plain(then(change)))
        assert isinstance(sbs.impl.error, error), sbs.impl.error


def test_a_step_that_changes_nothing_outside_passes() -> None:
    sbs = run_side_by_side(SPEC, plain(step_mtp_bootstrap_batched))
    assert sbs.outside == [] and sbs.impl.error is None


def test_a_submodule_imported_during_the_step_is_not_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """The import system binds a submodule in its package: a step that imports code lazily changes
    no state of its own (a kernel compiled on first use, an optional sampler)."""
    import batched

    name = "batched.flashinfer_sampler"
    importlib.import_module(name)
    monkeypatch.delitem(sys.modules, name)  # put back, with the package's binding, after the test
    monkeypatch.delattr(batched, "flashinfer_sampler")
    sbs = run_side_by_side(SPEC, plain(then(lambda _: importlib.import_module(name))))
    assert sbs.outside == [] and sbs.impl.error is None and name in sys.modules


LIBRARY = "a_sampling_library"  # stands for a library the step calls, whose name is also the step's name


def step_that_warms_a_library(model, active, sched, idxs, ladder_nd, verify_ctx) -> None:  # type: ignore[no-untyped-def]
    """The default step, calling a library that registers its kernel on first use."""
    step_mtp_bootstrap_batched(model, active, sched, idxs, ladder_nd, verify_ctx)
    sys.modules[LIBRARY].REGISTRY.setdefault("sampling", object())  # type: ignore[attr-defined]


def test_a_library_the_suite_depends_on_keeps_its_own_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library the suite depends on (FlashInfer's sampler is registered as `flashinfer`) keeps its
    first-use cache: that is the library's, unless the step is the library's own (a root). Any other
    package the step reaches is watched, whatever its name."""
    library = types.ModuleType(LIBRARY)
    library.REGISTRY = {}  # type: ignore[attr-defined]
    library.step = step_that_warms_a_library  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LIBRARY, library)
    monkeypatch.setitem(REGISTRY, LIBRARY, Entry(f"{__name__}:step_that_warms_a_library"))
    with pytest.raises(AssertionError, match=f"module {LIBRARY} global REGISTRY"):
        run_side_by_side(SPEC, load(LIBRARY))  # not a library of the suite's: watched
    library.REGISTRY.clear()  # type: ignore[attr-defined]
    known = outside_scope.library_packages()
    monkeypatch.setattr(outside_scope, "library_packages", lambda: known | {LIBRARY})
    sbs = run_side_by_side(SPEC, load(LIBRARY))
    assert sbs.outside == [] and sbs.impl.error is None and "sampling" in library.REGISTRY
    library.REGISTRY.clear()  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match=f"module {LIBRARY} global REGISTRY"):
        run_side_by_side(SPEC, load(f"{LIBRARY}:step"))  # a module's step: its package is watched
