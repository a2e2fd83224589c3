"""The nightly command end to end on the CPU: a tiny run writes every output, two workers split a
test's examples, a worker killed in the middle of a test loses nothing it saved, and options that
cannot run exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase

from nightly.cli import default_workers, main
from nightly.outputs import OUTPUT_FILES, PACKED, SECTIONS
from nightly.runner import child_env

ROOT = Path(__file__).resolve().parent.parent
P1 = "properties/step/test_p1_equivalence.py::test_p1_equivalence[shard1of2]"  # one case of P1 (properties.run.shards)


def test_a_tiny_cpu_run_writes_every_output_and_packs_the_details(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "nightly", "--examples", "3", "--device", "cpu", "--workers", "1", "--out", str(out)]
    cmd += ["--database", str(tmp_path / "db"), "--tests", P1, "--pack"]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "round 1 [1/1] PASS test_p1_equivalence[shard1of2]: 3 examples" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == sorted([*OUTPUT_FILES, PACKED])
    report = (out / "report.md").read_text()
    assert report.startswith("# Nightly equivalence run: PASS")
    assert all(f"\n{s}\n" in report for s in SECTIONS)
    assert "| `test_p1_equivalence[shard1of2]` | PASS | 3 | 3 |" in report
    summary = json.loads((out / "summary.json").read_text())
    p1 = summary["tests"][P1]
    assert (summary["result"], p1["examples"], p1["runs"], p1["failures"]) == ("PASS", 3, 3, [])
    assert sum(p1["events"].values()) >= 3 and summary["rounds"][0]["exit_code"] == 0
    with tarfile.open(out / PACKED) as tar:
        names = tar.getnames()
        log = tar.extractfile("logs/round-001.log").read().decode()
        observed = [tar.extractfile(n).read().decode() for n in names if n.startswith("observed/round-001-gw0-")]
    assert {"junit/round-001.xml", "plans/round-001.json"} <= set(names)
    assert "--hypothesis-profile nightly" in log and "--device cpu" in log and "Hypothesis Statistics" in log
    cases = [r for r in map(json.loads, observed[0].splitlines()) if r["type"] == "test_case"]
    assert len(cases) == 3 and all(r["property"] == P1 and r["arguments"] for r in cases)
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite.get("name") == "nightly round 1"
    assert suite.find("testcase").get("name") == "test_p1_equivalence[shard1of2]"


def test_the_rounds_are_configured_by_their_command_line_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTP_VERIFY_DTYPE", "bfloat16")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    env = child_env()
    assert "MTP_VERIFY_DTYPE" not in env and env["OMP_NUM_THREADS"] == "1"


SPREAD_SUITE = """
    import os
    from pathlib import Path

    from hypothesis import given, strategies as st

    DRAWN = Path(__file__).with_name("drawn")


    def note(name, line):
        DRAWN.mkdir(exist_ok=True)
        with open(DRAWN / f"{name}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.txt", "a") as f:
            f.write(f"{line}\\n")


    @given(st.integers(0, 2**62))
    def test_draws(x):
        note("draws", x)


    def test_plain():
        note("plain", "ran")
"""


def run_suite(tmp_path: Path, source: str, *args: str) -> tuple[int, Path]:
    suite = tmp_path / "suite" / "test_suite.py"
    suite.parent.mkdir()
    suite.write_text(textwrap.dedent(source))
    out = tmp_path / "out"
    code = main(
        [*args, "--device", "cpu", "--out", str(out), "--database", str(tmp_path / "db"), "--tests", str(suite)]
    )
    return code, out


def test_two_workers_split_every_tests_examples_and_run_a_plain_test_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    code, out = run_suite(tmp_path, SPREAD_SUITE, "--examples", "20", "--workers", "2", "--seed", "5")
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert printed.count("PASS test_draws: 10 examples") == 2, "a progress line per worker and its share"
    drawn = {p.stem: p.read_text().split() for p in (tmp_path / "suite" / "drawn").glob("*.txt")}
    assert sorted(drawn) == ["draws-gw0", "draws-gw1", "plain-gw0"], "a plain test runs on the first worker only"
    assert len(drawn["draws-gw0"]) == len(drawn["draws-gw1"]) == 10
    assert drawn["draws-gw0"] != drawn["draws-gw1"], "each worker draws its own stream"
    summary = json.loads((out / "summary.json").read_text())
    tests = {t["name"]: t for t in summary["tests"].values()}
    draws, plain = tests["test_draws"], tests["test_plain"]
    assert (draws["examples"], draws["workers"], plain["workers"], plain["result"]) == (20, 2, 1, "PASS")
    assert {w: v["examples"] for w, v in summary["workers"].items()} == {"gw0": 10, "gw1": 10}
    assert draws["examples_per_second_host"] > 0 and summary["meta"]["seed"] == 5
    assert "| `test_draws` | PASS | 20 | 0 | 0 (-) | 0 | 2 |" in (out / "report.md").read_text()


CRASHING_SUITE = """
    import os
    import signal
    from pathlib import Path

    from hypothesis import given, settings, strategies as st

    FOUND = Path(__file__).with_name("found")


    @settings(max_examples=5)
    @given(st.integers())
    def test_before(x):
        pass


    @settings(max_examples=500)
    @given(st.integers(0, 2**20))
    def test_dies_while_shrinking(x):
        if x > 1000:
            if FOUND.exists():  # Hypothesis saved the failure and is shrinking it
                os.kill(os.getpid(), signal.SIGKILL)
            FOUND.touch()
            raise AssertionError("too big")


    @settings(max_examples=5)
    @given(st.integers())
    def test_after(x):
        pass
"""


def test_a_killed_worker_loses_nothing_saved_and_the_run_still_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code, out = run_suite(tmp_path, CRASHING_SUITE, "--examples", "5", "--workers", "1")
    assert code == 1
    tests = {t["name"]: t for t in json.loads((out / "summary.json").read_text())["tests"].values()}
    died = tests["test_dies_while_shrinking"]
    assert (died["result"], died["failures"][0]["outcome"]) == ("FAIL", "crashed")
    assert tests["test_before"]["examples"] == 5 and tests["test_after"]["examples"] == 5, "the run went on"
    saved = DirectoryBasedExampleDatabase(tmp_path / "db")
    assert any(list(saved.fetch(key)) for key in saved.fetch(b".hypothesis-keys")), "the saved failure survived"
    observed = [json.loads(s) for f in (out / "observed").glob("*.jsonl") for s in f.read_text().splitlines()]
    died_records = [o for o in observed if o.get("property", "").endswith("::test_dies_while_shrinking")]
    assert any(o["status"] == "failed" for o in died_records), "the records written before the crash survived"
    report = (out / "report.md").read_text()
    assert "# Nightly equivalence run: FAIL" in report and "### `test_dies_while_shrinking` (crashed" in report
    assert "crashed while running" in report


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--device", "cpu"], "--minutes, --examples"),
        (["--examples", "1", "--device", "cpu", "--impl", "nowhere:step"], "cannot import module 'nowhere'"),
        (["--examples", "1", "--device", "cpu", "--shard", "2/2"], "0 <= i < N"),
    ],
)
def test_options_that_cannot_run_exit_2_before_anything_runs(
    args: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    assert says in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("device", "gpus", "cores", "workers"),
    [("cuda", 1, 16, 16), ("cuda", 2, 16, 16), ("cuda", 3, 16, 15), ("cuda", 8, 4, 8), ("cpu", 0, 16, 16)],
)
def test_default_workers_fill_every_core_evenly_over_the_gpus(device: str, gpus: int, cores: int, workers: int) -> None:
    assert default_workers(device, gpus, cores) == workers
