"""From what a round recorded to what a person reads: failure texts, per-test totals (crashes and
rounds stopped at the time limit included) and the markdown report."""

from __future__ import annotations

import tarfile
from pathlib import Path

from nightly.failures import parse_failure
from nightly.markdown import PACKED, SECTIONS, files_section, render
from nightly.outputs import OUTPUT_FILES, pack
from nightly.totals import RoundInfo, Totals, add_round, overall

PROPERTY_FAILURE = "\n".join(
    [
        "    @given(spec=world_specs(RUN, faults=True))",
        "    def test_p3_call_accounting(spec: WorldSpec) -> None:",
        '>       assert not mismatches, format_report("P3 call accounting", sbs, mismatches)',
        "E       AssertionError: P3 call accounting: 1 difference(s)",
        "E         ",
        "E         mix (non-default fields; * = bootstrapped):",
        "E           model: {'max_batched_drafts': 2, 'meta_stride': 1}",
        "E            *seq[0] {'cache_len': 1, 'max_tokens_left': 4}",
        "E         ",
        "E         replay: python -m properties.replay /runs/out/replays/1eb207ef885a4953.json",
        "E       assert not [Mismatch(seq_id=None, field='save_hidden_for_mtp_from_stash rows')]",
        "E       Failing test case: test_p3_call_accounting(",
        "E           spec=WorldSpec(model=ModelSpec(dtype='float64'),",
        "E       )",
        "E       You can reproduce this test case by temporarily adding "
        "@reproduce_failure('6.170.17', b'AXic') as a decorator on your test function",
        "",
        "properties/step/test_p3_calls.py:46: AssertionError",
    ]
)

ERROR_FAILURE = """\
E       ValueError: --impl 'x:y': cannot import module 'x'
E       Failing test case: test_p1_equivalence(
E           spec=WorldSpec(),
E       )"""

CRASH = "[gw0] linux -- Python 3.11\nworker 'gw0' crashed while running 'properties/test_p1.py::test_p1'"


def test_a_property_failure_keeps_its_report_and_replay_command() -> None:
    f = parse_failure(PROPERTY_FAILURE)
    assert f.text.splitlines()[0] == "P3 call accounting: 1 difference(s)"
    assert "  model: {'max_batched_drafts': 2, 'meta_stride': 1}" in f.text.splitlines()
    assert "replay" not in f.text and "Failing test case" not in f.text
    assert f.replay == "/runs/out/replays/1eb207ef885a4953.json"
    assert f.reproduce == "@reproduce_failure('6.170.17', b'AXic')"


def test_other_failures_keep_their_error_and_crashes_their_message() -> None:
    f = parse_failure(ERROR_FAILURE)
    assert (f.text, f.replay) == ("ValueError: --impl 'x:y': cannot import module 'x'", None)
    assert "crashed while running" in parse_failure(CRASH).text


def record(nodeid: str, outcome: str, examples: int = 0, failure: str = "") -> dict:
    counts = {"examples": examples, "runs": examples, "near_ties": 1, "largest_near_tie": 0.1, "events": {"n=2": 1}}
    return {"event": "test", "nodeid": nodeid, "outcome": outcome, "seconds": 1.0, "counts": counts, "failure": failure}


def test_rounds_add_up_and_a_dead_round_blames_the_test_it_was_running() -> None:
    totals: dict[str, Totals] = {}
    collected = {"event": "collected", "nodeids": ["m::a", "m::b", "m::c", "m::d"]}
    add_round(
        totals,
        RoundInfo(1, "10 examples", exit_code=0),
        [collected, *(record(n, "passed", 10) for n in ("m::a", "m::b", "m::c", "m::d"))],
    )
    add_round(
        totals,
        RoundInfo(2, "sized", exit_code=-9),
        [collected, record("m::a", "passed", 5), record("m::b", "failed", 3, PROPERTY_FAILURE)],
    )
    add_round(
        totals, RoundInfo(3, "sized", exit_code=2, stopped="time limit"), [collected, record("m::a", "passed", 7)]
    )
    a, b, c, d = (totals[f"m::{x}"] for x in "abcd")
    assert (a.examples, a.passed, a.near_ties, a.largest_near_tie, a.events) == (22, 3, 3, 0.1, {"n=2": 3})
    assert (b.result, b.failures[0].round, b.failures[0].replay) == (
        "FAIL",
        2,
        "/runs/out/replays/1eb207ef885a4953.json",
    )
    assert (c.crashed, c.result, c.failures[0].outcome) == (1, "FAIL", "crashed"), "round 2 died running c"
    assert (d.crashed, d.unfinished) == (0, 2), "d never started in rounds 2 and 3"
    assert overall(totals) == "FAIL"


def test_the_report_names_each_failure_with_the_commands_that_replay_and_promote_it(tmp_path: Path) -> None:
    out = tmp_path / "nightly"
    totals: dict[str, Totals] = {}
    failure = PROPERTY_FAILURE.replace("/runs/out", str(out))
    collected = {"event": "collected", "nodeids": ["m::test_b"]}
    add_round(totals, RoundInfo(1, "10 examples", exit_code=1), [collected, record("m::test_b", "failed", 3, failure)])
    meta = {"started": "now", "wall_seconds": 61.0, "budget": "1 minute(s)", "device": "cuda x8", "numerics": "fast"}
    meta |= {
        "command": "python -m nightly --minutes 1",
        "workers": 8,
        "impl": "literal",
        "database": "directory d",
        "shard": "0/1",
    }
    text = render(meta, [RoundInfo(1, "10 examples", 61.0, 1)], totals, out, ["n=2", "meta stride overflow"], "MATRIX")
    assert text.startswith("# Nightly equivalence run: FAIL")
    assert all(f"\n{s}\n" in text for s in SECTIONS)
    assert "### `test_b` (failed; round(s) 1)" in text and "P3 call accounting: 1 difference(s)" in text
    replay = out / "replays" / "1eb207ef885a4953.json"
    assert f"`python -m properties.replay {replay}`" in text
    assert f"`python -m properties.promote {replay} --name NAME`" in text
    assert "| n=2 | 1 |" in text and "Not reached this run: meta stride overflow." in text
    assert "| `test_b` | **FAIL** | 3 | 3 | 1 | 0.1 | 1 | 1.0 s |" in text


def test_pack_leaves_the_three_outputs_and_one_archive_of_the_rest(tmp_path: Path) -> None:
    for name in OUTPUT_FILES:
        (tmp_path / name).write_text(name)
    for name in ("observed/round-001-gw0-1.jsonl", "logs/round-001.log", "replays/abc.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    files = files_section(tmp_path, packed=True)
    assert files[-1].startswith(f"- `{PACKED}`: `observed/`") and "`replays/`" in files[-1]
    archive = pack(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*OUTPUT_FILES, PACKED])
    with tarfile.open(archive) as tar:
        assert tar.extractfile("replays/abc.json").read() == b"replays/abc.json"
        assert {"observed/round-001-gw0-1.jsonl", "logs/round-001.log"} <= set(tar.getnames())
