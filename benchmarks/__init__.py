"""Benchmarks of the bootstrap step (per-sequence loop against the batched step, with the memory
floor per batch size), of the P1 equivalence check's throughput, and the report that turns a
pytest-benchmark JSON file into `docs/benchmarks.md`."""
