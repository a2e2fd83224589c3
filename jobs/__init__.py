"""The GPU runner: a few jobs, each one thing in one results directory with a summary, each fitting
one ten-minute call on one GPU host (`--budget-s`).

    python -m jobs check    [options] --out DIR   the GPU tests, then the properties (fast bf16 on cuda)
    python -m jobs mutants  [options] --out DIR   the mutation catalogue (python -m mutants.run)
    python -m jobs bench    [options] --out DIR   the pytest-benchmark benchmarks, tables and plots
    python -m jobs profile  [options] --out DIR   python -m benchmarks.profile in its modes
    python -m jobs nightly  [options] --out DIR   the nightly job (python -m nightly)

Each job is a plain function of a session (`jobs.session`) and its parameters (a dataclass per
job); `jobs.cli` turns the parameters into options. docs/benchmarks.md shows a GPU session.
"""
