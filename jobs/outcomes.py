"""What a step's files say, in a few words: a JUnit XML's test counts, a log's last line, a JSON
report's headline figures."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

HEADLINE_KEYS = (  # benchmarks.profile reports' figures worth a summary line, in this order
    ("median_ms", "median {:.3f} ms"),
    ("device_busy_ms", "device busy {:.3f} ms"),
    ("examples_per_s", "{:.2f} examples/s"),
    ("worst_overall_in_u", "worst {:.3g} u"),
    ("forced", "{} forced decisions"),
)


def junit_counts(path: Path) -> str:
    """ "N passed, N failed, N skipped" (zero counts left out) from a pytest JUnit XML file; "" when
    there is none or it cannot be read."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return ""
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    passed = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    parts = [(passed, "passed"), (total["failures"], "failed"), (total["errors"], "errors")]
    parts.append((total["skipped"], "skipped"))
    return ", ".join(f"{n} {word}" for n, word in parts if n) or "no tests"


def last_line(path: Path, width: int = 160) -> str:
    """The last non-empty line of a text file, cut to `width` characters; "" when there is none."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    tail = next((line.strip() for line in reversed(lines) if line.strip()), "")
    return tail if len(tail) <= width else tail[: width - 3] + "..."


def read_json(path: Path) -> Any:
    """The JSON in `path`, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def headline(report: Any) -> str:
    """A profile report's headline figures (`HEADLINE_KEYS`), or "" when it has none."""
    if not isinstance(report, dict):
        return ""
    return ", ".join(fmt.format(report[key]) for key, fmt in HEADLINE_KEYS if report.get(key) is not None)
