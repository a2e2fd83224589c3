"""What the bootstrap benchmarks run: device, model size, batch sizes and time budget.

The device comes from `--device` (or `MTP_VERIFY_DEVICE`, default cpu; `best` picks CUDA when one is
visible). A CUDA device gets a serving-sized model in bf16 and fast numerics, the CPU a small one in
float32 so the benchmark functions stay quick in a plain test run. Each field can be overridden by an
option of `benchmarks/conftest.py` or its environment variable (`MTP_BENCH_*`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch

ENV_DEVICE = "MTP_VERIFY_DEVICE"
ENV_SIZES = "MTP_BENCH_SIZES"
ENV_HIDDEN = "MTP_BENCH_HIDDEN"
ENV_DTYPE = "MTP_BENCH_DTYPE"
ENV_NUMERICS = "MTP_BENCH_NUMERICS"
ENV_BUDGET = "MTP_BENCH_BUDGET"
ENV_MIX = "MTP_BENCH_MIX"
MIXES = ("mixed", "greedy")  # mixed: every fourth row samples; greedy: every row is greedy
OPTIONS = ("sizes", "hidden", "dtype", "numerics", "budget", "mix")  # --bench-<key> in benchmarks/conftest.py


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
    budget_s=0.2,
    min_rounds=3,
    max_rounds=50,
    warmup_rounds=0,
)


def resolve_device(raw: str | None) -> str:
    """`raw` (an option value or None) or `MTP_VERIFY_DEVICE`, with `best` resolved; ValueError for
    anything but cpu, cuda or cuda:N, `NoCudaDevice` for CUDA when none is visible."""
    device = raw or os.environ.get(ENV_DEVICE) or "cpu"
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


def resolve(options: Mapping[str, str | None], env: Mapping[str, str] | None = None) -> BenchSettings:
    """The settings for this session: defaults for the device, then each of `options` (keys device,
    sizes, hidden, dtype, numerics, budget, mix; None = not given) or else its environment variable."""
    env = os.environ if env is None else env
    device = resolve_device(options.get("device"))
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
    return out


def settings_from_config(config: Any) -> BenchSettings:
    """The session's settings from a pytest config: `--device` and the `--bench-*` options, each
    falling back to its environment variable."""
    options = {key: config.getoption(f"bench_{key}", default=None) for key in OPTIONS}
    options["device"] = config.getoption("mtp_device", default=None)
    return resolve(options)
