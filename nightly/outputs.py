"""Writing a run's outputs from what its rounds recorded: `summary.json`, `junit.xml`, `report.md`,
and the `replays/` folder cut down to the failures the report names. Called after every round, so
the folder always holds a complete report of the rounds so far."""

from __future__ import annotations

import json
import shutil
import tarfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nightly import junit, markdown, records
from nightly.runner import junit_path
from nightly.totals import RoundInfo, Totals, add_round, all_events, overall, worker_totals
from properties.behaviours import matrix_text
from properties.stats import expected_paths

OUTPUT_FILES = ("summary.json", "junit.xml", "report.md")


def collect(out: Path, rounds: list[RoundInfo]) -> dict[str, Totals]:
    """Every round's result records added up, per test."""
    totals: dict[str, Totals] = {}
    for info in rounds:
        add_round(totals, info, records.read(records.results_path(out, info.round)))
    return totals


def summary(meta: dict[str, Any], rounds: list[RoundInfo], totals: dict[str, Totals]) -> dict[str, Any]:
    """The JSON summary: the verdict, the run's settings, the rounds, per test its counts, time,
    examples a second (one worker's and the host's), events and failures, per worker its examples
    and seconds, and the events of the whole run with the expected paths it missed."""
    events = all_events(totals)
    return {
        "result": overall(totals),
        "meta": meta,
        "rounds": [asdict(r) for r in rounds],
        "tests": {
            nodeid: {
                **asdict(t),
                "name": t.name,
                "result": t.result,
                "failures_count": t.failed + t.crashed,
                "examples_per_second_per_worker": t.per_worker_rate,
                "examples_per_second_host": t.host_rate,
            }
            for nodeid, t in sorted(totals.items())
        },
        "workers": worker_totals(totals),
        "events": dict(events.most_common()),
        "not_reached": [p for p in expected_paths() if p not in events],
    }


def referenced_replays(totals: dict[str, Totals]) -> set[str]:
    return {Path(f.replay.split()[0]).name for t in totals.values() for f in t.failures if f.replay}


def prune_replays(out: Path, totals: dict[str, Totals]) -> None:
    """Remove the replay files of the intermediate examples a shrink went through, keeping those of
    the failures the report names."""
    keep = referenced_replays(totals)
    for path in (out / "replays").glob("*.json"):
        if path.name not in keep:
            path.unlink()


def write_all(out: Path, meta: dict[str, Any], rounds: list[RoundInfo], packed: bool = False) -> dict[str, Totals]:
    """Write summary.json, junit.xml and report.md for the rounds so far; returns the totals.
    `packed`: the report says the per-round files are in `markdown.PACKED` (see `pack`)."""
    totals = collect(out, rounds)
    (out / "summary.json").write_text(json.dumps(summary(meta, rounds, totals), indent=2, default=str) + "\n")
    junit.merge(
        [(r, junit_path(out, r.round), records.read(records.results_path(out, r.round))) for r in rounds],
        out / "junit.xml",
    )
    report = markdown.render(meta, rounds, totals, out, expected_paths(), matrix_text(), packed)
    (out / "report.md").write_text(report)
    return totals


def pack(out: Path) -> Path:
    """Move everything in `out` but `OUTPUT_FILES` into one gzipped tar file in it (for artifact
    stores that take few files); returns its path."""
    dest = out / markdown.PACKED
    others = [p for p in sorted(out.iterdir()) if p.name not in (*OUTPUT_FILES, dest.name)]
    with tarfile.open(dest, "w:gz") as tar:
        for path in others:
            tar.add(path, arcname=path.name)
    for path in others:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return dest
