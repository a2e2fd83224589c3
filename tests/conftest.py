"""Fixtures of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from tests import redis_server


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """Every unit test on one torch thread: the bit-equality tests compare kernels whose reduction
    order may depend on the thread count, whatever `MTP_VERIFY_THREADS` says."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real Redis server started for this module (skips where none is installed)."""
    if redis_server.binary() is None:
        pytest.skip(redis_server.INSTALL_HINT)
    with redis_server.running(tmp_path_factory.mktemp("redis")) as url:
        yield url
