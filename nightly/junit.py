"""One JUnit XML file for the whole run: each round's `<testsuite>` as pytest wrote it, renamed after
its round; for a round whose pytest never wrote its file (killed), a suite made from the
round's result records."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from nightly.totals import RoundInfo


def pytest_suites(path: Path) -> list[ET.Element]:
    """The `<testsuite>` elements of a pytest JUnit file; none when it is missing or torn."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    return [root] if root.tag == "testsuite" else list(root.iter("testsuite"))


def suite_from_records(recs: list[dict[str, Any]]) -> ET.Element:
    """A `<testsuite>` for a round from its result records: a test case per finished test, failed
    or crashed ones with their failure text, and the collected tests that never finished as skipped."""
    suite = ET.Element("testsuite")
    finished = set()
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    for r in recs:
        if r.get("event") != "test":
            continue
        finished.add(r["nodeid"])
        case = _case(suite, r["nodeid"], float(r.get("seconds") or 0.0))
        if r["outcome"] in ("failed", "crashed"):
            ET.SubElement(case, "failure", message=r["outcome"]).text = r.get("failure", "")
            counts["failures"] += 1
        elif r["outcome"] == "skipped":
            ET.SubElement(case, "skipped", message="skipped")
            counts["skipped"] += 1
    for r in recs:
        if r.get("event") == "collected":
            for nodeid in r["nodeids"]:
                if nodeid not in finished:
                    ET.SubElement(_case(suite, nodeid, 0.0), "skipped", message="not finished: the round was stopped")
                    counts["skipped"] += 1
    counts["tests"] = len(suite)
    for k, v in counts.items():
        suite.set(k, str(v))
    return suite


def _case(suite: ET.Element, nodeid: str, seconds: float) -> ET.Element:
    path, _, name = nodeid.partition("::")
    classname = path.removesuffix(".py").replace("/", ".")
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time=f"{seconds:.3f}")


def merge(rounds: list[tuple[RoundInfo, Path, list[dict[str, Any]]]], dest: Path) -> None:
    """Write `dest` from each round's (info, pytest JUnit path, result records)."""
    root = ET.Element("testsuites", name="nightly")
    for info, path, recs in rounds:
        suites = pytest_suites(path) or [suite_from_records(recs)]
        for suite in suites:
            suite.set("name", f"nightly round {info.round}")
            root.append(suite)
    ET.indent(root)
    ET.ElementTree(root).write(dest, encoding="utf-8", xml_declaration=True)
