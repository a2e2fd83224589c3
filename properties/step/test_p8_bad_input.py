"""P8: bad input. Unsorted, duplicate or out-of-range indices, out-of-vocabulary tokens, NaN logits
rows and full sequences give a clear error or a defined outcome, and every other sequence is left
untouched; each with the implementation under test (its model preparation and step)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.compare import check_equivalence, compare_untouched
from properties.checks.world_state import Owners, compare_buffers
from properties.config import RunConfig
from properties.failures.report import format_report
from properties.run.shards import sharded
from properties.sides.harness import run_side_by_side
from properties.worlds.specs import FaultSpec, WorldSpec
from properties.worlds.strategies import world_specs
from properties.worlds.world import build_world


@covers("P8 bad input", "B1")
@given(data=st.data())
def test_p8_bad_indices_raise_before_touching_anything(run: RunConfig, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(world_specs(run, min_n=2, wide_slots=True), label="spec")
    n = len(spec.seqs)
    kind = data.draw(st.sampled_from(("unsorted", "duplicate", "out_of_range", "negative")))
    idxs = {"unsorted": [n - 1, 0], "duplicate": [0, 0], "out_of_range": [0, n], "negative": [-1, 0]}[kind]
    world = build_world(spec)
    before = world.clone()
    impl = run.impl
    world.model = impl.prepare_model(world.model)  # what the step runs on, and what must stay unwritten
    with pytest.raises(ValueError, match="bootstrap ind"):
        impl.step(world.model, world.active, world.sched, idxs, world.ladder_nd, world.verify_ctx)
    for b, a in zip(before.active, world.active, strict=True):
        changed = compare_untouched(b, a)
        assert not changed, f"{kind} indices {idxs}: sequence {b.seq_id} changed: {changed[0]}"
    owners = Owners(before.active, before.model.cfg.block_size)
    written = compare_buffers(before.model, before.model, world.model, owners, 0.0)
    assert not written, f"{kind} indices {idxs}: the model changed: {written[0]}"


@covers("P8 bad input", "B2", "B9")
@sharded(2)
@given(data=st.data())
def test_p8_bad_rows_have_a_defined_outcome(run: RunConfig, shard: int, data: st.DataObject) -> None:
    """A NaN logits row finishes that row only (B9); an out-of-vocabulary last token or a full
    sequence fails the whole `decode_batch` (B2, D2); the rest matches the reference."""
    spec: WorldSpec = data.draw(world_specs(run, min_n=1, wide_slots=True), label="spec")
    kind = data.draw(st.sampled_from(("nan_row", "full", "out_of_vocab")))
    j = data.draw(st.sampled_from(spec.bootstrap))
    if kind == "nan_row":
        spec = replace(spec, faults=(FaultSpec("decode_batch", 0, "nan_row", data.draw(st.integers(0, 7))),))
    else:
        bad = {"full": {"cache_len": spec.model.max_seq_len}, "out_of_vocab": {"last_token": spec.model.vocab_size + 5}}
        seqs = list(spec.seqs)
        seqs[j] = replace(seqs[j], **bad[kind])
        spec = replace(spec, seqs=tuple(seqs))
    sbs = run_side_by_side(spec, run.impl, run.replays)
    mismatches = check_equivalence(sbs)
    assert not mismatches, format_report(f"P8 {kind}", sbs, mismatches)
    decode = next(c for c in sbs.impl.model.calls if c.op == "decode_batch")
    if kind == "nan_row":
        row_slot = decode.slots[decode.detail["row"]]
        a = next(x for x in sbs.impl.world.active if x.seq.slot_idx == row_slot)
        assert a.finished and a.finish_reason is None, "a NaN logits row finishes its sequence"
    else:
        assert decode.outcome == "err", f"{kind}: decode_batch should refuse the batch"
