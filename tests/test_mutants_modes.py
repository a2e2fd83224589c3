"""The mutation runner's modes (numerics, dtype, device), its subset for CI, and the per-mode
tables of `docs/mutants.md` (cheap: no mutant runs here)."""

from __future__ import annotations

import os
from pathlib import Path

from mutants.catalogue import CATALOGUE, cover, named_ids
from mutants.execute import Result, RunOptions, child_env, import_path, pytest_args
from mutants.modes import DEFAULT_BEGIN, DEFAULT_END, Mode
from mutants.report import summarize, write_markdown
from mutants.run import devices, parse_args, selected
from mutants.spec import mutant

KILLED = Result("m", "batched/step.py", ["B1"], "bug", "killed", killer="p::t", examples=3, seconds=1.0)
BASELINE = Result("baseline", "", [], "", "survived", examples_total=10, seconds=2.0)


def test_the_mode_reaches_the_suites_options_and_environment(tmp_path: Path) -> None:
    opts = RunOptions(mode=Mode("fast", "bfloat16", "cuda"))
    cmd = pytest_args(["t"], opts, "cuda:1")
    assert cmd[cmd.index("--numerics") + 1] == "fast" and cmd[cmd.index("--dtype") + 1] == "bfloat16"
    assert cmd[cmd.index("--device") + 1] == "cuda:1" and "-x" in cmd
    assert "--dtype" not in pytest_args(["t"], RunOptions())
    assert "-x" not in pytest_args(["t"], RunOptions(keep_going=True))
    cmd = pytest_args(["t"], RunOptions(seed=7), None, None, tmp_path / "r.json")
    assert cmd[cmd.index("--mutants-result") + 1] == str(tmp_path / "r.json") and "--mutants-seed" in cmd


def test_the_suites_own_variables_do_not_reach_a_mutants_suite(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MTP_VERIFY_IMPL", "elsewhere:step")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k nothing")
    env = child_env(tmp_path)
    assert not any(k.startswith("MTP_VERIFY_") for k in env) and "PYTEST_ADDOPTS" not in env


def test_a_cpu_reference_reaches_the_suite_and_names_the_mode() -> None:
    mode = Mode("fast", "bfloat16", "cuda", reference_device="cpu")
    cmd = pytest_args(["t"], RunOptions(mode=mode), "cuda:0")
    assert cmd[cmd.index("--reference-device") + 1] == "cpu"
    assert mode.key == "fast-bfloat16-cuda-reference-cpu" and "reference on cpu" in mode.describe()
    assert "--reference-device" not in pytest_args(["t"], RunOptions(mode=Mode("fast", "bfloat16", "cuda")))


def test_the_copy_comes_first_and_no_other_copy_stays_on_the_import_path(tmp_path: Path) -> None:
    other, site = tmp_path / "other", tmp_path / "site"
    (other / "batched").mkdir(parents=True)
    (other / "batched" / "step.py").write_text("")
    site.mkdir()
    inherited = os.pathsep.join([str(site), str(other), ""])
    env = child_env(tmp_path / "copy")
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / "copy")
    assert import_path(tmp_path / "copy", inherited).split(os.pathsep) == [str(tmp_path / "copy"), str(site)]


def test_parallel_cuda_jobs_spread_over_every_gpu() -> None:
    assert devices(Mode(device="cuda"), 5, 2) == ["cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:0"]
    assert devices(Mode(device="cuda"), 3, 1) == ["cuda:0"] * 3
    assert devices(Mode(), 2, 8) == ["cpu", "cpu"]


def test_the_command_line_names_the_mode() -> None:
    args = parse_args(["--numerics", "fast", "--dtype", "bfloat16", "--device", "cuda", "--jobs", "16", "--subset"])
    assert (args.numerics, args.dtype, args.device, args.jobs, args.subset) == ("fast", "bfloat16", "cuda", 16, True)


def test_the_subset_keeps_a_mutant_for_every_behaviour_id_and_is_deterministic() -> None:
    subset = selected(None, subset=True)
    assert subset == cover(CATALOGUE) and len(subset) < len(CATALOGUE)
    assert set(named_ids(subset)) == set(named_ids(CATALOGUE))
    assert [m.id for m in subset] == [m.id for m in CATALOGUE if m in subset], "catalogue order"
    two = cover(CATALOGUE, per_id=2)
    for bid in named_ids(CATALOGUE):
        have = sum(bid in m.ids for m in CATALOGUE)
        assert sum(bid in m.ids for m in two) >= min(2, have), bid


def test_the_cover_prefers_mutants_that_cover_more_ids() -> None:
    a, b, c = (mutant("a", "f.py", "B1", "a"), mutant("b", "f.py", "B1 B2", "b"), mutant("c", "f.py", "B2", "c"))
    assert cover([a, b, c]) == [b]


def test_each_mode_has_its_own_table_and_the_default_keeps_the_old_markers(tmp_path: Path) -> None:
    page = tmp_path / "mutants.md"
    page.write_text(f"# Title\n\nkept\n\n{DEFAULT_BEGIN}\nold default table\n{DEFAULT_END}\n\nnotes\n")
    fast = Mode("fast", "bfloat16", "cpu", subset=True)
    write_markdown(page, summarize([KILLED], BASELINE, 5.0, "mutants", 2, fast), [KILLED], fast)
    text = page.read_text()
    assert "old default table" in text, "another mode leaves the default table alone"
    assert fast.begin in text and fast.end in text and "mode `fast-bfloat16-cpu-subset`" in text
    write_markdown(page, summarize([KILLED], BASELINE, 7.0, "mutants", 2), [KILLED])
    text = page.read_text()
    assert "old default table" not in text and text.count(fast.begin) == 1 and "mode `exact-default-cpu`" in text
    assert text.index("kept") < text.index(DEFAULT_BEGIN) < text.index("notes") < text.index(fast.begin)


def test_another_implementation_has_a_table_of_its_own() -> None:
    mode = Mode(impl="batched.vector:step")
    assert not mode.is_default and mode.key == "exact-default-cpu-batched.vector.step"
    assert mode.begin != DEFAULT_BEGIN and "implementation `batched.vector:step`" in mode.describe()


def test_the_json_summary_records_the_mode() -> None:
    s = summarize([KILLED], BASELINE, 5.0, "mutants", 16, Mode("fast", "bfloat16", "cuda"), keep_going=True)
    assert (s.numerics, s.dtype, s.device, s.mode, s.subset, s.keep_going) == (
        "fast",
        "bfloat16",
        "cuda",
        "fast-bfloat16-cuda",
        False,
        True,
    )
