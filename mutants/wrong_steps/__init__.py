"""Steps that are wrong on purpose, with the step's signature `(model, active, sched, idxs, ladder_nd,
verify_ctx) -> None`: the negative controls `tests/test_negative_control.py` runs the whole suite
against (`--impl mutants.wrong_steps.MODULE:FUNCTION`), every test of the step required to fail."""
