"""Mutation self-check: a catalogue of deliberate bugs in `batched/` and a runner that shows the
property suite kills each of them (`python -m mutants.run`)."""
