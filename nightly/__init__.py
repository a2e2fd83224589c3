"""The nightly equivalence job: the property suite under the `nightly` profile for a time or an
example budget, every test's examples spread over one pytest-xdist worker per CPU core (and over
the GPUs), a shared example database, and an output folder with a report a person reads in a
minute. `python -m nightly --help`; docs/nightly.md."""
