"""Hypothesis profiles, device and numerics selection, and the implementation under test.

Profiles: `dev` (quick, random), `ci` (deterministic, bounded, no deadline, no database: the
default under `CI`), `nightly` (random, many examples, a persistent example database, statistics,
observability output), `gpu` (nightly-sized on a CUDA device). Pick one with `--hypothesis-profile`
or `MTP_VERIFY_PROFILE`; default `dev`, or `ci` when `CI` is set. The nightly profile's example
database is `MTP_VERIFY_DB` (a directory, default `.hypothesis/nightly`, or a `redis://` URL), and
`dev` runs replay what it holds without writing to it (`nightly.database`). Under pytest-xdist
with `--device cuda`, each worker runs on its own GPU. Hypothesis's own `ci` profile is
replaced by ours on purpose: the same settings, plus `print_blob` so a failure prints its blob.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, Phase, Verbosity, settings

from nightly.database import developer_database, nightly_database
from nightly.workers import pinned_device
from properties import impl as impl_module
from properties.run_config import (
    DTYPES,
    ENV_DEVICE,
    ENV_DTYPE,
    ENV_MAX_N,
    ENV_MODEL,
    ENV_NUMERICS,
    ENV_REFERENCE_DEVICE,
    MODEL_SIZES,
    REFERENCE_DEVICES,
)

pytest_plugins = ["properties.forced_budget"]

ROOT = Path(__file__).parent
# The nightly example database: a directory, or a redis:// URL shared by several hosts (then
# MTP_VERIFY_DB_DIR is this host's local copy). `dev` runs read it, read-only, besides their own.
NIGHTLY_DB_DIR = Path(os.environ.get("MTP_VERIFY_DB_DIR") or ROOT / ".hypothesis" / "nightly")
NIGHTLY_DB = nightly_database(os.environ.get("MTP_VERIFY_DB"), NIGHTLY_DB_DIR)
DEV_DB_DIR = ROOT / ".hypothesis" / "examples"
SLOW_CHECKS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

settings.register_profile(
    "dev",
    max_examples=30,
    deadline=None,
    database=developer_database(DEV_DB_DIR, NIGHTLY_DB),
    suppress_health_check=SLOW_CHECKS,
)
settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=SLOW_CHECKS,
)
settings.register_profile(
    "nightly",
    max_examples=2000,
    deadline=None,
    database=NIGHTLY_DB,
    print_blob=True,
    verbosity=Verbosity.normal,
    phases=list(Phase),
    suppress_health_check=SLOW_CHECKS,
)
settings.register_profile("gpu", parent=settings.get_profile("nightly"), max_examples=5000)
# Mutation runs (`python -m mutants.run`): deterministic like `ci`, and no shrinking or explaining,
# so a failure is reported at the example that found it.
settings.register_profile(
    "mutants",
    parent=settings.get_profile("ci"),
    max_examples=60,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)

ENV_PROFILE = "MTP_VERIFY_PROFILE"

# The worlds are tiny: one intra-op thread is several times faster than two on a busy 2-core
# machine, and both sides of a comparison always run with the same setting.
torch.set_num_threads(int(os.environ.get("MTP_VERIFY_THREADS", "1")))


def _default_profile() -> str:
    return os.environ.get(ENV_PROFILE) or ("ci" if os.environ.get("CI") else "dev")


settings.load_profile(_default_profile())


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mtp-verify")
    group.addoption("--device", default=None, help="cpu, cuda, cuda:N or best (default: cpu)")
    group.addoption("--numerics", default=None, choices=("exact", "fast"), help="numerics mode (default exact)")
    group.addoption("--dtype", default=None, choices=DTYPES, help="model dtype (default: by numerics and device)")
    group.addoption("--max-n", default=None, type=int, help="largest sequence mix (default 12 on the CPU, 64 on a GPU)")
    group.addoption(
        "--reference-device",
        default=None,
        choices=REFERENCE_DEVICES,
        help="where the reference step runs: same (default) or cpu (fast numerics on a GPU only)",
    )
    group.addoption(
        "--model",
        default=None,
        choices=tuple(MODEL_SIZES),
        help="model size: small (default; hidden 32) or serving (hidden 1024, vocab 129280)",
    )
    group.addoption("--impl", default=None, help="implementation under test as module:function")


def pytest_configure(config: pytest.Config) -> None:
    profile = config.getoption("hypothesis_profile", None)
    if not profile:
        settings.load_profile(_default_profile())
    options = (
        ("device", ENV_DEVICE),
        ("numerics", ENV_NUMERICS),
        ("dtype", ENV_DTYPE),
        ("max_n", ENV_MAX_N),
        ("reference_device", ENV_REFERENCE_DEVICE),
        ("model", ENV_MODEL),
    )
    for opt, env in options:
        value = config.getoption(opt)
        if value is not None:
            os.environ[env] = str(value)
    pin_xdist_worker_to_gpu()
    if config.getoption("impl"):
        impl_module.load(config.getoption("impl"))  # fail early with a clear message
        impl_module.select(config.getoption("impl"))


def pin_xdist_worker_to_gpu() -> None:
    """Under pytest-xdist with `--device cuda` (or `best`) and GPUs visible, run this worker on a
    GPU of its own (`cuda:i`, `nightly.workers`): one worker per GPU."""
    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    device = pinned_device(
        os.environ.get(ENV_DEVICE),
        os.environ.get("PYTEST_XDIST_WORKER"),
        os.environ.get("PYTEST_XDIST_TESTRUNUID"),
        n_gpus,
    )
    if device is not None:
        os.environ[ENV_DEVICE] = device
        torch.cuda.set_device(device)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # the marker, not a name or parameter id saying "gpu"
            item.add_marker(skip)
