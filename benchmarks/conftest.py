"""Options and session fixtures of the benchmarks.

`--device` is the root conftest's option (or `MTP_VERIFY_DEVICE`); the `--bench-*` options
(`benchmarks.settings.OPTIONS`) override the device's defaults, each also an `MTP_BENCH_*`
environment variable.
"""

from __future__ import annotations

import pytest

from benchmarks.floor import measure_bandwidth
from benchmarks.settings import OPTIONS, BenchSettings, settings_from_config


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mtp-bench")
    for key, text in OPTIONS.items():
        flag = {"action": "store_const", "const": "1"} if key == "host_mps" else {}
        env = f"MTP_BENCH_{key.upper()}" + ("=1" if flag else "")
        group.addoption(f"--bench-{key.replace('_', '-')}", default=None, help=f"{text} (env {env})", **flag)


@pytest.fixture(scope="session")
def bench_settings(request: pytest.FixtureRequest) -> BenchSettings:
    return settings_from_config(request.config)


@pytest.fixture(scope="session")
def bandwidth(bench_settings: BenchSettings) -> float:
    """The device's copy bandwidth in bytes per second, measured once per session."""
    return measure_bandwidth(bench_settings.device)
