"""What the benchmarks run, read in one place: the benchmarks' configuration edge.

Every setting comes from a pytest option first (`benchmarks/conftest.py`; the suite's own options of
`properties.plugin` for device, numerics, dtype, mix size and reference device), then its
environment variable (`MTP_BENCH_*`, or the suite's `MTP_VERIFY_*` through
`properties.config.option_or_env`), then the defaults here. No other benchmarks module reads the
environment.

The bootstrap benchmarks (`BenchSettings`): the device comes from `--device` (or `MTP_VERIFY_DEVICE`,
default cpu; `best` picks CUDA when one is visible). A CUDA device gets a serving-sized model in
bf16 and fast numerics, the CPU a small one in float32 so the benchmark functions stay quick in a
plain test run. The implementations are named as the suite's registry names them
(`properties.impl.REGISTRY`), with `loop` for the per-sequence reference step.

The host throughput benchmark (`HostConfig`) and the P1 throughput benchmark's rounds have
settings of their own (`host_config`, `p1_rounds`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch

from properties.config import option_or_env, reference_device_for
from properties.impl import REGISTRY

ENV_SIZES = "MTP_BENCH_SIZES"
ENV_HIDDEN = "MTP_BENCH_HIDDEN"
ENV_DTYPE = "MTP_BENCH_DTYPE"
ENV_NUMERICS = "MTP_BENCH_NUMERICS"
ENV_BUDGET = "MTP_BENCH_BUDGET"
ENV_MIX = "MTP_BENCH_MIX"
ENV_IMPLS = "MTP_BENCH_IMPLS"
MIXES = ("mixed", "greedy")  # mixed: every fourth row samples; greedy: every row is greedy
LOOP = "loop"  # the per-sequence reference step, `reference.step.step_mtp_bootstrap_per_seq`
IMPL_NAMES = (LOOP, *REGISTRY)  # what a benchmark may run: the loop and the suite's registry names
DEFAULT_IMPLS = (LOOP, "literal", "vector")
OPTIONS = ("sizes", "hidden", "dtype", "numerics", "budget", "mix", "impls")  # --bench-<key> in benchmarks/conftest.py


class NoCudaDevice(ValueError):
    """CUDA was asked for and none is visible: the benchmarks that need it skip."""


@dataclass(slots=True, frozen=True)
class BenchSettings:
    """The model and the measurement plan of one benchmark session."""

    device: str
    dtype: str
    numerics: str
    vocab_size: int
    hidden: int
    n_heads: int
    n_attn_layers: int
    block_size: int
    max_seq_len: int
    group_cap: int
    ladder_nd: int
    cache_min: int  # cache lengths are drawn from cache_min..cache_max tokens
    cache_max: int
    history: int  # output tokens already emitted per sequence
    mix: str  # one of MIXES
    sizes: tuple[int, ...]  # batch sizes n, one benchmark group each
    impls: tuple[str, ...]  # names of IMPL_NAMES, one benchmark each per batch size
    budget_s: float  # timed seconds aimed at per benchmark
    min_rounds: int
    max_rounds: int
    warmup_rounds: int  # besides the counted run and the calibration run, which come first

    @property
    def on_cuda(self) -> bool:
        return self.device.startswith("cuda")


CUDA_DEFAULTS = BenchSettings(
    device="cuda",
    dtype="bfloat16",
    numerics="fast",
    vocab_size=32768,
    hidden=2048,
    n_heads=16,
    n_attn_layers=1,
    block_size=16,
    max_seq_len=1024,
    group_cap=64,
    ladder_nd=3,
    cache_min=256,
    cache_max=512,
    history=32,
    mix="mixed",
    sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256),
    impls=DEFAULT_IMPLS,
    budget_s=2.0,
    min_rounds=3,
    max_rounds=200,
    warmup_rounds=0,
)

CPU_DEFAULTS = BenchSettings(
    device="cpu",
    dtype="float32",
    numerics="fast",
    vocab_size=1024,
    hidden=64,
    n_heads=4,
    n_attn_layers=1,
    block_size=16,
    max_seq_len=256,
    group_cap=64,
    ladder_nd=3,
    cache_min=64,
    cache_max=128,
    history=32,
    mix="mixed",
    sizes=(1, 2, 4, 8),
    impls=DEFAULT_IMPLS,
    budget_s=0.2,
    min_rounds=3,
    max_rounds=50,
    warmup_rounds=0,
)


def resolve_device(raw: str | None, env: Mapping[str, str] | None = None) -> str:
    """`raw` (an option value or None) or `MTP_VERIFY_DEVICE`, with `best` resolved; ValueError for
    anything but cpu, cuda or cuda:N, `NoCudaDevice` for CUDA when none is visible."""
    device = option_or_env("device", {"device": raw}, os.environ if env is None else env) or "cpu"
    if device == "best":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"benchmark device {device!r}: expected cpu, cuda, cuda:N or best")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise NoCudaDevice(f"benchmark device {device!r}: no CUDA device is visible")
    return device


def parse_sizes(text: str) -> tuple[int, ...]:
    """Batch sizes from text such as `1,2,4`; ValueError unless every entry is a positive integer."""
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"batch sizes {text!r}: expected comma-separated positive integers") from None
    if not sizes or min(sizes) < 1:
        raise ValueError(f"batch sizes {text!r}: expected comma-separated positive integers")
    return sizes


def parse_impls(text: str) -> tuple[str, ...]:
    """Implementation names from text such as `loop,vector`; ValueError for a name not in IMPL_NAMES."""
    impls = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [name for name in impls if name not in IMPL_NAMES]
    if not impls or unknown:
        raise ValueError(f"benchmark implementations {text!r}: expected names among {', '.join(IMPL_NAMES)}")
    return impls


def resolve(options: Mapping[str, str | None], env: Mapping[str, str] | None = None) -> BenchSettings:
    """The settings for this session: defaults for the device, then each of `options` (keys device,
    sizes, hidden, dtype, numerics, budget, mix, impls; None = not given) or else its environment variable."""
    env = os.environ if env is None else env
    device = resolve_device(options.get("device"), env)
    base = CUDA_DEFAULTS if device.startswith("cuda") else CPU_DEFAULTS

    def pick(key: str, var: str) -> str | None:
        value = options.get(key)
        return value if value is not None else (env.get(var) or None)

    out = replace(base, device=device)
    if (sizes := pick("sizes", ENV_SIZES)) is not None:
        out = replace(out, sizes=parse_sizes(sizes))
    if (hidden := pick("hidden", ENV_HIDDEN)) is not None:
        out = replace(out, hidden=int(hidden))
    if (dtype := pick("dtype", ENV_DTYPE)) is not None:
        out = replace(out, dtype=dtype)
    if (numerics := pick("numerics", ENV_NUMERICS)) is not None:
        out = replace(out, numerics=numerics)
    if (budget := pick("budget", ENV_BUDGET)) is not None:
        out = replace(out, budget_s=float(budget))
    if (mix := pick("mix", ENV_MIX)) is not None:
        if mix not in MIXES:
            raise ValueError(f"benchmark mix {mix!r}: expected one of {', '.join(MIXES)}")
        out = replace(out, mix=mix)
    if (impls := pick("impls", ENV_IMPLS)) is not None:
        out = replace(out, impls=parse_impls(impls))
    return out


def settings_from_config(config: Any) -> BenchSettings:
    """The session's settings from a pytest config: `--device` and the `--bench-*` options, each
    falling back to its environment variable."""
    options = {key: config.getoption(f"bench_{key}", default=None) for key in OPTIONS}
    options["device"] = config.getoption("mtp_device", default=None)
    return resolve(options)


# The P1 benchmarks' settings: --bench-<key> (benchmarks/conftest.py), then MTP_BENCH_<KEY> (MTP_BENCH_P1_ROUNDS too).
HOST_OPTIONS = ("host_workers", "host_examples", "host_mps", "host_seconds")


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


def _bench_option(options: Mapping[str, Any], env: Mapping[str, str], key: str) -> Any:
    value = options.get(key)
    return value if value is not None else (env.get(f"MTP_BENCH_{key.upper()}") or None)


def host_config(options: Mapping[str, Any], env: Mapping[str, str] | None = None, device: str = "cuda") -> HostConfig:
    """The host throughput measurement `options` ask for (keys numerics, dtype, max_n,
    reference_device as the suite's options, else `MTP_VERIFY_<KEY>`; host_workers, host_examples,
    host_mps, host_seconds, else `MTP_BENCH_<KEY>`): fast bf16 at n <= 64 on one worker per CPU core,
    20 examples each, no MPS, a fixed count, unless they say otherwise."""
    env = os.environ if env is None else env
    numerics = option_or_env("numerics", options, env) or "fast"
    return HostConfig(
        device=device,
        numerics=numerics,
        dtype=option_or_env("dtype", options, env) or "bfloat16",
        max_n=int(option_or_env("max_n", options, env) or 64),
        workers=int(_bench_option(options, env, "host_workers") or os.cpu_count() or 1),
        examples=int(_bench_option(options, env, "host_examples") or 20),
        reference_device=reference_device_for(
            device, numerics, option_or_env("reference_device", options, env) or "same"
        ),
        mps=str(_bench_option(options, env, "host_mps") or "0") == "1",
        seconds=float(_bench_option(options, env, "host_seconds") or 0),
    )


def host_config_from_config(config: Any, device: str = "cuda") -> HostConfig:
    """`host_config` of a pytest config: the suite's options and the `--bench-host-*` ones."""
    keys = ("numerics", "dtype", "max_n", "reference_device")
    options = {key: config.getoption(f"mtp_{key}", default=None) for key in keys}
    options |= {key: config.getoption(f"bench_{key}", default=None) for key in HOST_OPTIONS}
    return host_config(options, device=device)


def p1_rounds(config: Any, env: Mapping[str, str] | None = None) -> int:
    """Rounds of the P1 throughput benchmark: `--bench-p1-rounds`, else `MTP_BENCH_P1_ROUNDS`, else 1
    (a plain test run stays quick; 5 for a figure worth quoting)."""
    env = os.environ if env is None else env
    return int(_bench_option({"p1_rounds": config.getoption("bench_p1_rounds", default=None)}, env, "p1_rounds") or 1)
