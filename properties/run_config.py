"""What the properties run on: device, numerics, dtypes and mix size, chosen by pytest options
(`--device`, `--numerics`, `--dtype`, `--max-n`) or the matching environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

ENV_DEVICE = "MTP_VERIFY_DEVICE"
ENV_NUMERICS = "MTP_VERIFY_NUMERICS"
ENV_MAX_N = "MTP_VERIFY_MAX_N"
ENV_DTYPE = "MTP_VERIFY_DTYPE"
ENV_REFERENCE_DEVICE = "MTP_VERIFY_REFERENCE_DEVICE"
REFERENCE_DEVICES = ("same", "cpu")  # where the reference step runs (`--reference-device`)
ENV_MODEL = "MTP_VERIFY_MODEL"
# Model sizes (`--model`): `small` is the suite's test model (hidden 32, vocab 512 or 600); `serving`
# has a serving model's width and vocabulary (hidden 1024 in 8 heads, the 129280 ids of an MTP model's
# tokenizer: ids past 32767 and 65535, which 16-bit packing gets wrong), for GPU nightlies.
MODEL_SIZES = {"small": None, "serving": (1024, 8, 129280)}
DTYPES = ("float64", "float32", "bfloat16")
# Largest mix by device when `--max-n` is not given. A GPU checks the batch sizes an engine serves;
# the CPU keeps examples cheap but goes past the exact numerics' row tile (8), so the multi-tile
# path of every batched pass is checked on every run.
DEFAULT_MAX_N = {"cpu": 12, "cuda": 64}


@dataclass(slots=True, frozen=True)
class RunConfig:
    device: str
    numerics: str
    dtypes: tuple[str, ...]
    max_n: int
    reference_device: str = ""  # "": the reference runs on `device` too
    model: str = "small"  # a key of MODEL_SIZES


def best_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def current() -> RunConfig:
    """The configuration for this process. `--dtype` (or `MTP_VERIFY_DTYPE`) picks the dtype in
    either numerics mode on any device; without it, exact numerics run in float64/float32 on the
    CPU and float32 on a GPU, fast numerics in bfloat16 on a GPU and float32 on the CPU."""
    device = os.environ.get(ENV_DEVICE) or "cpu"
    if device == "best":
        device = best_device()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"{ENV_DEVICE}={device}: no CUDA device is visible")
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"{ENV_DEVICE}={device!r}: expected cpu, cuda, cuda:N or best")
    numerics = os.environ.get(ENV_NUMERICS) or "exact"
    if numerics not in ("exact", "fast"):
        raise ValueError(f"{ENV_NUMERICS}={numerics!r}: expected exact or fast")
    on_gpu = device.startswith("cuda")
    dtype = os.environ.get(ENV_DTYPE) or ""
    if dtype:
        if dtype not in DTYPES:
            raise ValueError(f"{ENV_DTYPE}={dtype!r}: expected one of {', '.join(DTYPES)}")
        dtypes: tuple[str, ...] = (dtype,)
    elif numerics == "exact":
        dtypes = ("float32",) if on_gpu else ("float64", "float32")
    else:
        dtypes = ("bfloat16",) if on_gpu else ("float32",)
    raw_n = os.environ.get(ENV_MAX_N) or str(DEFAULT_MAX_N["cuda" if on_gpu else "cpu"])
    try:
        max_n = int(raw_n)
    except ValueError:
        raise ValueError(f"{ENV_MAX_N}={raw_n!r}: expected a positive integer") from None
    if max_n < 1:
        raise ValueError(f"{ENV_MAX_N}={raw_n!r}: expected a positive integer")
    model = os.environ.get(ENV_MODEL) or "small"
    if model not in MODEL_SIZES:
        raise ValueError(f"{ENV_MODEL}={model!r}: expected one of {', '.join(MODEL_SIZES)}")
    return RunConfig(device, numerics, dtypes, max_n, reference_device_for(device, numerics), model)


def reference_device_for(device: str, numerics: str) -> str:
    """Where the reference runs (`MTP_VERIFY_REFERENCE_DEVICE`): `same` (or unset) on `device`,
    `cpu` on the CPU. The CPU is allowed in fast numerics only (see `ModelSpec.reference_device`)."""
    raw = os.environ.get(ENV_REFERENCE_DEVICE) or "same"
    if raw not in REFERENCE_DEVICES:
        raise ValueError(f"{ENV_REFERENCE_DEVICE}={raw!r}: expected same or cpu")
    if raw == "same" or device == "cpu":
        return ""
    if numerics == "exact":
        raise ValueError(
            f"{ENV_REFERENCE_DEVICE}=cpu needs fast numerics: exact numerics are bit-equal on one device only"
        )
    return "cpu"
