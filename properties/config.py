"""What a run checks, as objects built once at the edge: `RunConfig` (device, numerics, dtypes, mix
size, model size, reference device, the implementation, the near-tie budget, where replays go) and
`Tolerance` (how two runs' numbers are compared in one numerics mode and dtype).

`RunConfig.build` takes the options a person gave (pytest's, or a job's command line), then the
environment (`MTP_VERIFY_<OPTION>`), then the defaults: the one place of the project that reads the
suite's environment variables. Properties take the configuration as the `run` fixture of
`properties.run.plugin`, jobs as an argument; nothing reads it at import time.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from properties.impl import DEFAULT_IMPL, Impl, load
from properties.tolerance import Tolerance
from reference.model.modes import DType, NumericsMode

ENV_PREFIX = "MTP_VERIFY_"
NUMERICS = tuple(m.value for m in NumericsMode)
DTYPES = tuple(d.value for d in DType)
REFERENCE_DEVICES = ("same", "cpu")  # where the reference step runs
# Model sizes: `small` is the suite's test model (hidden 32, vocabulary 512 or 601); `serving` has a
# serving model's width and vocabulary (hidden 1024 in 8 heads, the 129280 ids of an MTP model's
# tokenizer: ids past 32767 and 65535, which 16-bit packing gets wrong), for GPU runs.
MODEL_SIZES: dict[str, tuple[int, int, int] | None] = {"small": None, "serving": (1024, 8, 129280)}
# Largest mix by device when none is given. A GPU checks the batch sizes an engine serves; the CPU
# keeps examples cheap but goes past the exact numerics' row tile (8), so the multi-tile path of
# every batched pass is checked on every run.
DEFAULT_MAX_N = {"cpu": 12, "cuda": 64}
DEFAULT_FORCED_BUDGET = 0.01
DEFAULT_REPLAYS = Path(".hypothesis") / "replays"
# The options `build` reads, each also `MTP_VERIFY_<NAME>` in the environment.
OPTIONS = (
    "device",
    "numerics",
    "dtype",
    "max_n",
    "model",
    "reference_device",
    "impl",
    "forced_budget",
    "replays",
    "threads",
)


@dataclass(slots=True, frozen=True)
class RunConfig:
    """One run's configuration (see the module docstring). `impl_name` as given (a registry name or
    `module:function`); `impl` is that implementation."""

    device: str = "cpu"
    numerics: NumericsMode = NumericsMode.EXACT
    dtypes: tuple[DType, ...] = (DType.FLOAT64, DType.FLOAT32)
    max_n: int = DEFAULT_MAX_N["cpu"]
    reference_device: str = ""  # "": the reference runs on `device` too
    model: str = "small"
    impl_name: str = DEFAULT_IMPL
    forced_budget: float = DEFAULT_FORCED_BUDGET
    replays: Path = DEFAULT_REPLAYS
    threads: int = 1  # torch intra-op threads of the process that runs the properties

    @property
    def impl(self) -> Impl:
        """The implementation under test."""
        return load(self.impl_name)

    @property
    def exact(self) -> bool:
        """Exact numerics: both sides bit for bit."""
        return self.numerics is NumericsMode.EXACT

    def tolerance(self, dtype: DType | str) -> Tolerance:
        """How this run compares numbers of `dtype`."""
        return Tolerance(self.numerics, DType(dtype))

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")

    def with_device(self, device: str) -> RunConfig:
        """This configuration on `device` (a worker's own `cuda:i`)."""
        return dataclasses.replace(self, device=device)

    @classmethod
    def build(cls, options: Mapping[str, Any], env: Mapping[str, str]) -> RunConfig:
        """The configuration `options` (None where not given) and then `env` ask for, defaults for the
        rest. A ValueError names the option (and the variable) that is wrong."""
        raw = {name: option_or_env(name, options, env) for name in OPTIONS}
        device = raw["device"] or "cpu"
        if device == "best":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device != "cpu" and not device.startswith("cuda"):
            raise ValueError(f"{_name('device')}={device!r}: expected cpu, cuda, cuda:N or best")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"{_name('device')}={device}: no CUDA device is visible")
        numerics = NumericsMode(_choice("numerics", raw["numerics"] or "exact", NUMERICS))
        on_gpu = device.startswith("cuda")
        if raw["dtype"]:
            dtypes: tuple[DType, ...] = (DType(_choice("dtype", raw["dtype"], DTYPES)),)
        elif numerics is NumericsMode.EXACT:
            dtypes = (DType.FLOAT32,) if on_gpu else (DType.FLOAT64, DType.FLOAT32)
        else:
            dtypes = (DType.BFLOAT16,) if on_gpu else (DType.FLOAT32,)
        max_n = _number("max_n", raw["max_n"], int, DEFAULT_MAX_N["cuda" if on_gpu else "cpu"])
        if max_n < 1:
            raise ValueError(f"{_name('max_n')}={max_n}: expected a positive integer")
        budget = _number("forced_budget", raw["forced_budget"], float, DEFAULT_FORCED_BUDGET)
        if not 0.0 <= budget <= 1.0:
            raise ValueError(f"{_name('forced_budget')}={budget}: expected a fraction in [0, 1]")
        return cls(
            device=device,
            numerics=numerics,
            dtypes=dtypes,
            max_n=max_n,
            model=_choice("model", raw["model"] or "small", tuple(MODEL_SIZES)),
            reference_device=reference_device_for(device, numerics, raw["reference_device"] or "same"),
            impl_name=str(raw["impl"] or DEFAULT_IMPL),
            forced_budget=budget,
            replays=Path(raw["replays"]) if raw["replays"] else DEFAULT_REPLAYS,
            threads=_number("threads", raw["threads"], int, 1),
        )

    def options(self) -> list[str]:
        """The pytest options that give this configuration (for a job that starts pytest)."""
        out = ["--device", self.device, "--numerics", self.numerics, "--max-n", str(self.max_n)]
        out += ["--model", self.model, "--impl", self.impl_name, "--forced-budget", str(self.forced_budget)]
        out += ["--replays", str(self.replays), "--threads", str(self.threads)]
        if len(self.dtypes) == 1:
            out += ["--dtype", self.dtypes[0]]
        return out + (["--reference-device", self.reference_device] if self.reference_device else [])


def reference_device_for(device: str, numerics: NumericsMode, raw: str) -> str:
    """Where the reference runs: "" (on `device`) for `same`, "cpu" for `cpu` while the implementation
    runs on a GPU in fast numerics; exact numerics are bit-equal on one device only."""
    raw = _choice("reference_device", raw, REFERENCE_DEVICES)
    if raw == "same" or device == "cpu":
        return ""
    if numerics is NumericsMode.EXACT:
        raise ValueError(
            f"{_name('reference_device')}=cpu needs fast numerics: exact numerics are bit-equal on one device only"
        )
    return "cpu"


@functools.cache
def _name(option: str) -> str:
    return f"--{option.replace('_', '-')} (or {ENV_PREFIX}{option.upper()})"


def option_or_env(name: str, options: Mapping[str, Any], env: Mapping[str, str]) -> Any:
    """Option `name` where given, else `MTP_VERIFY_<NAME>` in `env`, else None."""
    value = options.get(name)
    return value if value is not None else (env.get(ENV_PREFIX + name.upper()) or None)


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{_name(name)}={value!r}: expected one of {', '.join(choices)}")
    return value


def _number(name: str, value: Any, kind: type, default: Any) -> Any:
    if value is None:
        return default
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{_name(name)}={value!r}: expected a {kind.__name__}") from None
