"""The `mutants` job: the mutation catalogue (`python -m mutants.run`) on one host, by default in fast
bf16 on cuda, one job per core (`--mps`: sharing each GPU through CUDA MPS), at mixes of up to 16
rows (the whole suite at 64 takes far past one call), its results `mutants.json` and `mutants.md`.
`--matrix` runs every test against every mutant and then writes the measured behaviour x property
matrix (`python -m mutants.matrix`) to `coverage-matrix.md`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from jobs.session import Session, pairs, suite_field

MATRIX_S = 60.0  # kept for the matrix
MAX_SUITE_S = 480.0  # the longest a mutant's suite may take by default


@dataclass(slots=True, frozen=True)
class MutantsParams:
    device: str = suite_field("cuda", "cuda; python -m mutants.run takes cpu or cuda")
    numerics: str = suite_field("fast")
    dtype: str = suite_field("bfloat16")
    impl: str = suite_field("", "literal; the implementation whose catalogue runs")
    jobs: int = field(default=0, metadata={"help": "mutants at a time (0: one per core)"})
    mps: bool = field(default=False, metadata={"help": "the jobs share each GPU through CUDA MPS"})
    max_n: int = suite_field(16, "16; 0: the suite's")
    timeout_s: float = field(default=0.0, metadata={"help": "seconds a mutant (0: the budget less a minute, <= 480)"})
    only: tuple[str, ...] = field(default=(), metadata={"help": "these mutant ids only"})
    subset: bool = field(default=False, metadata={"help": "one mutant per behaviour id"})
    reference_device: str = suite_field("")
    keep_going: bool = field(default=False, metadata={"help": "every test against each mutant"})
    matrix: bool = field(default=False, metadata={"help": "keep going, then the measured coverage matrix"})


def mutants(s: Session, p: MutantsParams) -> None:
    """Run the catalogue for what the budget leaves (less the matrix's time when asked for)."""
    keep_going = p.keep_going or p.matrix
    left = s.left_s() - (MATRIX_S if p.matrix else 0.0)
    suite_s = p.timeout_s or max(30.0, min(MAX_SUITE_S, left - 60))
    results = s.path("mutants.json")
    cmd = s.py("-m", "mutants.run", "--numerics", p.numerics, "--dtype", p.dtype, "--device", p.device)
    cmd += ["--jobs", str(p.jobs or os.cpu_count() or 1), "--timeout", f"{suite_s:g}"]
    cmd += ["--json", str(results), "--markdown", str(s.path("mutants.md"))]
    cmd += pairs(("--max-n", p.max_n), ("--impl", p.impl), ("--reference-device", p.reference_device))
    cmd += [a for mutant in p.only for a in ("--only", mutant)]
    cmd += [flag for flag, on in (("--subset", p.subset), ("--keep-going", keep_going), ("--mps", p.mps)) if on]
    s.run("mutants", cmd, limit_s=left)
    if p.matrix:
        s.run("matrix", s.py("-m", "mutants.matrix", results, "--out", s.path("coverage-matrix.md")), MATRIX_S)
