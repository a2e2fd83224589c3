"""The nightly command end to end on the CPU: a tiny run writes every output, and a worker killed
in the middle of a test loses nothing it saved while the run still reports."""

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

from nightly.cli import main
from nightly.markdown import PACKED, SECTIONS
from nightly.outputs import OUTPUT_FILES

ROOT = Path(__file__).resolve().parent.parent
P1 = "properties/step/test_p1_equivalence.py::test_p1_equivalence"


def nightly_env() -> dict[str, str]:
    """The environment without anything that would pick another profile or device."""
    drop = ("MTP_VERIFY_PROFILE", "MTP_VERIFY_DEVICE", "MTP_VERIFY_IMPL", "MTP_VERIFY_DB", "PYTEST_ADDOPTS")
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_a_tiny_cpu_run_writes_every_output_and_packs_the_details(tmp_path: Path) -> None:
    out, db = tmp_path / "out", tmp_path / "db"
    cmd = [sys.executable, "-m", "nightly", "--examples", "3", "--device", "cpu", "--workers", "1"]
    cmd += ["--out", str(out), "--database", str(db), "--tests", P1, "--pack"]
    done = subprocess.run(cmd, cwd=ROOT, env=nightly_env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "round 1 PASSED  test_p1_equivalence: 3 examples" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == sorted([*OUTPUT_FILES, PACKED])
    report = (out / "report.md").read_text()
    assert report.startswith("# Nightly equivalence run: PASS")
    for section in SECTIONS:
        assert f"\n{section}\n" in report, section
    assert "| `test_p1_equivalence` | PASS | 3 |" in report
    summary = json.loads((out / "summary.json").read_text())
    p1 = summary["tests"][P1]
    assert (summary["result"], p1["examples"], p1["runs"], p1["failures_count"]) == ("PASS", 3, 3, 0)
    assert sum(p1["events"].values()) >= 3 and summary["rounds"][0]["exit_code"] == 0
    with tarfile.open(out / PACKED) as tar:
        names = tar.getnames()
        assert {"junit/round-001.xml", "logs/round-001.log", "results/round-001.jsonl"} <= set(names)
        observed = [
            json.loads(line)
            for name in names
            if name.startswith("observed/") and name.endswith(".jsonl")
            for line in tar.extractfile(name).read().decode().splitlines()
        ]
    cases = [o for o in observed if o["type"] == "test_case"]
    assert len(cases) == 3 and all(o["property"].endswith("::test_p1_equivalence") for o in cases)
    assert ET.parse(out / "junit.xml").getroot().find("testsuite/testcase").get("name") == "test_p1_equivalence"


CRASHING_TESTS = """
    import os
    import signal
    from pathlib import Path

    from hypothesis import given, settings, strategies as st

    from properties.databases import nightly_database

    DB = nightly_database(os.environ["MTP_VERIFY_DB"], Path(os.environ["MTP_VERIFY_DB_DIR"]))
    FOUND = Path(__file__).with_name("found")


    @settings(database=DB, max_examples=5, derandomize=False)
    @given(st.integers())
    def test_before(x):
        pass


    @settings(database=DB, max_examples=500, derandomize=False)
    @given(st.integers(0, 2**20))
    def test_dies_while_shrinking(x):
        if x > 1000:
            if FOUND.exists():  # Hypothesis saved the failure and is shrinking it
                os.kill(os.getpid(), signal.SIGKILL)
            FOUND.touch()
            raise AssertionError("too big")


    @settings(database=DB, max_examples=5, derandomize=False)
    @given(st.integers())
    def test_after(x):
        pass
"""


def test_a_killed_worker_loses_nothing_saved_and_the_run_still_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tests = tmp_path / "suite" / "test_crash.py"
    tests.parent.mkdir()
    tests.write_text(textwrap.dedent(CRASHING_TESTS))
    out, db = tmp_path / "out", tmp_path / "db"
    monkeypatch.chdir(ROOT)
    args = ["--examples", "500", "--device", "cpu", "--workers", "1", "--out", str(out)]
    code = main([*args, "--database", str(db), "--tests", str(tests)])
    assert code == 1, capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    results = {t["name"]: t for t in summary["tests"].values()}
    assert results["test_dies_while_shrinking"]["result"] == "FAIL"
    assert results["test_dies_while_shrinking"]["failures"][0]["outcome"] == "crashed"
    assert results["test_before"]["examples"] == 5 and results["test_after"]["examples"] == 5, "the run went on"
    saved = DirectoryBasedExampleDatabase(db)
    assert [list(saved.fetch(key)) for key in saved.fetch(b".hypothesis-keys")], "the saved failure survived"
    observed = [json.loads(s) for f in (out / "observed").glob("*.jsonl") for s in f.read_text().splitlines()]
    died = [o for o in observed if o.get("property", "").endswith("::test_dies_while_shrinking")]
    assert any(o["status"] == "failed" for o in died), "the records written before the crash survived"
    report = (out / "report.md").read_text()
    assert "# Nightly equivalence run: FAIL" in report and "### `test_dies_while_shrinking` (crashed" in report
    assert "crashed while running" in report
