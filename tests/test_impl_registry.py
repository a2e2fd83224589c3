"""The implementation under test is what `--impl` names: its preparation and call contract come from
the module the name points at, never from the module where the step function was defined."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

from batched.vector.model import VectorMtpModel
from batched.vector.step import step_mtp_bootstrap_vectorized
from properties.impl import DEFAULT_IMPL, REGISTRY, canonical, load, plain, short_name
from properties.worlds.specs import ModelSpec
from properties.worlds.world import base_model


@pytest.fixture
def outside_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A module of an engine's own that imports the fully batched step and prepares its own model."""
    (tmp_path / "their_engine.py").write_text(
        textwrap.dedent(
            """
            from batched.vector.step import step_mtp_bootstrap_vectorized as step

            PREPARED = []


            def prepare_model(model):
                PREPARED.append(model)
                return model
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "their_engine"
    sys.modules.pop("their_engine", None)


def test_a_module_that_imports_a_step_is_run_on_its_own_preparation(outside_module: str) -> None:
    impl = load(f"{outside_module}:step")
    assert impl.step is step_mtp_bootstrap_vectorized
    model = base_model(ModelSpec()).clone()
    assert impl.prepare_model(model) is model, "the named module's prepare_model, not batched.vector.step's"
    assert [model] == sys.modules[outside_module].PREPARED
    assert impl.per_row_fast_greedy_calls, "the named module declares no contract: the loop's"


def test_registry_names_resolve_to_their_modules() -> None:
    assert canonical("literal") == DEFAULT_IMPL
    vector = load("vector")
    assert vector.step is step_mtp_bootstrap_vectorized and not vector.per_row_fast_greedy_calls
    assert isinstance(vector.prepare_model(base_model(ModelSpec()).clone()), VectorMtpModel)
    assert load(REGISTRY["vector"].step).prepare is vector.prepare
    assert plain(step_mtp_bootstrap_vectorized).prepare is None


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("vectorr", "expected one of literal, vector, vector-gathered"),
        ("no_such_module:step", "cannot import module 'no_such_module'"),
        ("batched.step:no_such_step", "has no callable 'no_such_step'"),
    ],
)
def test_a_bad_name_is_a_clear_error(name: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        load(name)


def test_a_registry_step_spelled_as_module_function_has_its_short_name() -> None:
    assert short_name("batched.vector.step:step_mtp_bootstrap_vectorized") == "vector"
    assert short_name("batched.step:step_mtp_bootstrap_batched") == "literal"
    assert short_name("vector-gathered") == "vector-gathered" and short_name("pkg.mod:step") == "pkg.mod:step"


@pytest.mark.parametrize(
    ("declares", "says"),
    [
        ('NOISE = "own"\nROW_SAMPLER = 3\n', "ROW_SAMPLER is not callable"),
        ('NOISE = "private"\n', "NOISE is 'private', expected one of coupled, own"),
    ],
)
def test_a_module_that_declares_its_noise_wrongly_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declares: str, says: str
) -> None:
    (tmp_path / "their_noisy_engine.py").write_text(
        "from batched.vector.step import step_mtp_bootstrap_vectorized as step\n" + declares
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ValueError, match=says):
            load("their_noisy_engine:step")
    finally:
        sys.modules.pop("their_noisy_engine", None)


def test_own_noise_without_a_row_sampler_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A declared sampler is a fast path, not a requirement: the step's own draws are tested alone."""
    (tmp_path / "their_plain_engine.py").write_text(
        "from batched.vector.own_noise import step_torch_generators as step\nNOISE = 'own'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        impl = load("their_plain_engine:step")
        assert impl.noise == "own" and impl.sampler is None
    finally:
        sys.modules.pop("their_plain_engine", None)


def test_own_noise_names_come_with_their_row_samplers() -> None:
    for name in ("vector-torch", "vector-torch-batch"):
        impl = load(name)
        assert impl.noise == "own" and callable(impl.sampler), name
    assert load("vector").noise == "coupled" and load("vector").sampler is None


def test_every_impl_option_lists_every_registered_implementation() -> None:
    """The `--impl` help of pytest, the verification job, the nightly and the replays is the registry's own."""
    import subprocess
    import sys

    from properties.impl import REGISTRY, impl_help

    assert all(name in impl_help() for name in REGISTRY)
    for module in ("properties.run.verify", "nightly", "properties.failures.replay", "properties.generations.replay"):
        cmd = [sys.executable, "-m", module, "--help"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
        flat = re.sub(r"-\s+", "-", " ".join(out.split()))  # argparse wraps at hyphens
        assert all(name in flat for name in REGISTRY), f"python -m {module} --help does not list {sorted(REGISTRY)}"
