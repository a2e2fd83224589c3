"""The reference on another device than the implementation (fast numerics only): worlds copied
between devices bit for bit, the implementation's side brought back before any check, and bugs
still caught. On the CPU the two "devices" are `cpu` and `cpu:0` (the same memory, different
names), which runs every copy of the cross-device path; with a GPU the implementation runs on it."""

from __future__ import annotations

import functools

import pytest
import torch

from batched.step import step_mtp_bootstrap_batched
from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.checks.world_state import state_buffers
from properties.config import RunConfig
from properties.impl import load, plain
from properties.sides.harness import run_side_by_side
from properties.worlds.fixed_sample import fixed_sample
from properties.worlds.specs import ModelSpec, WorldSpec
from properties.worlds.strategies import world_specs
from properties.worlds.world import build_world, on_device

EXAMPLES = 12


def reference_device_for(device: str, numerics: str, env: dict[str, str]) -> str:
    """Where the configuration built on the CPU from `env` puts the reference for `device`."""
    from properties.config import reference_device_for as resolve

    return resolve(device, numerics, env.get("MTP_VERIFY_REFERENCE_DEVICE", "same"))


@functools.lru_cache(maxsize=2)
def specs(device: str) -> tuple[WorldSpec, ...]:
    """Fast bf16 P1 examples with the implementation on `device` and the reference on the CPU."""
    run = RunConfig(device, "fast", ("bfloat16",), 12, "cpu")
    return tuple(fixed_sample(world_specs(run), EXAMPLES))


def impl_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu:0"


def test_a_world_on_another_device_holds_the_same_bits_and_is_independent() -> None:
    spec = specs("cpu:0")[3]
    world = build_world(spec, "cpu")
    moved = on_device(world, "cpu:0")
    before, after = state_buffers(world.model), state_buffers(moved.model)
    assert before.keys() == after.keys()
    for name in before:
        assert torch.equal(before[name], after[name]), name
    moved.model.kv.k.add_(1.0)
    assert torch.equal(state_buffers(world.model)["kv.k"], before["kv.k"])


def test_copy_state_from_refuses_another_shape_and_writes_nothing() -> None:
    small = build_world(WorldSpec(model=ModelSpec(num_slots=2)), "cpu").model
    large = build_world(WorldSpec(model=ModelSpec(num_slots=4)), "cpu").model
    kept = small.kv.k.clone()
    with pytest.raises(ValueError, match=r"kv\.k differs"):
        small.copy_state_from(large)
    assert torch.equal(small.kv.k, kept)


def test_a_reference_on_another_device_needs_fast_numerics() -> None:
    with pytest.raises(ValueError, match="needs fast numerics"):
        ModelSpec(device="cuda", numerics="exact", dtype="float32", reference_device="cpu")
    assert ModelSpec(device="cuda", numerics="fast", reference_device="cpu").ref_device == "cpu"
    assert ModelSpec(device="cuda").ref_device == "cuda"


@pytest.mark.parametrize(
    ("value", "device", "numerics", "want"),
    [
        (None, "cuda", "fast", ""),
        ("same", "cuda", "fast", ""),
        ("cpu", "cuda", "fast", "cpu"),
        ("cpu", "cpu", "fast", ""),
        ("cpu", "cpu", "exact", ""),
    ],
)
def test_reference_device_switch(value: str | None, device: str, numerics: str, want: str) -> None:
    env = {} if value is None else {"MTP_VERIFY_REFERENCE_DEVICE": value}
    assert reference_device_for(device, numerics, env) == want


@pytest.mark.parametrize("value", ["gpu", "CPU", "cuda"])
def test_reference_device_switch_names_a_bad_value(value: str) -> None:
    with pytest.raises(ValueError, match="MTP_VERIFY_REFERENCE_DEVICE"):
        reference_device_for("cuda", "fast", {"MTP_VERIFY_REFERENCE_DEVICE": value})


def test_exact_numerics_refuse_a_cpu_reference_for_cuda() -> None:
    with pytest.raises(ValueError, match="needs fast numerics"):
        reference_device_for("cuda", "exact", {"MTP_VERIFY_REFERENCE_DEVICE": "cpu"})


def check(spec: WorldSpec, impl=None) -> list[str]:  # type: ignore[no-untyped-def]
    sbs = run_side_by_side(spec, plain(impl) if impl is not None else load("literal"))
    assert sbs.ref.world.model.device == torch.device("cpu")
    assert sbs.impl.world.model.device == torch.device("cpu")  # brought back before the checks
    return [m.field for m in check_equivalence(sbs) + check_calls(sbs)]


def test_cross_device_examples_agree() -> None:
    device = impl_device()
    for spec in specs(device):
        assert spec.model.device == device and spec.model.ref_device == "cpu"
        assert check(spec) == [], spec.to_json()


def stray_write(model, active, sched, idxs, ladder_nd, verify_ctx):  # type: ignore[no-untyped-def]
    """The batched step, then one drafter KV block nobody owns overwritten (the last real block)."""
    step_mtp_bootstrap_batched(model, active, sched, idxs, ladder_nd, verify_ctx)
    model.draft_kv.k[0, -2].fill_(7.0)


def wrong_token(model, active, sched, idxs, ladder_nd, verify_ctx):  # type: ignore[no-untyped-def]
    """The batched step, then the first emitted token of the step moved to its neighbour id."""
    lens = [len(a.output_tokens) for a in active]
    step_mtp_bootstrap_batched(model, active, sched, idxs, ladder_nd, verify_ctx)
    for a, n in zip(active, lens, strict=True):
        if len(a.output_tokens) > n:
            a.output_tokens[n] = (a.output_tokens[n] + 1) % model.vocab_size()
            return


@pytest.mark.parametrize("bug", [stray_write, wrong_token])
def test_cross_device_examples_still_catch_bugs(bug) -> None:  # type: ignore[no-untyped-def]
    caught = [spec for spec in specs(impl_device()) if check(spec, bug)]
    assert len(caught) >= EXAMPLES // 2, f"{bug.__name__} caught in {len(caught)} of {EXAMPLES} examples"
