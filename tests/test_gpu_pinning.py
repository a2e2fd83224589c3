"""Workers spread over the GPUs: worker ids, GPU claims (several places per GPU), and a crashed
worker's place going to its replacement."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from properties.run.gpu import claim_gpu, pinned_device, places_per_gpu, release_all, worker_index


@pytest.fixture(autouse=True)
def _release() -> Iterator[None]:
    yield
    release_all()


def test_worker_index_reads_xdist_ids() -> None:
    assert worker_index("gw0") == 0 and worker_index("gw12") == 12
    assert worker_index(None) is None and worker_index("master") is None


def test_each_worker_claims_its_own_gpu_then_shares(tmp_path: Path) -> None:
    assert [claim_gpu(i, 4, tmp_path) for i in (0, 1, 2, 3)] == [0, 1, 2, 3]
    assert claim_gpu(5, 4, tmp_path) == 1, "every GPU taken: the worker shares the one its number points at"


def test_sixteen_workers_spread_evenly_over_two_gpus(tmp_path: Path) -> None:
    places = places_per_gpu(16, 2)
    claims = [claim_gpu(k % 2, 2, tmp_path, places) for k in range(16)]
    assert places == 8 and claims.count(0) == claims.count(1) == 8
    assert places_per_gpu(16, 1) == 16 and places_per_gpu(3, 2) == 2 and places_per_gpu(None, 4) == 1


def test_a_worker_whose_gpu_is_full_takes_a_place_on_the_next(tmp_path: Path) -> None:
    assert [claim_gpu(0, 2, tmp_path, 2) for _ in range(3)] == [0, 0, 1]


def test_a_replacement_worker_claims_the_gpu_a_crashed_one_held(tmp_path: Path) -> None:
    holder = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
        "from properties.run.gpu import claim_gpu; "
        "print(claim_gpu(1, 2, Path(sys.argv[2])), flush=True); time.sleep(60)"
    )
    root = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.Popen([sys.executable, "-c", holder, root, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "1"
        assert claim_gpu(0, 2, tmp_path) == 0
        assert claim_gpu(2, 2, tmp_path) == 0, "gpu 1 is held: sharing"
        release_all()
        proc.kill()
        proc.wait()
        assert claim_gpu(3, 2, tmp_path) == 1, "the killed worker's gpu is free again"
    finally:
        proc.kill()
        proc.wait()


def test_only_xdist_workers_asking_for_cuda_are_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert pinned_device("cuda", None, "run", 8) is None, "not a worker"
    assert pinned_device("cpu", "gw1", "run", 8) is None
    assert pinned_device("cuda:5", "gw1", "run", 8) is None, "an explicit device stays"
    assert pinned_device("cuda", "gw1", "run", 0) is None, "no GPU"
    assert pinned_device("cuda", "gw3", "run", 8, workers=8) == "cuda:3"
    assert pinned_device("best", "gw3", "run", 8, workers=8) == "cuda:4", "gpu 3 is this process's already"
    assert pinned_device("cuda", "gw9", "other", 8, workers=16) == "cuda:1", "two places a GPU: worker 9 on GPU 1"
