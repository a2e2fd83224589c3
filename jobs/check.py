"""The `check` job: the GPU tests (`pytest -m gpu` over the test files that have any), then the
properties against one implementation in the numerics and dtype asked for (on a GPU by default in
fast bf16) for the rest of the budget, with the suite's summary plugin (examples and near-ties per
property). Optionally P9's figures first.

Other selections are parameters, for example the hand-built mixes against the fully batched step in
fast float32: `--tests tests/test_vector_step.py --select matches_reference --impl vector --dtype float32
--gpu-tests`; the near-ties P1 and P3 force: `--tests properties/step/test_p1_equivalence.py
properties/step/test_p3_calls.py --max-n 16`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from jobs.session import ROOT, Session, pairs, read_json, suite_field

GPU_TESTS_SHARE = 0.4  # of the budget, at most, for the GPU tests
AUTO = "auto"  # the GPU tests: every file of tests/ that marks a test `gpu`
NONE = "none"  # no GPU tests (as is `--gpu-tests` with no path)


@dataclass(slots=True, frozen=True)
class CheckParams:
    device: str = suite_field("cuda")
    numerics: str = suite_field("fast")
    dtype: str = suite_field("bfloat16")
    impl: str = suite_field("literal")
    tests: tuple[str, ...] = field(default=("properties",), metadata={"help": "test paths of the property run"})
    select: str = field(default="", metadata={"help": "pytest -k expression for the property run"})
    max_n: int = suite_field(0)
    reference_device: str = suite_field("same")
    profile: str = field(default="ci", metadata={"help": "Hypothesis profile of the property run"})
    workers: int = field(default=0, metadata={"help": "pytest-xdist workers (0: one per core; 1: none)"})
    mps: bool = field(default=False, metadata={"help": "the workers share each GPU through CUDA MPS"})
    gpu_tests: tuple[str, ...] = field(
        default=(AUTO,),
        metadata={"help": f"paths of the `-m gpu` run ({AUTO}: the files of tests/ that mark any; {NONE}: skip)"},
    )
    generations_minutes: float = field(default=0.0, metadata={"help": "P9's figures for this long first (0: none)"})


def suite_options(p: CheckParams) -> list[str]:
    """The suite's options for the property run."""
    args = ["--device", p.device, "--numerics", p.numerics, "--dtype", p.dtype, "--impl", p.impl]
    reference = p.reference_device if p.reference_device != "same" else ""
    return args + pairs(("--reference-device", reference), ("--max-n", p.max_n))


def gpu_test_files(paths: tuple[str, ...]) -> list[str]:
    """`paths`, with `AUTO` standing for the files of tests/ that name `mark.gpu` (so that a module
    whose own imports need packages a GPU host may lack, and that has no GPU test, is not collected);
    none at all where `paths` is `NONE` alone (ValueError where `NONE` comes with paths)."""
    if NONE in paths:
        if len(paths) > 1:
            raise ValueError(f"--gpu-tests: {NONE!r} skips the GPU tests and takes no paths besides it: {list(paths)}")
        return []
    found = [
        str(f.relative_to(ROOT)) for f in sorted((ROOT / "tests").glob("test_*.py")) if "mark.gpu" in f.read_text()
    ]
    return [f for p in paths for f in (found if p == AUTO else [p])]


def check(s: Session, p: CheckParams) -> None:
    """Run the GPU tests, P9's figures (when asked) and the properties, in that order, the last for
    what the budget leaves."""
    gpu_tests = gpu_test_files(p.gpu_tests)
    if gpu_tests:
        xml = s.path("logs", "gpu-tests.xml")
        gpu = s.py("-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", *gpu_tests, "--junitxml", xml)
        s.run("gpu-tests", gpu, limit_s=GPU_TESTS_SHARE * s.budget_s, ok=(0, 5), junit=xml)
    if p.generations_minutes > 0:
        figures = s.py("-m", "properties.generations.figures", "--device", p.device, "--numerics", p.numerics,
                       "--dtype", p.dtype, "--impl", p.impl, "--minutes", p.generations_minutes)  # fmt: skip
        s.run("generations", figures, limit_s=60 * p.generations_minutes + 60)
    xml = s.path("logs", "properties.xml")
    props = s.py("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "properties.run.summary_plugin", *p.tests)
    props += ["--summary-json", s.path("properties-summary.json"), "--junitxml", xml]
    props += ["--hypothesis-profile", p.profile, *suite_options(p)]
    props += ["-k", p.select] if p.select else []
    workers = p.workers or os.cpu_count() or 1
    props += ["-n", str(workers)] if workers > 1 else []
    props = [str(a) for a in props]
    if p.mps:
        props = s.py("-m", "jobs.mps", "--", *props)
    s.run("properties", props, ok=(0,), junit=xml)
    table = properties_table(read_json(s.path("properties-summary.json")))
    if table:
        s.sections.append(table)


def properties_table(rows: object) -> str:
    """Markdown of the summary plugin's rows (all of them: properties-summary.json): the properties that
    did not pass or met near-ties, each with its examples, near-ties of its decisions, result and
    seconds, then the totals; "" without rows."""
    if not isinstance(rows, list) or not rows:
        return ""
    lines = ["| property | examples | near-ties / decisions | result | seconds |", "|---|---:|---:|---|---:|"]
    for r in rows:
        if r["result"] != "PASS" or r.get("near_ties", 0):
            ties = f"{r.get('near_ties', 0)} / {r.get('decisions', 0)}"
            lines.append(f"| {r['test']} | {r['examples']} | {ties} | {r['result']} | {r['seconds']:.1f} |")
    failed = sum(r["result"] != "PASS" for r in rows)
    ties = f"{sum(r.get('near_ties', 0) for r in rows)} / {sum(r.get('decisions', 0) for r in rows)}"
    verdict = f"{failed} not passed" if failed else "PASS"
    lines.append(f"| all {len(rows)} | {sum(r['examples'] for r in rows)} | {ties} | {verdict} | "
                 f"{sum(r['seconds'] for r in rows):.1f} |")  # fmt: skip
    return "\n".join(lines)
