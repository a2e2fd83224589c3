"""`python -m jobs`: each job's command lines and results directory, run on the CPU in a tiny
configuration (check, bench, profile, nightly) or as a dry run (mutants, and the GPU defaults), and
the set-up every job shares: wheels, the environment check, the budget, the exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch

from benchmarks import profile as profiler
from jobs import profile as profile_job
from jobs.check import AUTO, NONE, gpu_test_files
from jobs.environment import wheels_to_install
from jobs.session import Session, child_env

ROOT = Path(__file__).resolve().parents[1]


def jobs(*args: str | Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """`python -m jobs ARGS` in a fresh process from the repository root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    cmd = [sys.executable, "-m", "jobs", *map(str, args)]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def summary(out: Path) -> dict[str, Any]:
    data = json.loads((out / "summary.json").read_text())
    assert (out / "summary.md").read_text().startswith(f"# {data['job']} job: {data['verdict']}")
    return data


def steps(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in data["steps"]}


def passing(*args: str | Path, out: Path) -> dict[str, Any]:
    """`python -m jobs ARGS --out OUT`, which must exit 0; its summary."""
    done = jobs(*args, "--out", out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return summary(out)


def test_a_check_job_runs_the_gpu_tests_then_the_properties(tmp_path: Path) -> None:
    out = tmp_path / "check"
    tests = [
        "properties/step/test_p1_equivalence.py",
        "properties/step/test_p2_gate.py",
        "properties/self_tests/test_gate.py::test_gate_truth_table",
    ]
    gpu_tests = "tests/test_paged_attention.py"
    data = passing("check", "--device", "cpu", "--numerics", "exact", "--dtype", "float64", "--tests", *tests,
                   "--max-n", "2", "--workers", "2", "--gpu-tests", gpu_tests, out=out)  # fmt: skip
    ran = steps(data)
    assert list(ran) == ["gpu-tests", "properties"] and data["verdict"] == "ok"
    assert ran["gpu-tests"]["outcome"] == "2 skipped", "no GPU here: the `-m gpu` tests skip"
    assert ran["properties"]["outcome"] == "5 passed", "P1 and P2's dispatch in two cases each, the truth table in one"
    props = ran["properties"]["command"]
    assert props[props.index("--device") :][:8] == ["--device", "cpu", "--numerics", "exact", "--dtype", "float64",
                                                   "--impl", "literal"]  # fmt: skip
    assert props[-2:] == ["-n", "2"] and "--hypothesis-profile" in props
    assert "| all 5 | 304 | 0 / " in (out / "summary.md").read_text(), "the properties' totals (51 + 51 a split test)"
    assert json.loads((out / "environment.json").read_text())["torch"] == torch.__version__
    assert (out / "logs" / "properties.log").exists() and (out / "properties-summary.json").exists()


def test_a_bench_job_writes_the_results_their_report_and_summary(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    ran = steps(passing("bench", "--device", "cpu", "--sizes", "2", "--impls", "loop,vector", "--cell-budget-s", "0.02",
                        "--mixes", "greedy", "--summary-n", "2", "--repeat", "2", out=out))  # fmt: skip
    assert list(ran) == ["bench-greedy-1", "bench-greedy-2", "report", "vector-summary"]
    assert "--bench-impls" in ran["bench-greedy-1"]["command"]
    results = json.loads((out / "bench-greedy-2.json").read_text())["benchmarks"]
    assert sorted(b["extra_info"]["impl"] for b in results) == ["loop", "vector"]
    assert "| n | loop | vector | speedup over the loop (vector) |" in (out / "report" / "benchmarks.md").read_text()
    text = (out / "summary.md").read_text()
    assert "| greedy | x86_64" in text and "| bench-greedy-2 | vector |" in text, "both runs' medians at n = 2"


def test_a_profile_job_runs_each_mode_for_each_mix(tmp_path: Path) -> None:
    out = tmp_path / "profile"
    ran = steps(passing("profile", "--device", "cpu", "--modes", "timers", "copies", "--mixes", "greedy", "mixed",
                        "--n", "4", "--steps", "2", "--profile-args", "--calls 3 --ints 64", out=out))  # fmt: skip
    assert list(ran) == ["profile-timers-greedy", "profile-timers-mixed", "profile-copies"]
    assert ran["profile-timers-mixed"]["outcome"].startswith("median ")
    assert json.loads((out / "profile-timers-mixed.json").read_text())["config"]["mix"] == "mixed"
    assert json.loads((out / "profile-copies.json").read_text())["config"]["ints"] == 64


def test_a_nightly_job_runs_the_nightly_into_its_folder(tmp_path: Path) -> None:
    out = tmp_path / "nightly"
    data = passing("nightly", "--device", "cpu", "--examples", "2", "--workers", "0", "--tests",
                   "properties/step/test_p2_gate.py", "--database-dir", tmp_path / "db", out=out)  # fmt: skip
    assert steps(data)["nightly"]["status"] == "ok"
    assert (out / "nightly" / "report.md").exists() and "From nightly/report.md" in (out / "summary.md").read_text()


def test_a_mutants_job_plans_the_catalogue_on_the_gpu_host(tmp_path: Path) -> None:
    out = tmp_path / "mutants"
    done = jobs("mutants", "--mps", "--impl", "vector", "--dtype", "float32", "--matrix", "--dry-run", "--out", out)
    assert done.returncode == 0, done.stderr
    data = summary(out)
    ran = steps(data)
    assert data["verdict"] == "planned" and list(ran) == ["mutants", "matrix"]
    cmd = ran["mutants"]["command"]
    assert cmd[1:3] == ["-m", "mutants.run"] and {"--mps", "--keep-going"} <= set(cmd)
    assert cmd[cmd.index("--device") + 1] == "cuda" and cmd[cmd.index("--max-n") + 1] == "16"
    assert cmd[cmd.index("--json") + 1] == str(out.resolve() / "mutants.json")
    assert ran["matrix"]["command"][-2:] == ["--out", str(out.resolve() / "coverage-matrix.md")]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is visible")
def test_a_cuda_job_without_a_cuda_device_stops_before_running_anything(tmp_path: Path) -> None:
    out = tmp_path / "check"
    done = jobs("check", "--out", out)
    assert done.returncode == 2 and "no CUDA device is visible here" in done.stderr
    data = summary(out)
    assert data["steps"] == [] and "The job could not run" in (out / "summary.md").read_text()


def test_a_job_writes_only_into_a_new_or_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "old").write_text("")
    done = jobs("profile", "--device", "cpu", "--dry-run", "--out", tmp_path)
    assert done.returncode == 2 and "not empty" in done.stderr and sorted(os.listdir(tmp_path)) == ["old"]


def tiny_wheel(folder: Path, name: str) -> Path:
    """A wheel of one pure module `name` (version 1.0)."""
    dist = f"{name}-1.0.dist-info"
    files = {
        f"{name}.py": "VALUE = 1\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{dist}/RECORD"])
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for arcname, text in files.items():
            z.writestr(arcname, text)
    return path


def test_wheels_go_into_the_site_the_steps_import_from_and_never_a_cuda_torch_on_a_cpu_host(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    tiny_wheel(wheels, "jobs_probe")
    cuda = [wheels / "torch-2.11.0+cu130-cp312-cp312-linux_x86_64.whl", wheels / "nvidia_cublas-13.0-py3-none.whl"]
    for fake in cuda:
        fake.write_text("not a wheel")
    assert wheels_to_install(wheels, cuda_host=False) == ([wheels / "jobs_probe-1.0-py3-none-any.whl"], sorted(cuda))
    assert wheels_to_install(wheels, cuda_host=True)[1] == []
    if shutil.which("nvidia-smi"):
        pytest.skip("an NVIDIA driver is here: the CUDA wheels would be installed")
    out, site = tmp_path / "out", tmp_path / "site"
    facts = passing("profile", "--device", "cpu", "--modes", "copies", "--profile-args", "--calls 2 --ints 8 --n 2",
                    "--wheels", wheels, "--site", site, out=out)["environment"]  # fmt: skip
    assert (site / "jobs_probe.py").exists() and not list(site.glob("torch*"))
    assert "torch-2.11.0+cu130" in facts["wheels left out (CUDA builds, no NVIDIA driver here)"]
    assert child_env(site, {"PYTHONPATH": "/x"})["PYTHONPATH"].split(os.pathsep) == [str(site), str(ROOT), "/x"]


def test_a_step_past_its_limit_is_interrupted_and_the_budget_skips_the_rest(tmp_path: Path) -> None:
    s = Session("test", tmp_path, budget_s=60, env=child_env(None), python=sys.executable)
    code = "import time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('interrupted, reports written')"
    step = s.run("sleeper", s.py("-c", code), limit_s=1)
    assert step.status == "cut" and "interrupted, reports written" in step.outcome, "SIGINT first: reports get written"
    s.budget_s = 0
    assert s.run("late", s.py("-c", "pass")).status == "skipped"


def test_the_gpu_tests_are_the_files_that_mark_any() -> None:
    """A module without GPU tests is not collected: its imports may need packages a GPU host lacks."""
    files = gpu_test_files((AUTO, "tests/test_mine.py"))
    assert "tests/test_paged_attention.py" in files and "tests/test_static_passes.py" in files
    assert "tests/test_databases.py" not in files and files[-1] == "tests/test_mine.py"
    assert gpu_test_files((NONE,)) == [] == gpu_test_files(()), "none: no GPU tests, not a path named none"
    with pytest.raises(ValueError, match="takes no paths besides it"):
        gpu_test_files((NONE, "tests/test_mine.py"))


def test_the_profile_job_knows_the_profilers_modes() -> None:
    assert profile_job.MODES == profiler.MODES and profile_job.STEP_MODES == profiler.STEP_MODES
