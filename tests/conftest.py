"""Fixtures of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """Every unit test on one torch thread: the bit-equality tests compare kernels whose reduction
    order may depend on the thread count, whatever `MTP_VERIFY_THREADS` says."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
