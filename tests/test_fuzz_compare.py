"""The table `python -m mutants.fuzz_compare` prints from its trials (no trial runs here)."""

from __future__ import annotations

from mutants.fuzz_compare import summary_rows


def trial(engine: str, seed: int, executions: int, killed: bool = True) -> dict:
    return {"engine": engine, "seed": seed, "executions": executions, "killed": killed, "seconds": 2.0 + seed}


def test_the_table_gives_medians_worst_cases_and_trials_that_reached_the_cap() -> None:
    results = {
        "m": [
            trial("hypothesis", 1, 7),
            trial("hypothesis", 2, 100),
            trial("hypothesis", 3, 5),
            trial("hypofuzz", 1, 12),
            trial("hypofuzz", 2, 200, killed=False),
            {"engine": "hypofuzz", "seed": 3, "killed": None, "error": "crashed"},
        ]
    }
    rows = summary_rows(results)
    assert rows[2] == "| `m` | hypothesis | 3/3 | 7 / 100 (7, 100, 5) | 4.0 |"
    assert rows[3] == "| `m` | hypofuzz | 1/2 | - / >200 (12, >200) | 3.5 |", "an errored trial is left out"
