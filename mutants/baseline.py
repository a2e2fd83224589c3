"""The baseline (the unchanged suite, which must pass) as parts that run side by side with the
mutants: a run's wall time is at least the baseline's, and the baseline runs every test to the end,
so one part per job, balanced on the last run's times of each test function (longest first, each to
the least loaded part; a function with no time counts as the median of those known).

The times live in the killers' memo under `BASELINE_TIMES` (an order only, as the killers are: a
wrong or missing time makes the parts uneven, never a verdict different)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from mutants.execute import BASELINE, Result
from mutants.order import SuiteTest, memo_key

BASELINE_TIMES = "baseline-seconds"


def split(tests: list[SuiteTest], parts: int, seconds: dict[str, float]) -> list[list[SuiteTest]]:
    """`tests` in at most `parts` non-empty parts of about equal time, each in suite order."""
    known = [seconds[t.nodeid] for t in tests if t.nodeid in seconds]
    default = statistics.median(known) if known else 1.0
    weight = {t.nodeid: seconds.get(t.nodeid, default) for t in tests}
    bins: list[list[int]] = [[] for _ in range(max(1, min(parts, len(tests))))]
    load = [0.0] * len(bins)
    for i in sorted(range(len(tests)), key=lambda i: -weight[tests[i].nodeid]):
        k = load.index(min(load))
        bins[k].append(i)
        load[k] += weight[tests[i].nodeid]
    return [[tests[i] for i in sorted(b)] for b in bins if b]


def merged(parts: list[Result]) -> Result:
    """The baseline's one result from its parts' results: it passed when every part did (else the
    first part's failure that is not a pass), its tests in the order run, its time the longest
    part's (they ran side by side)."""
    out = Result.of(None, "survived")
    failed = [r for r in parts if r.status != "survived"]
    if failed:
        first = failed[0]
        out.status, out.killer, out.reason, out.examples = first.status, first.killer, first.reason, first.examples
    for r in parts:
        out.tests += r.tests
        out.tests_run += r.tests_run
        out.examples_total += r.examples_total
    out.seconds = max((r.seconds for r in parts), default=0.0)
    out.device = ",".join(sorted({r.device for r in parts}))
    return out


def function_seconds(r: Result) -> dict[str, float]:
    """Each test function's seconds in a baseline result (its cases' summed)."""
    out: dict[str, float] = {}
    for t in r.tests:
        name = t["nodeid"].partition("[")[0]
        out[name] = round(out.get(name, 0.0) + float(t["seconds"]), 3)
    return out


def load_times(path: Path, mode_key: str) -> dict[str, float]:
    """The last baseline's seconds per test function in `mode_key`; empty when none was recorded."""
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text()).get(BASELINE_TIMES, {}).get(memo_key(mode_key), {}))


def record_times(path: Path, mode_key: str, r: Result) -> None:
    """Put a passing baseline's times into the memo (`load_times`), sorted, for the next run's parts."""
    if r.id != BASELINE or r.status != "survived" or not r.tests:
        return
    memo = json.loads(path.read_text()) if path.is_file() else {}
    times = memo.setdefault(BASELINE_TIMES, {})
    times[memo_key(mode_key)] = dict(sorted(function_seconds(r).items()))
    memo[BASELINE_TIMES] = dict(sorted(times.items()))
    path.write_text(json.dumps(dict(sorted(memo.items())), indent=1) + "\n")
