"""The GPU runner: a few jobs (check, mutants, bench, profile, nightly), each one thing in one results
directory with a summary, each fitting one ten-minute call on one GPU host: `python -m jobs JOB
[options] --out DIR` (`jobs.cli`). Each job is a plain function of a session (`jobs.session`) and its
parameters (a dataclass per job, turned into options); docs/benchmarks.md shows a GPU session."""
