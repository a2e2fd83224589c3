"""What the benchmarks run, read in one place: the benchmarks' configuration edge.

Every setting comes from a pytest option first (`--bench-<key>`, registered from `OPTIONS` by
`benchmarks/conftest.py`; the suite's own options of `properties.run.plugin` for device, numerics,
dtype, mix size and reference device), then its environment variable (`MTP_BENCH_<KEY>`, or the
suite's `MTP_VERIFY_*` through `properties.config.option_or_env`), then the defaults here. No other
benchmarks module reads the environment.

The bootstrap benchmarks (`BenchSettings`): the device comes from `--device` (or `MTP_VERIFY_DEVICE`,
default cpu; `best` picks CUDA when one is visible). A CUDA device gets a serving-sized model in
bf16 and fast numerics, the CPU a small one in float32 so the benchmark functions stay quick in a
plain test run. The implementations are named as the suite's registry names them
(`properties.impl.REGISTRY`), with `loop` for the per-sequence reference step. The host throughput
benchmark (`HostConfig`) and the P1 throughput benchmark's rounds have settings of their own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch

from properties.config import RunConfig, option_or_env, reference_device_for
from properties.impl import REGISTRY

MIXES = ("mixed", "greedy")  # mixed: every fourth row samples; greedy: every row is greedy
LOOP = "loop"  # the per-sequence reference step, `reference.step.step_mtp_bootstrap_per_seq`
IMPL_NAMES = (LOOP, *REGISTRY)  # what a benchmark may run: the loop and the suite's registry names
DEFAULT_IMPLS = (LOOP, "literal", "vector")
# --bench-<key> (env MTP_BENCH_<KEY>): its help. The first seven set `BenchSettings`, the rest the P1 benchmarks.
OPTIONS: dict[str, str] = {
    "sizes": "batch sizes, e.g. 1,2,4,8",
    "hidden": "model hidden size",
    "dtype": "bfloat16, float32 or float64",
    "numerics": "fast or exact",
    "budget": "timed seconds per benchmark",
    "mix": "mixed or greedy sequence mix",
    "impls": f"implementations, comma-separated among {', '.join(IMPL_NAMES)}; default loop,literal,vector",
    "p1_rounds": "rounds of the P1 throughput",
    "host_workers": "host throughput: worker processes",
    "host_examples": "host throughput: examples a worker",
    "host_mps": "host throughput: the workers share each GPU through CUDA MPS",
    "host_seconds": "host throughput: count the examples finished in a window this long",
}


class NoCudaDevice(ValueError):
    """CUDA was asked for and none is visible: the benchmarks that need it skip."""


@dataclass(slots=True, frozen=True)
class BenchSettings:
    """The model and the measurement plan of one benchmark session; the defaults are a CUDA
    device's (`CPU_DEFAULTS` the CPU's)."""

    device: str = "cuda"
    dtype: str = "bfloat16"
    numerics: str = "fast"
    vocab_size: int = 32768
    hidden: int = 2048
    n_heads: int = 16
    n_attn_layers: int = 1
    block_size: int = 16
    max_seq_len: int = 1024
    group_cap: int = 64
    ladder_nd: int = 3
    cache_min: int = 256  # cache lengths are drawn from cache_min..cache_max tokens
    cache_max: int = 512
    history: int = 32  # output tokens already emitted per sequence
    mix: str = "mixed"  # one of MIXES
    sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # batch sizes n, one benchmark group each
    impls: tuple[str, ...] = DEFAULT_IMPLS  # names of IMPL_NAMES, one benchmark each per batch size
    budget_s: float = 2.0  # timed seconds aimed at per benchmark
    min_rounds: int = 3
    max_rounds: int = 200
    warmup_rounds: int = 0  # besides the counted run and the calibration run, which come first

    @property
    def on_cuda(self) -> bool:
        return self.device.startswith("cuda")


CUDA_DEFAULTS = BenchSettings()
CPU_DEFAULTS = BenchSettings("cpu", "float32", vocab_size=1024, hidden=64, n_heads=4, max_seq_len=256, cache_min=64,
                             cache_max=128, sizes=(1, 2, 4, 8), budget_s=0.2, max_rounds=50)  # fmt: skip


def resolve_device(raw: str | None, env: Mapping[str, str] | None = None) -> str:
    """`raw` (an option value or None) or `MTP_VERIFY_DEVICE`, with `best` resolved; ValueError for
    anything but cpu, cuda, cuda:N or best (`properties.config.RunConfig`), `NoCudaDevice` for CUDA
    when none is visible."""
    device = option_or_env("device", {"device": raw}, os.environ if env is None else env) or "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise NoCudaDevice(f"benchmark device {device!r}: no CUDA device is visible")
    return RunConfig.build({"device": device}, {}).device  # the suite's own check of the device


def _names(text: str, what: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """Comma-separated names from `text`; ValueError unless there is one and each is `allowed`."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names or any(name not in allowed for name in names):
        raise ValueError(f"benchmark {what} {text!r}: expected names among {', '.join(allowed)}")
    return names


def parse_sizes(text: str) -> tuple[int, ...]:
    """Batch sizes from text such as `1,2,4`; ValueError unless every entry is a positive integer."""
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ValueError(f"batch sizes {text!r}: expected comma-separated positive integers")
    return sizes


def parse_impls(text: str) -> tuple[str, ...]:
    """Implementation names from text such as `loop,vector`; ValueError for a name not in IMPL_NAMES."""
    return _names(text, "implementations", IMPL_NAMES)


def parse_mix(text: str) -> str:
    """One of `MIXES`; ValueError for anything else."""
    if text not in MIXES:
        raise ValueError(f"benchmark mix {text!r}: expected one of {', '.join(MIXES)}")
    return text


# The `OPTIONS` that set `BenchSettings`: the field each sets and how its text is read.
FIELDS: dict[str, tuple[str, Any]] = {
    "sizes": ("sizes", parse_sizes), "hidden": ("hidden", int), "dtype": ("dtype", str),
    "numerics": ("numerics", str), "budget": ("budget_s", float), "mix": ("mix", parse_mix),
    "impls": ("impls", parse_impls),
}  # fmt: skip


def bench_option(options: Mapping[str, Any], env: Mapping[str, str], key: str) -> Any:
    """`options[key]` where given, else `MTP_BENCH_<KEY>` of `env`, else None."""
    value = options.get(key)
    return value if value is not None else (env.get(f"MTP_BENCH_{key.upper()}") or None)


def resolve(options: Mapping[str, str | None], env: Mapping[str, str] | None = None) -> BenchSettings:
    """The settings for this session: defaults for the device, then each of `options` (keys device
    and those of `FIELDS`; None = not given) or else its environment variable."""
    env = os.environ if env is None else env
    device = resolve_device(options.get("device"), env)
    out = replace(CUDA_DEFAULTS if device.startswith("cuda") else CPU_DEFAULTS, device=device)
    for key, (name, parse) in FIELDS.items():
        if (value := bench_option(options, env, key)) is not None:
            out = replace(out, **{name: parse(value)})
    return out


def settings_from_config(config: Any) -> BenchSettings:
    """The session's settings from a pytest config: `--device` and the `--bench-*` options, each
    falling back to its environment variable."""
    options = {key: config.getoption(f"bench_{key}", default=None) for key in FIELDS}
    return resolve(options | {"device": config.getoption("mtp_device", default=None)})


@dataclass(slots=True, frozen=True)
class HostConfig:
    """One host throughput measurement (`benchmarks.host_throughput`): the device kind (cpu or cuda),
    numerics, dtype, largest mix, the number of worker processes and the examples each checks."""

    device: str = "cuda"
    numerics: str = "fast"
    dtype: str = "bfloat16"
    max_n: int = 64
    workers: int = 1
    examples: int = 20
    reference_device: str = ""  # "": the reference runs on the workers' device too
    mps: bool = False  # the workers share each GPU through CUDA MPS, started for the measurement
    seconds: float = 0.0  # > 0: a time window (examples is then each worker's bound), else a fixed count


def host_config(options: Mapping[str, Any], env: Mapping[str, str] | None = None, device: str = "cuda") -> HostConfig:
    """The host throughput measurement `options` ask for (keys numerics, dtype, max_n,
    reference_device as the suite's options, else `MTP_VERIFY_<KEY>`; host_workers, host_examples,
    host_mps, host_seconds, else `MTP_BENCH_<KEY>`): fast bf16 at n <= 64 on one worker per CPU core,
    20 examples each, no MPS, a fixed count, unless they say otherwise."""
    env = os.environ if env is None else env
    numerics = option_or_env("numerics", options, env) or "fast"
    reference = reference_device_for(device, numerics, option_or_env("reference_device", options, env) or "same")
    return HostConfig(
        device=device,
        numerics=numerics,
        dtype=option_or_env("dtype", options, env) or "bfloat16",
        max_n=int(option_or_env("max_n", options, env) or 64),
        workers=int(bench_option(options, env, "host_workers") or os.cpu_count() or 1),
        examples=int(bench_option(options, env, "host_examples") or 20),
        reference_device=reference,
        mps=str(bench_option(options, env, "host_mps") or "0") == "1",
        seconds=float(bench_option(options, env, "host_seconds") or 0),
    )


def host_config_from_config(config: Any, device: str = "cuda") -> HostConfig:
    """`host_config` of a pytest config: the suite's options and the `--bench-host-*` ones."""
    options = {key: config.getoption(f"mtp_{key}", default=None) for key in ("numerics", "dtype", "max_n")}
    options["reference_device"] = config.getoption("mtp_reference_device", default=None)
    options |= {key: config.getoption(f"bench_{key}", default=None) for key in OPTIONS if key.startswith("host_")}
    return host_config(options, device=device)


def p1_rounds(config: Any, env: Mapping[str, str] | None = None) -> int:
    """Rounds of the P1 throughput benchmark: `--bench-p1-rounds`, else `MTP_BENCH_P1_ROUNDS`, else 1
    (a plain test run stays quick; 5 for a figure worth quoting)."""
    options = {"p1_rounds": config.getoption("bench_p1_rounds", default=None)}
    return int(bench_option(options, os.environ if env is None else env, "p1_rounds") or 1)
