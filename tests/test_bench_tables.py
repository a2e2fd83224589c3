"""Unit tests of the three-implementation table, the plot and the target summary (no benchmark runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.report import have_matplotlib, plot_rows
from benchmarks.tables import bootstrap_rows, bootstrap_table, section
from benchmarks.vector_summary import main as summary_main


def _entry(n: int, impl: str, median: float, mix: str = "mixed", ops: int = 10) -> dict[str, object]:
    info = {
        "n": n,
        "impl": impl,
        "device": "cuda",
        "device_name": "test gpu",
        "dtype": "bfloat16",
        "numerics": "fast",
        "mix": mix,
        "hidden": 64,
        "vocab_size": 1024,
        "ladder_nd": 3,
        "group_cap": 64,
        "bandwidth_Bps": 1e12,
        "floor_s": 1e-4,
        "device_ops": ops,
        "host_reads": 2,
    }
    return {"name": f"{impl}{n}", "stats": {"median": median, "rounds": 5}, "extra_info": info}


def three(n: int, mix: str = "mixed") -> list[dict[str, object]]:
    return [
        _entry(n, "loop", 0.2, mix, 900),
        _entry(n, "literal", 4e-3, mix, 300),
        _entry(n, "vector", 5e-4, mix, 200),
    ]


def test_the_table_shows_all_three_implementations() -> None:
    rows = bootstrap_rows(three(64))
    table = bootstrap_table(rows)
    assert "| n | loop | literal | vector | speedup over the loop (literal / vector) |" in table
    assert "| 64 | 200 ms | 4 ms | 500 µs | 50x / 400x | 100 µs | 40x / 5.00x | 900 / 300 / 200 | 2 / 2 / 2 |" in table
    assert rows[0].speedup("vector") == pytest.approx(400.0)


def test_the_table_shows_only_the_implementations_the_file_has() -> None:
    table = bootstrap_table(bootstrap_rows(three(2)[:2]))
    assert "vector" not in table and "| 2 | 200 ms | 4 ms | 50x |" in table
    table = bootstrap_table(bootstrap_rows([three(2)[0], three(2)[2]]))
    assert "| n | loop | vector | speedup over the loop (vector) |" in table and "literal" not in table


def test_summary_checks_the_targets_and_fills_its_markers(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    results = tmp_path / "r.json"
    results.write_text(
        json.dumps({"benchmarks": [*three(64), *three(64, "greedy")[:2], _entry(64, "vector", 1e-3, "greedy")]})
    )
    doc = tmp_path / "page.md"
    doc.write_text(f"top\n{section('vector-summary').render('to be filled')}\nbottom\n")
    assert summary_main([str(results), "--doc", str(doc)]) == 0
    out = capsys.readouterr().out
    mixed = "| mixed | test gpu | 200 ms | 4 ms | 500 µs | 100 µs | 5.0x (<= 8x: met) | 400x (>= 100x: met) | 200 | 2 |"
    mixed += " - |"
    assert mixed in out
    assert "| greedy | test gpu | 200 ms | 4 ms | 1 ms | 100 µs | 10.0x (<= 5x: missed) | 200x (>= 100x: met) |" in out
    text = doc.read_text()
    assert "to be filled" not in text and "top" in text and "bottom" in text and "400x" in text


@pytest.mark.skipif(not have_matplotlib(), reason="needs matplotlib (the bench extra)")
def test_the_plot_draws_the_three_implementations(tmp_path: Path) -> None:
    path = tmp_path / "p.png"
    assert plot_rows(bootstrap_rows(three(1) + three(64)), path, "t")
    assert path.stat().st_size > 0


def test_the_summary_counts_the_rounds_on_a_slowed_host(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    vector = _entry(64, "vector", 6e-4)
    vector["stats"] = {"median": 6e-4, "rounds": 4, "data": [5e-4, 5e-4, 7e-4, 9e-4]}
    vector["extra_info"]["host_probe_s"] = [3e-5, 3.1e-5, 4e-5, 5e-5]  # type: ignore[index]
    results = tmp_path / "r.json"
    results.write_text(json.dumps({"benchmarks": [*three(64)[:2], vector]}))
    assert summary_main([str(results)]) == 0
    assert "| 2 of 4 (others' median 0.5 ms) |" in capsys.readouterr().out
