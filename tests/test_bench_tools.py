"""Unit tests of the benchmark tools: settings, the floor's byte count, op counting, the report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from benchmarks.floor import propose_passes, step_bytes, weight_bytes
from benchmarks.opcount import count_ops
from benchmarks.report import write_report
from benchmarks.settings import CPU_DEFAULTS, HostConfig, host_config, parse_impls, parse_sizes, resolve
from benchmarks.tables import bootstrap_rows, fmt_time, section
from benchmarks.worlds import bench_impl, build_bench_world
from properties.impl import load


def test_settings_resolve_overrides_and_rejects_bad_sizes() -> None:
    s = resolve({"device": "cpu", "sizes": "1,3", "budget": "0.5"}, env={"MTP_BENCH_HIDDEN": "32"})
    assert (s.sizes, s.budget_s, s.hidden, s.dtype) == ((1, 3), 0.5, 32, CPU_DEFAULTS.dtype)
    assert s.impls == ("loop", "literal", "vector")
    with pytest.raises(ValueError, match="positive integers"):
        parse_sizes("1,0")
    with pytest.raises(ValueError, match="expected cpu"):
        resolve({"device": "tpu"}, env={})


def test_settings_name_the_implementations_as_the_registry_does() -> None:
    s = resolve({"device": "cpu", "impls": "vector,loop"}, env={"MTP_BENCH_IMPLS": "literal"})
    assert s.impls == ("vector", "loop"), "an option wins over the environment"
    assert resolve({"device": "cpu"}, env={"MTP_BENCH_IMPLS": "vector-gathered"}).impls == ("vector-gathered",)
    with pytest.raises(ValueError, match="expected names among loop, literal, vector"):
        parse_impls("per_seq,batched")
    assert bench_impl("loop").name == "loop" and bench_impl("literal").step is load("literal").step
    with pytest.raises(ValueError, match="benchmark implementation 'batched'"):
        bench_impl("batched")


def test_settings_of_the_p1_benchmarks_come_from_options_then_the_environment() -> None:
    env = {"MTP_VERIFY_NUMERICS": "exact", "MTP_VERIFY_DTYPE": "float64", "MTP_BENCH_HOST_WORKERS": "3"}
    cfg = host_config({"max_n": 8, "host_examples": "5", "host_mps": "1"}, env, device="cpu")
    assert (cfg.numerics, cfg.dtype, cfg.max_n, cfg.workers, cfg.examples, cfg.mps) == (
        "exact",
        "float64",
        8,
        3,
        5,
        True,
    )
    assert host_config({}, {}, device="cpu") == HostConfig(device="cpu", workers=os.cpu_count() or 1)


def test_weight_bytes_cover_every_weight_once() -> None:
    w = build_bench_world(CPU_DEFAULTS, 2).model.weights
    assert sum(weight_bytes(w)) == sum(t.numel() * t.element_size() for t in w.state_dict().values())


def test_step_bytes_by_hand() -> None:
    world = build_bench_world(CPU_DEFAULTS, 2)
    cfg, w = world.model.cfg, world.model.weights
    main_w, draft_w, embed_w = weight_bytes(w)
    kv_pos, k = 2 * cfg.hidden * 4, 3  # float32
    lens = [10, 20]
    expected = main_w + embed_w + k * (draft_w + embed_w)  # both rows in one group
    expected += (12 + 22) * kv_pos  # main KV: cache + new position read, new position written
    expected += sum((p + i + 2) * kv_pos for p in (11, 21) for i in range(k))  # drafter KV
    expected += 2 * 4 * cfg.ssm_state * 4  # SSM state and checkpoint
    expected += 2 * 4 * cfg.vocab_size * (2 + 2 * k)  # logits written and read
    assert step_bytes(cfg, w, lens, [True, True], k) == expected
    assert propose_passes(5, 2) == 3 and propose_passes(5, 1) == 5 and propose_passes(0, 8) == 0


def test_count_ops_skips_views_and_counts_kernels() -> None:
    x = torch.ones(4)
    counts = count_ops(lambda: (x.view(2, 2) + 1).sum(), "cpu")
    assert counts.device_ops == 2  # add, sum; the view launches nothing
    assert counts.host_reads == 0


def _entry(n: int, impl: str, median: float) -> dict[str, object]:
    info = {
        "n": n,
        "impl": impl,
        "device": "cpu",
        "device_name": "test cpu",
        "dtype": "float32",
        "numerics": "fast",
        "hidden": 64,
        "vocab_size": 1024,
        "ladder_nd": 3,
        "group_cap": 64,
        "bandwidth_Bps": 1e10,
        "floor_s": 1e-4,
        "device_ops": 10 * n,
        "host_reads": None,
    }
    return {"name": f"{impl}{n}", "stats": {"median": median, "rounds": 5}, "extra_info": info}


def test_report_writes_table_between_markers(tmp_path: Path) -> None:
    data = {"benchmarks": [_entry(2, "loop", 4e-3), _entry(2, "literal", 1e-3)], "datetime": "today"}
    results = tmp_path / "results.json"
    results.write_text(json.dumps(data))
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# B\n\nkept\n\n{section('cpu').render('old')}\n\ntail\n")
    write_report(results, tmp_path)
    text = doc.read_text()
    assert "kept" in text and "tail" in text and "old" not in text
    assert "| 2 | 4 ms | 1 ms | 4.00x | 100 µs | 10x | 20 / 20 |" in text
    rows = bootstrap_rows(data["benchmarks"])  # type: ignore[arg-type]
    assert rows[0].speedup("literal") == pytest.approx(4.0)


def test_report_reads_older_files_under_todays_names(tmp_path: Path) -> None:
    results = tmp_path / "old.json"
    results.write_text(json.dumps({"benchmarks": [_entry(2, "per_seq", 4e-3), _entry(2, "batched", 1e-3)]}))
    write_report(results, tmp_path)
    text = (tmp_path / "benchmarks.md").read_text()
    assert "| n | loop | literal |" in text and "| 2 | 4 ms | 1 ms | 4.00x |" in text


def test_report_merges_files_of_one_run_split_by_batch_size(tmp_path: Path) -> None:
    files = []
    for n in (2, 4):
        path = tmp_path / f"results-n{n}.json"
        path.write_text(json.dumps({"benchmarks": [_entry(n, "loop", 4e-3), _entry(n, "literal", 1e-3)]}))
        files.append(path)
    write_report(files, tmp_path)
    text = (tmp_path / "benchmarks.md").read_text()
    assert "| 2 | 4 ms | 1 ms |" in text and "| 4 | 4 ms | 1 ms |" in text
    with pytest.raises(ValueError, match="no results files"):
        write_report([], tmp_path)


def test_a_missing_section_is_appended_and_fmt_time_units(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"benchmarks": [_entry(2, "loop", 4e-3), _entry(2, "literal", 1e-3)]}))
    (tmp_path / "benchmarks.md").write_text("# B\n")
    write_report(results, tmp_path)
    text = (tmp_path / "benchmarks.md").read_text()
    assert text.startswith(f"# B\n\n{section('cpu').begin}\n") and text.endswith(f"{section('cpu').end}\n")
    assert [fmt_time(x) for x in (2e-6, 0.0123, 1.5, None)] == ["2 µs", "12.3 ms", "1.5 s", "-"]
