"""From the JUnit XML of the rounds to what a person reads: cases, failure texts, totals and the
report."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

from nightly.outputs import OUTPUT_FILES, PACKED, SECTIONS, files_section, pack, read_cases, render, verdict
from nightly.results import SHARE_SKIP, add_up, parse_failure, read_round
from nightly.rounds import Plan, RoundInfo

REPORT = [
    "E       AssertionError: P3 call accounting: 1 difference(s)",
    "E         ",
    "E         mix (non-default fields; * = bootstrapped):",
    "E           model: {'max_batched_drafts': 2}",
    "E         replay: python -m properties.failures.replay /runs/out/replays/1eb207ef885a4953.json",
    "E       assert not [Mismatch(seq_id=None, field='rows')]",
    "E       Failing test case: test_p3(",
    "E       You can reproduce this by temporarily adding @reproduce_failure('6.170', b'AXic') as a decorator",
]
PROPERTY_FAILURE = "\n".join(["    def test_p3(spec):", ">       assert not mismatches", *REPORT, "", "x.py:46: Error"])


def case_xml(name: str, worker: str, body: str = "", examples: int = 0, seconds: float = 1.0) -> str:
    counts = {"examples": examples, "runs": examples, "near_ties": 1, "largest_near_tie": 0.1, "events": {"n=2": 1}}
    prop = json.dumps({"nodeid": f"m.py::{name}", "worker": worker, "counts": counts})
    props = f"<properties><property name='nightly' value={quoteattr(prop)}/></properties>"
    return f"<testcase classname='m' name='{name}' time='{seconds}'>{props}{body}</testcase>"


def junit(*cases: str) -> str:
    return f"<testsuites><testsuite name='pytest'>{''.join(cases)}</testsuite></testsuites>"


def failure(text: str) -> str:
    return f"<failure message='boom'>{text.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}</failure>"


def test_a_property_failure_keeps_its_report_and_replay_command() -> None:
    f = parse_failure(PROPERTY_FAILURE, 2, "failed")
    assert f.text.splitlines()[:3] == [
        "P3 call accounting: 1 difference(s)",
        "",
        "mix (non-default fields; * = bootstrapped):",
    ]
    assert "replay" not in f.text and "Failing test case" not in f.text
    assert (f.replay, f.reproduce) == (
        "/runs/out/replays/1eb207ef885a4953.json",
        "@reproduce_failure('6.170', b'AXic')",
    )
    other = parse_failure("E       ValueError: bad --impl\nE       Failing test case: test_p1(\nE       )", 1, "failed")
    assert (other.text, other.replay) == ("ValueError: bad --impl", None)


def test_a_round_is_read_from_junit_with_crashes_and_without_other_workers_shares(tmp_path: Path) -> None:
    crash = "<error message='crashed'>worker 'gw1' crashed while running 'm.py::test_c'</error>"
    skip = f"<skipped type='pytest.skip' message={quoteattr(SHARE_SKIP)}>m.py:3: skipped</skipped>"
    path = tmp_path / "round-001.xml"
    path.write_text(
        junit(
            case_xml("test_a", "gw0", examples=3),
            case_xml("test_a", "gw1", skip),
            f"<testcase classname='m' name='test_c' time='0'>{crash}</testcase>",
        )
    )
    cases = read_round(path, 1)
    assert [(c.nodeid, c.worker, c.outcome, c.examples) for c in cases] == [
        ("m.py::test_a", "gw0", "passed", 3),
        ("m.py::test_c", "gw1", "crashed", 0),
    ]
    assert read_round(tmp_path / "missing.xml", 2) == [], "a round killed before pytest wrote its file"


def test_rounds_add_up_per_test_and_the_worst_worker_decides_a_round(tmp_path: Path) -> None:
    rounds = [
        junit(case_xml("test_a", "gw0", examples=10, seconds=2.0), case_xml("test_a", "gw1", examples=10, seconds=3.0)),
        junit(case_xml("test_a", "gw0", examples=5), case_xml("test_a", "gw1", failure(PROPERTY_FAILURE), examples=2)),
    ]
    cases = []
    for k, text in enumerate(rounds, start=1):
        (tmp_path / f"{k}.xml").write_text(text)
        cases += read_round(tmp_path / f"{k}.xml", k)
    a = add_up(cases)["m.py::test_a"]
    assert (a.outcomes, a.examples, a.near_ties, a.largest_near_tie, a.events) == (
        {1: "passed", 2: "failed"},
        27,
        4,
        0.1,
        {"n=2": 4},
    )
    assert (a.seconds, a.span, a.workers, a.result, a.rate(a.span)) == (7.0, 4.0, 2, "FAIL", 27 / 4.0)
    assert [(f.round, f.replay) for f in a.failures] == [(2, "/runs/out/replays/1eb207ef885a4953.json")]


META = {"started": "now", "wall_seconds": 61.0, "budget": "1 minute(s)", "host": "cpu (2 cores)", "workers": 2}
META |= {"mps": False, "options": "--device cpu", "database": "d", "shard": "0/1 by tests", "seed": 3, "command": "c"}


def test_the_report_names_each_failure_with_the_commands_that_replay_and_promote_it(tmp_path: Path) -> None:
    path = tmp_path / "1.xml"
    path.write_text(junit(case_xml("test_b", "gw0", failure(PROPERTY_FAILURE), examples=3)))
    totals = add_up(read_round(path, 1))
    rounds = [RoundInfo(1, "3 examples", Plan(3), 61.0, 1)]
    text = render(META, rounds, totals, {"gw0": {"examples": 3, "seconds": 1.0}}, ["n=2", "n=1"], tmp_path)
    assert text.startswith("# Nightly equivalence run: FAIL") and all(f"\n{s}\n" in text for s in SECTIONS)
    assert "### `test_b` (failed; round(s) 1)" in text and "\nP3 call accounting: 1 difference(s)\n" in text
    assert "`python -m properties.replay /runs/out/replays/1eb207ef885a4953.json`" in text
    assert "`python -m properties.failures.promote /runs/out/replays/1eb207ef885a4953.json --name NAME`" in text
    assert "| `test_b` | **FAIL** | 3 | 3 | 1 (0.1) | 1 |" in text
    assert "Examples per path: n=2 (1)." in text and "Not reached: n=1." in text


def test_a_round_that_died_blames_the_test_it_was_running(tmp_path: Path) -> None:
    observed = tmp_path / "observed" / "round-002-main-7.jsonl"
    observed.parent.mkdir()
    lines = [{"type": "test_case", "property": f"m.py::{n}"} for n in ("test_a", "test_b")] + [{"type": "info"}]
    observed.write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"type": "test_ca')
    (tmp_path / "junit").mkdir()
    (tmp_path / "junit" / "round-001.xml").write_text(junit(case_xml("test_a", "main", examples=4)))
    rounds = [RoundInfo(1, "", Plan(), exit_code=0), RoundInfo(2, "", Plan(), exit_code=-9)]
    cases = read_cases(tmp_path, rounds)
    assert [(c.round, c.nodeid, c.outcome) for c in cases] == [
        (1, "m.py::test_a", "passed"),
        (2, "m.py::test_b", "crashed"),
    ]
    b = add_up(cases)["m.py::test_b"]
    assert (b.result, b.failures[0].round) == ("FAIL", 2) and "died (exit -9)" in b.failures[0].text


def test_a_round_that_died_fails_the_run_and_nothing_run_is_no_pass() -> None:
    assert verdict({}, [RoundInfo(1, "", Plan(), exit_code=-9)]) == "FAIL"
    assert verdict({}, [RoundInfo(1, "", Plan(), exit_code=-9, stopped="time limit")]) == "NOTHING RAN"
    assert verdict({}, [RoundInfo(1, "", Plan(), exit_code=5)]) == "NOTHING RAN"


def test_pack_leaves_the_three_outputs_and_one_archive_of_the_rest(tmp_path: Path) -> None:
    for name in (*OUTPUT_FILES, "observed/round-001-gw0-1.jsonl", "logs/round-001.log", "replays/abc.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    files = files_section(tmp_path, packed=True)
    assert files[-1].startswith(f"- `{PACKED}`: `observed/`") and "`replays/`" in files[-1]
    archive = pack(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*OUTPUT_FILES, PACKED])
    with tarfile.open(archive) as tar:
        assert tar.extractfile("replays/abc.json").read() == b"replays/abc.json"
        assert {"observed/round-001-gw0-1.jsonl", "logs/round-001.log"} <= set(tar.getnames())
