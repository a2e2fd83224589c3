"""P4 on greedy mixes: half or more of the rows are eligible for the batched argmax (greedy, no
grammar, no EOS hold, neutral penalties; the boot-argmax and fast-greedy levers mostly on) and the
others are not, each for one reason that changes what per-row sampling does. At most one fault hits
the argmax path: a logits row the per-row sampler refuses (a NaN logit, a +inf logit, nothing
finite: that row finishes, B9; the batched argmax refuses the batch and every row samples per row,
B7) or a failed `argmax_batch` (B7). General mixes rarely put such a row on an eligible row next to
another eligible one. The bad row is written into a copy of the decode's logits or into the very
tensor the decode returned (`FaultSpec.in_place`): a step that keeps what it derived from the
logits before the edit (a memo of the argmax, say) decides on stale numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.checks.logs import check_logs
from properties.config import RunConfig
from properties.run.shards import sharded
from properties.sides.harness import checked_side_by_side
from properties.worlds.aimed_worlds import greedy_worlds
from properties.worlds.specs import WorldSpec


@covers("P4 faults", "B4", "B5", "B6", "B7", "B8", "B9")
@sharded(3)
@given(data=st.data())
def test_p4_argmax_path_faults(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(greedy_worlds(run), label="spec")
    checked_side_by_side("P4 argmax path faults", run, spec, check_equivalence, check_calls, check_logs)
