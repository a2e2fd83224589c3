"""The `nightly` job: `python -m nightly` for what the budget leaves (or `--minutes`), its outputs
packed under `nightly/` (report.md, summary.json, junit.xml, details.tar.gz), the head of its report
in the summary. By default every property in fast bf16 on cuda; `--tests`, `--impl`, `--dtype`,
`--mps` and `--reference-device` narrow or move it (P1, P4 and P6 against the fully batched step in
fast float32, say).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.session import Session, pairs, suite_field

MARGIN_S = 75.0  # a round may outrun the minutes by about its length; packing the outputs takes some too
REPORT_LINES = 15  # of nightly/report.md, in the summary


@dataclass(slots=True, frozen=True)
class NightlyParams:
    device: str = suite_field("cuda", "cuda; python -m nightly takes best, cuda or cpu")
    numerics: str = suite_field("fast")
    dtype: str = suite_field("")
    impl: str = suite_field("")
    tests: tuple[str, ...] = field(default=(), metadata={"help": "test paths (default: every property)"})
    minutes: float = field(default=0.0, metadata={"help": "time of the rounds (0: what the budget leaves)"})
    examples: int = field(default=0, metadata={"help": "examples per test and round (0: by minutes)"})
    workers: int = field(default=-1, metadata={"help": "xdist workers (-1: one per core; 0: in-process)"})
    max_n: int = suite_field(0)
    reference_device: str = suite_field("")
    model: str = suite_field("")
    mps: bool = field(default=False, metadata={"help": "share each GPU among the workers through CUDA MPS"})
    database_dir: str = field(default="", metadata={"help": "the local example database (default: the nightly's)"})


def nightly(s: Session, p: NightlyParams) -> None:
    """Run the nightly job into `nightly/`, for `minutes` or what the budget leaves less `MARGIN_S`."""
    minutes = p.minutes or max(0.5, (s.left_s() - MARGIN_S) / 60)
    out = s.path("nightly")
    cmd = s.py("-m", "nightly", "--device", p.device, "--numerics", p.numerics, "--out", out, "--pack")
    cmd += ["--examples", str(p.examples)] if p.examples else ["--minutes", f"{minutes:.2f}"]
    cmd += pairs(("--dtype", p.dtype), ("--impl", p.impl), ("--reference-device", p.reference_device),
                 ("--model", p.model), ("--max-n", p.max_n), ("--database-dir", p.database_dir))  # fmt: skip
    cmd += ["--workers", str(p.workers)] if p.workers >= 0 else []
    cmd += ["--mps"] if p.mps else []
    cmd += ["--tests", *p.tests] if p.tests else []
    s.run("nightly", cmd)
    report = out / "report.md"
    if report.exists():
        head = report.read_text().splitlines()[:REPORT_LINES]
        s.sections.append("From nightly/report.md:\n\n" + "\n".join(head))
