"""The files a round writes as it goes, one JSON object a line, each line appended and closed as
soon as it is known, so a killed process loses nothing it already wrote (a torn last line is
skipped when read)."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path
from typing import Any


def results_path(out: Path, round_no: int) -> Path:
    """Where round `round_no` records its collected tests, finished tests and its end."""
    return out / "results" / f"round-{round_no:03d}.jsonl"


def plan_path(out: Path, round_no: int) -> Path:
    """Where round `round_no`'s plan (max_examples per test) is kept."""
    return out / "plans" / f"round-{round_no:03d}.json"


def observed_path(out: Path, round_no: int, worker: str, pid: int) -> Path:
    """Where one process of round `round_no` writes its Hypothesis observability records."""
    return out / "observed" / f"round-{round_no:03d}-{worker}-{pid}.jsonl"


def append(path: Path, record: dict[str, Any]) -> int:
    """Append `record` as one line to `path` (created with its folder when missing); the bytes
    written."""
    line = (json.dumps(record, default=jsonable, sort_keys=True) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as f:
        f.write(line)
    return len(line)


def read(path: Path) -> list[dict[str, Any]]:
    """Every complete record of `path` in order; none when it is missing. A line that does not
    parse (the one a killed writer tore) is skipped."""
    if not path.is_file():
        return []
    return parse_lines(path.read_text(encoding="utf-8"))


def parse_lines(text: str) -> list[dict[str, Any]]:
    """The records of `text`, one JSON object a line; a line that does not parse is skipped."""
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def jsonable(value: Any) -> Any:
    """A JSON-friendly stand-in for what `json` cannot write: a dataclass as its fields, an enum as
    its name, a set as a sorted list, anything else as its repr."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.hex()
    return repr(value)


def observation_record(observation: Any, round_no: int, worker: str) -> dict[str, Any]:
    """A Hypothesis observation (a test case or an info record) as a dict with the fields of
    Hypothesis's observability schema, plus the round and the worker that produced it."""
    record: dict[str, Any] = {f.name: getattr(observation, f.name) for f in dataclasses.fields(observation)}
    metadata = record.get("metadata")
    if metadata is not None and hasattr(metadata, "to_json"):
        record["metadata"] = metadata.to_json()
    record["nightly"] = {"round": round_no, "worker": worker}
    return record
