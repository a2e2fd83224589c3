"""The environment switches, read only through `SchedCtx.from_env` / `Levers.from_env`, and worlds
that no environment variable reaches (they are built from their spec alone)."""

from __future__ import annotations

import pytest

from properties.failures.promote import REGRESSIONS, load_regression
from properties.worlds.world import base_model, build_world
from reference.sched_ctx import (
    ENV_DFLASH_UNIFIED_CTX,
    ENV_NO_BATCH_BOOTSTRAP,
    ENV_NO_BOOT_ARGMAX,
    ENV_PROPOSE_META_STRIDE,
    Levers,
    SchedCtx,
)

OFF_SWITCHES = [(ENV_NO_BATCH_BOOTSTRAP, "mtp_batch_bootstrap"), (ENV_NO_BOOT_ARGMAX, "mtp_boot_argmax")]


@pytest.mark.parametrize(("name", "lever"), OFF_SWITCHES)
@pytest.mark.parametrize("value", ["1", "true", "yes", "ON", "anything"])
def test_a_no_switch_set_turns_its_lever_off(name: str, lever: str, value: str) -> None:
    assert getattr(SchedCtx.from_env({name: value}).levers, lever) is False


@pytest.mark.parametrize(("name", "lever"), OFF_SWITCHES)
@pytest.mark.parametrize("value", [None, "", "  ", "0", "false", "FALSE", "no", "off"])
def test_a_no_switch_unset_empty_or_false_leaves_its_lever_on(name: str, lever: str, value: str | None) -> None:
    env = {} if value is None else {name: value}
    assert getattr(SchedCtx.from_env(env).levers, lever) is True


@pytest.mark.parametrize(("name", "lever"), OFF_SWITCHES)
def test_a_no_switch_overrides_a_lever_turned_on_by_the_caller(name: str, lever: str) -> None:
    assert getattr(Levers.from_env({name: "1"}, **{lever: True}), lever) is False


@pytest.mark.parametrize(
    ("value", "expected"), [(None, True), ("1", True), ("yes", True), ("0", False), ("false", False), ("Off", False)]
)
def test_the_unified_ctx_switch_is_a_boolean(value: str | None, expected: bool) -> None:
    env = {} if value is None else {ENV_DFLASH_UNIFIED_CTX: value}
    assert SchedCtx.from_env(env).levers.dflash_unified_ctx is expected


def test_the_unified_ctx_switch_unset_keeps_the_callers_value() -> None:
    assert Levers.from_env({}, dflash_unified_ctx=False).dflash_unified_ctx is False


@pytest.mark.parametrize("value", ["", "2", "maybe"])
def test_a_malformed_unified_ctx_switch_is_an_error_naming_it(value: str) -> None:
    with pytest.raises(ValueError, match=ENV_DFLASH_UNIFIED_CTX):
        SchedCtx.from_env({ENV_DFLASH_UNIFIED_CTX: value})


def test_no_switch_reaches_a_world_from_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = load_regression(REGRESSIONS / "b25-meta-stride-overflow-logs-at-debug.json")
    clean = build_world(spec)
    for name in (ENV_NO_BATCH_BOOTSTRAP, ENV_NO_BOOT_ARGMAX):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv(ENV_DFLASH_UNIFIED_CTX, "0")
    monkeypatch.setenv(ENV_PROPOSE_META_STRIDE, "5")
    base_model.cache_clear()
    dirty = build_world(spec)
    assert dirty.model.meta_stride == clean.model.meta_stride != 5
    assert dirty.sched.levers == clean.sched.levers
