"""Options and session fixtures of the benchmarks.

`--device` is the root conftest's option (or `MTP_VERIFY_DEVICE`); the options below override the
device's defaults in `benchmarks.settings` (each also has an `MTP_BENCH_*` environment variable).
"""

from __future__ import annotations

import pytest

from benchmarks.floor import measure_bandwidth
from benchmarks.settings import IMPL_NAMES, BenchSettings, settings_from_config


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mtp-bench")
    group.addoption("--bench-sizes", default=None, help="batch sizes, e.g. 1,2,4,8 (env MTP_BENCH_SIZES)")
    group.addoption("--bench-hidden", default=None, help="model hidden size (env MTP_BENCH_HIDDEN)")
    group.addoption("--bench-dtype", default=None, help="bfloat16, float32 or float64 (env MTP_BENCH_DTYPE)")
    group.addoption("--bench-numerics", default=None, help="fast or exact (env MTP_BENCH_NUMERICS)")
    group.addoption("--bench-budget", default=None, help="timed seconds per benchmark (env MTP_BENCH_BUDGET)")
    group.addoption("--bench-mix", default=None, help="mixed or greedy sequence mix (env MTP_BENCH_MIX)")
    group.addoption(
        "--bench-impls",
        default=None,
        help=f"implementations, comma-separated among {', '.join(IMPL_NAMES)} (default loop,literal,vector; "
        "env MTP_BENCH_IMPLS)",
    )
    group.addoption("--bench-p1-rounds", default=None, help="rounds of the P1 throughput (env MTP_BENCH_P1_ROUNDS)")
    group.addoption(
        "--bench-host-workers", default=None, help="host throughput: worker processes (env MTP_BENCH_HOST_WORKERS)"
    )
    group.addoption(
        "--bench-host-examples", default=None, help="host throughput: examples a worker (env MTP_BENCH_HOST_EXAMPLES)"
    )
    group.addoption(
        "--bench-host-mps",
        action="store_const",
        const="1",
        default=None,
        help="host throughput: the workers share each GPU through CUDA MPS (env MTP_BENCH_HOST_MPS=1)",
    )
    group.addoption(
        "--bench-host-seconds",
        default=None,
        help="host throughput: count the examples finished in a window this long (env MTP_BENCH_HOST_SECONDS)",
    )


@pytest.fixture(scope="session")
def bench_settings(request: pytest.FixtureRequest) -> BenchSettings:
    return settings_from_config(request.config)


@pytest.fixture(scope="session")
def bandwidth(bench_settings: BenchSettings) -> float:
    """The device's copy bandwidth in bytes per second, measured once per session."""
    return measure_bandwidth(bench_settings.device)
