"""Benchmarks of the bootstrap step (the implementations side by side per batch size, with the memory
floor), of the P1 equivalence check's throughput, their report (`benchmarks.report`) and the
profiler (`benchmarks.profile`); docs/benchmarks.md has the details."""
