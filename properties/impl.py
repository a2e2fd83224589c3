"""The implementation under test, as one `Impl`: its step, the model it runs on, its call contract
and its noise.

A short name from `REGISTRY` (`literal`, the default; `vector`; `vector-gathered`; the own-noise
samplers `vector-torch`, `vector-torch-batch` and, on a GPU with FlashInfer, `flashinfer` and
`flashinfer-batch`), a name
another installed package registers under the `mtp_bootstrap_verify.impls` entry-point group (its
value a `module:function`), or `module:function` for any other step with the signature
`(model, active, sched, idxs, ladder_nd, verify_ctx) -> None`. Everything besides the step comes
from the registry entry or from the module the name points at, never from the module where the
function happens to be defined. What a module may say:

- `prepare_model(model) -> model`: the model the step runs on, given the world's (default: the
  world's model itself).
- `PER_ROW_FAST_GREEDY_CALLS = False`: greedy rows the batched argmax does not serve are argmaxed
  inside a batched pass, with no per-row `argmax_on_device` call (default True, as the loop does).
- `NOISE = "own"`: the step samples with its own randomness, not the reference's counter-based
  noise (default "coupled": every token bit-equal to the reference's). Its sampled tokens are then
  checked for support on its own rows, and the step's draws in distribution, for independence across
  seeds and positions and for seed invariance (`properties.sampling`), whatever the noise.
- `ROW_SAMPLER` (optional, with own noise): the step's sampler as a `reference.row_request.RowSampler`.
  Every token the step draws must then be that sampler's for the same row and request
  (`properties.sides.own_noise`), and the sampler is tested alone with many more draws
  (`properties.sampling.test_distribution`, `test_seed_invariance`).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Literal

from reference.row_request import RowSampler

StepFn = Callable[..., Any]
Noise = Literal["coupled", "own"]
NOISES: tuple[Noise, ...] = ("coupled", "own")
ENTRY_POINT_GROUP = "mtp_bootstrap_verify.impls"


@dataclass(slots=True, frozen=True)
class Entry:
    """A registry entry: the step as `module:function`, and what differs from its module's own
    declarations (a preparation, the noise, the row sampler, each as `module:function`)."""

    step: str
    prepare: str | None = None
    noise: Noise | None = None
    sampler: str | None = None


REGISTRY: dict[str, Entry] = {
    "literal": Entry("batched.step:step_mtp_bootstrap_batched"),
    "vector": Entry("batched.vector.step:step_mtp_bootstrap_vectorized"),
    # The fully batched step on a model that never takes the paged kernel: in fast numerics its
    # attention is then the reference's own kernel over each row's gathered span. The kernel rounds
    # otherwise, and in bfloat16 that alone forces more near-ties than the budget allows, so a GPU
    # checks the step's logic in bf16 this way and the kernel in fast float32.
    "vector-gathered": Entry(
        "batched.vector.step:step_mtp_bootstrap_vectorized", prepare="batched.vector.step:prepare_gathered_model"
    ),
    # Samplers with their own randomness (an exponential race on torch generators): one generator
    # per request, seeded from its seed and position; one generator for the whole batch.
    "vector-torch": Entry(
        "batched.vector.own_noise:step_torch_generators",
        noise="own",
        sampler="batched.vector.own_noise:sample_rows_torch_generators",
    ),
    "vector-torch-batch": Entry(
        "batched.vector.own_noise:step_one_generator",
        noise="own",
        sampler="batched.vector.own_noise:sample_rows_one_generator",
    ),
    # FlashInfer's top-k/top-p sampling kernels (a GPU and the `flashinfer` extra).
    "flashinfer": Entry(
        "batched.flashinfer_sampler:step_flashinfer", noise="own", sampler="batched.flashinfer_sampler:sample_rows"
    ),
    "flashinfer-batch": Entry(
        "batched.flashinfer_sampler:step_flashinfer_batch",
        noise="own",
        sampler="batched.flashinfer_sampler:sample_rows_batch",
    ),
}
DEFAULT_IMPL = REGISTRY["literal"].step


def impl_help() -> str:
    """The help text of every `--impl` option, from the registry: what a name may be."""
    names = ", ".join(f"{n} (default)" if n == "literal" else n for n in REGISTRY)
    others = f"a name another package registers (entry points {ENTRY_POINT_GROUP})"
    return f"the implementation under test: {names}, {others} or module:function"


def register(name: str, entry: Entry) -> None:
    """Add `name` to the registry (a package's own implementations; see `ENTRY_POINT_GROUP`)."""
    if name in REGISTRY and REGISTRY[name] != entry:
        raise ValueError(f"implementation name {name!r} is already registered as {REGISTRY[name]}")
    REGISTRY[name] = entry


def _entry(name: str) -> Entry | None:
    """The registry entry for `name`, looking in installed packages' entry points when it is no
    name of the suite's own."""
    if name in REGISTRY:
        return REGISTRY[name]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return Entry(ep.value)
    return None


@dataclass(slots=True, frozen=True)
class Impl:
    """An implementation under test: `name` as the user gave it, the step, the model preparation
    (None: the world's model as it is), whether greedy rows outside the batched argmax make the
    per-row `argmax_on_device` call, its noise and, for own noise, its row sampler."""

    name: str
    step: StepFn
    prepare: Callable[[Any], Any] | None = None
    per_row_fast_greedy_calls: bool = True
    noise: Noise = "coupled"
    sampler: RowSampler | None = None

    def prepare_model(self, model: Any) -> Any:
        """The model the step runs on for a world whose model is `model`."""
        return model if self.prepare is None else self.prepare(model)

    def with_step(self, step: StepFn) -> Impl:
        """The same implementation with `step` in place of its own (a wrapper that traces or asserts)."""
        return replace(self, step=step)

    def as_loop(self, step: StepFn | None = None) -> Impl:
        """This implementation where a dispatch ran the per-sequence loop in its place (the gate
        closed): its model preparation kept, the loop's call contract and coupled noise (the loop
        makes the per-row argmax calls and draws the reference's noise, whatever the batched step
        declares); `step` in place of its own where given."""
        return replace(self, step=step or self.step, per_row_fast_greedy_calls=True, noise="coupled", sampler=None)


def canonical(name: str) -> str:
    """`module:function` for a registry name, else `name` itself."""
    entry = _entry(name)
    return entry.step if entry is not None else name


def short_name(name: str) -> str:
    """The registry name for `name`: itself when it is one, the entry whose step `name` spells as
    `module:function` with its module's own preparation, else `name` unchanged."""
    if name in REGISTRY:
        return name
    plain = [short for short, e in REGISTRY.items() if e == Entry(name)]
    return plain[0] if plain else name


def _module(spec: str, module_name: str) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"--impl {spec!r}: cannot import module {module_name!r}: {e}") from e


def _attr(name: str, spec: str) -> Any:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        known = ", ".join(REGISTRY)
        raise ValueError(f"--impl {name!r}: expected one of {known}, or module:function such as {DEFAULT_IMPL}")
    return getattr(_module(name, module_name), attr, None)


def load(name: str | None = None) -> Impl:
    """The implementation `name`; a ValueError names what was wrong. Without a name, the literal
    step, with a DeprecationWarning: it once meant the run's selected implementation, and a name
    will be required in the next release (the run's own is `run.impl`)."""
    if name is None:
        warnings.warn(
            "load() without a name is the literal step, not the run's implementation: name one "
            "(load('literal')), or take the run's (run.impl, check_world(spec, run=run))",
            DeprecationWarning,
            stacklevel=2,
        )
        name = DEFAULT_IMPL
    entry = _entry(name) or Entry(name)
    module_name = entry.step.partition(":")[0]
    fn = _attr(name, entry.step)
    if not callable(fn):
        raise ValueError(f"--impl {name!r}: module {module_name!r} has no callable {entry.step.partition(':')[2]!r}")
    module = _module(name, module_name)
    prepare = _attr(name, entry.prepare) if entry.prepare else getattr(module, "prepare_model", None)
    if prepare is not None and not callable(prepare):
        raise ValueError(f"--impl {name!r}: {module_name}.prepare_model is not callable")
    contract = getattr(module, "PER_ROW_FAST_GREEDY_CALLS", True)
    if not isinstance(contract, bool):
        raise ValueError(f"--impl {name!r}: {module_name}.PER_ROW_FAST_GREEDY_CALLS must be True or False")
    noise = entry.noise or getattr(module, "NOISE", "coupled")
    if noise not in NOISES:
        raise ValueError(f"--impl {name!r}: {module_name}.NOISE is {noise!r}, expected one of {', '.join(NOISES)}")
    sampler = _attr(name, entry.sampler) if entry.sampler else getattr(module, "ROW_SAMPLER", None)
    if sampler is not None and not callable(sampler):
        raise ValueError(
            f"--impl {name!r}: {module_name}.ROW_SAMPLER is not callable (a reference.row_request.RowSampler)"
        )
    return Impl(name, fn, prepare, contract, noise, sampler if noise == "own" else None)


def plain(step: StepFn, name: str = "") -> Impl:
    """`step` on the world's model, with the loop's call contract (a test's own wrapper step)."""
    return Impl(name or getattr(step, "__qualname__", "step"), step)
