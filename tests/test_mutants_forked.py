"""The pytest server of the mutation runner: a forked child runs exactly the given folder's tests
with the given environment and import path, reports pytest's exit status, and is killed when it
runs past its time."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mutants.forked import pytest_server

ARGS = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist"]


@pytest.fixture(scope="module")
def server():
    with pytest_server(dict(os.environ)) as s:
        yield s


def _project(root: Path, body: str) -> Path:
    root.mkdir()
    (root / "shadow.py").write_text("WHERE = 'the copy'\n")
    (root / "test_it.py").write_text("import os\nimport shadow\n\n" + body)
    return root


def test_a_child_runs_the_copys_tests_with_its_environment_and_import_path(server, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "shadow.py").write_text("WHERE = 'elsewhere'\n")
    body = "def test_it():\n    assert shadow.WHERE == 'the copy' and os.environ['MARK'] == 'yes'\n"
    copy = _project(tmp_path / "copy", body)
    env = {**os.environ, "MARK": "yes"}
    done = server.run(ARGS, copy, env, [str(copy), str(elsewhere), *sys.path[1:]], tmp_path, 60)
    assert (done.code, done.timed_out) == (0, False), done.output
    done = server.run(ARGS, copy, {**env, "MARK": "no"}, [str(copy), *sys.path[1:]], tmp_path, 60)
    assert done.code == 1 and "assert" in done.output


def test_a_child_past_its_time_is_killed(server, tmp_path: Path) -> None:
    copy = _project(tmp_path / "copy", "def test_it():\n    import time\n    time.sleep(120)\n")
    done = server.run(ARGS, copy, dict(os.environ), [str(copy), *sys.path[1:]], tmp_path, 2)
    assert done.timed_out and done.code is None
