"""Which catalogue mutants a second implementation meets (`mutants.reach`)."""

from __future__ import annotations

from pathlib import Path

from mutants.catalogue import CATALOGUE, by_id
from mutants.reach import applies, enclosing, reached_by
from mutants.spec import mutant

VECTOR_IMPL = "vector"


def test_enclosing_names_the_innermost_function(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "X = 1\n\nclass C:\n    def f(self):\n        return 2\n\ndef g():\n    def h():\n        return 3\n"
    )
    assert enclosing("m.py", "return 2", tmp_path) == "C.f"
    assert enclosing("m.py", "return 3", tmp_path) == "g.<locals>.h"
    assert enclosing("m.py", "X = 1", tmp_path) == ""


def test_a_mutant_applies_where_its_function_ran(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def ran():\n    return 1\n\ndef idle():\n    return 2\n")
    reached = frozenset({("m.py", "ran")})
    assert applies(mutant("a", "m.py", "B1", "x", ("return 1", "return 0")), reached, tmp_path)
    assert not applies(mutant("b", "m.py", "B1", "x", ("return 2", "return 0")), reached, tmp_path)


def test_the_fully_batched_step_meets_the_code_it_shares_and_not_the_code_it_replaces() -> None:
    reached = reached_by(VECTOR_IMPL)
    shared = {m.id for m in CATALOGUE if applies(m, reached)}
    for m in CATALOGUE:
        if m.file in ("batched/gate.py", "batched/dispatch.py", "batched/model_checks.py"):
            assert m.id in shared, m.id  # the gate and the batched operations' checks are shared
        if m.file == "batched/batched_model.py":  # the model's checks and argmax are shared, its passes replaced
            in_passes = {enclosing(m.file, e.original) for e in m.edits} <= {
                "BatchedMtpModel._decode_rows",
                "BatchedMtpModel._propose_rows",
            }
            assert (m.id in shared) != in_passes, m.id
    assert {"group-chunk-off-by-one", "rows-by-slot-idx", "fallback-full-ladder"} <= shared  # propose_from_stash
    assert not {"greedy-ignores-eos-hold", "argmax-for-one-row", "decode-failure-retried"} & shared
    assert applies(by_id("gate-one-row"), frozenset())  # checked by P2 whatever the implementation
