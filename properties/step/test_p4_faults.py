"""P4: faults. Any model call the step makes may fail or return its alternate result; the outcome
is the one its per-sequence equivalent gives in the reference (plus D1/D2), nothing is lost, and no
sequence is decoded twice."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.compare import check_equivalence
from properties.config import RunConfig
from properties.run.shards import sharded
from properties.sides.harness import checked_side_by_side
from properties.sides.mismatch import Mismatch
from properties.sides.side_by_side import SideBySide
from properties.worlds.fault_plans import fault_specs
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import world_specs


def check_nothing_lost(sbs: SideBySide) -> list[Mismatch]:
    """Every bootstrapped sequence advanced by at most one token and one cache position, kept
    its history, and is either finished or holds its new token as last token."""
    out = []
    touched = {sbs.before.active[i].seq_id for i in sbs.before.idxs}
    for b, a in zip(sbs.before.active, sbs.impl.world.active, strict=True):
        if b.seq_id not in touched:
            continue
        grew = len(a.output_tokens) - len(b.output_tokens)
        if a.output_tokens[: len(b.output_tokens)] != b.output_tokens or grew not in (0, 1):
            out.append(
                Mismatch(b.seq_id, "output history", f"{b.output_tokens} + at most one", str(a.output_tokens), ("B11",))
            )
        if a.seq.seq_len - b.seq.seq_len not in (0, 1):
            out.append(
                Mismatch(
                    b.seq_id, "seq_len (decoded twice?)", f"{b.seq.seq_len} or +1", str(a.seq.seq_len), ("B2", "B3")
                )
            )
        if not a.finished and grew == 1 and a.last_token != a.output_tokens[-1]:
            out.append(Mismatch(b.seq_id, "last_token", str(a.output_tokens[-1]), str(a.last_token), ("B12",)))
    return out


@covers("P4 faults", "B3", "B7", "B9", "B13", "B19", "B20", "B21", "B22", "B23", "D1", "D2")
@sharded(2)
@given(data=st.data(), extra=fault_specs(max_faults=1))
def test_p4_faults(run: RunConfig, shard: int, data: st.DataObject, extra: tuple) -> None:
    spec: WorldSpec = data.draw(world_specs(run, faults=True), label="spec")
    if not spec.faults:
        spec = replace(spec, faults=extra)
    checked_side_by_side("P4 faults", run, spec, check_equivalence, check_nothing_lost, record=True)
