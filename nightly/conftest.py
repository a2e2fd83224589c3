"""Fixtures of the nightly job's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nightly import redis_server


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real Redis server started for this module (skips where none is installed)."""
    if redis_server.binary() is None:
        pytest.skip(redis_server.INSTALL_HINT)
    with redis_server.running(tmp_path_factory.mktemp("redis")) as url:
        yield url
