"""The nightly equivalence job: the property suite under the `nightly` profile for a time or an
example budget, one pytest-xdist worker per GPU (or per CPU core), a shared example database, and
an output folder with JUnit XML, a JSON summary, Hypothesis observability records and a report a
person reads in a minute. `python -m nightly --help`; docs/nightly.md."""
