"""The suite's tests of its own spec and parts, marked `self_test`: the gate (G1-G7) and the seed's
literal dispatch, the propose-error level, the fully batched step's model internals, the behaviour
matrix, the promoted cases' presence. They check the suite's code whatever `--impl` names, so they
pass against any step; the properties of the step live in `properties/step/` and
`properties/generations/` (`tests/test_negative_control.py` holds each of those to fail against a
step that does nothing)."""
