"""P5: only the registered differences. Each of D1, D2 and D4 is real (leaving it out of the
comparison shows exactly that difference) and explains nothing beyond what it says."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.calls import check_calls
from properties.checks.compare import check_equivalence
from properties.checks.differences import expected_confidences
from properties.checks.logs import check_logs
from properties.config import RunConfig
from properties.failures.report import format_report
from properties.run.shards import sharded
from properties.sides.harness import run_reference, run_side_by_side
from properties.sides.translate import Translation
from properties.worlds.fault_kinds import SeqFault
from properties.worlds.specs import FaultSpec, WorldSpec
from properties.worlds.strategies import world_specs


def clean(spec: WorldSpec) -> WorldSpec:
    """No organic failures: every group fits the stride and the stash."""
    return replace(spec, model=replace(spec.model, meta_stride=64, stash_capacity=max(64, len(spec.seqs))))


def proposing(spec: WorldSpec, group_cap: int) -> WorldSpec:
    """Every sequence greedy, speculating, far from its limits and holding EOS (no stop ids), so every
    row proposes: a row whose greedy token is its EOS (in a tied model EOS shares its embedding row
    with the next ids) or a stop id would finish instead."""
    seqs = tuple(
        replace(s, spec="on", max_tokens_left=12, grammar=None, temperature=0.0, min_tokens=s.n_out + 2, stop_ids=())
        for s in spec.seqs
    )
    return replace(
        clean(spec),
        seqs=seqs,
        model=replace(spec.model, group_cap=group_cap, meta_stride=64, stash_capacity=64),
        step=replace(spec.step, ladder_nd=max(1, spec.step.ladder_nd)),
    )


@covers("P5 only registered differences", "D4")
@sharded(3)
@given(data=st.data())
def test_p5_without_faults_only_d4(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(world_specs(run, min_n=2), label="spec")
    sbs = run_side_by_side(clean(spec), run.impl, run.replays)
    raw = check_equivalence(sbs, registered=("D1",))
    conf_slots = {s for s, c in expected_confidences(sbs).items() if c}
    slot_of = {a.seq_id: a.seq.slot_idx for a in sbs.before.active}
    unexplained = [m for m in raw if not (m.field == "pending_draft_conf" and slot_of.get(m.seq_id) in conf_slots)]
    assert not unexplained, format_report("P5 difference outside D4", sbs, unexplained)
    if conf_slots:  # D4 is real: the loop records no confidences where the group did
        assert len(raw) == len(conf_slots), format_report("P5 D4 did not show", sbs, raw)


@covers("P5 only registered differences", "D1")
@sharded(3)
@given(data=st.data())
def test_p5_d1_checkpoint_after_failed_save(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(world_specs(run, min_n=1), label="spec")
    spec = replace(proposing(spec, group_cap=1), faults=(FaultSpec("save_hidden_for_mtp_from_stash", 0, "err"),))
    sbs = run_side_by_side(spec, run.impl, run.replays)
    saves = [c for c in sbs.impl.model.calls if c.op == "save_hidden_for_mtp_from_stash"]
    assert saves and saves[0].injected, f"no per-sequence fallback happened: {[c.op for c in sbs.impl.model.calls]}"
    # Every example fails a save, so every example also checks what the failure leads to: the calls
    # after it (no propose for that row) and its log records, not only the state.
    found = check_equivalence(sbs) + check_calls(sbs) + check_logs(sbs)
    assert not found, format_report("P5 D1 applied", sbs, found)
    raw = check_equivalence(sbs, registered=("D4",))
    failed_seq = next(a.seq_id for a in sbs.before.active if a.seq.slot_idx == saves[0].slots[0])
    fields = {(m.seq_id, m.field.split()[0]) for m in raw}
    assert fields and all(sid == failed_seq and f in ("ssm.ckpt", "ckpt_pos") for sid, f in fields), format_report(
        "P5 D1: raw difference beyond the skipped checkpoint", sbs, raw
    )


@covers("P5 only registered differences", "D2")
@sharded(2)
@given(data=st.data())
def test_p5_d2_decode_batch_failure_finishes_every_row(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(world_specs(run, min_n=2), label="spec")
    spec = replace(clean(spec), faults=(FaultSpec("decode_batch", 0, "err"),))
    sbs = run_side_by_side(spec, run.impl, run.replays)
    assert not check_equivalence(sbs), format_report("P5 D2 translated", sbs, check_equivalence(sbs))
    rows = [(sbs.before.active[i], sbs.impl.world.active[i]) for i in sbs.before.idxs]
    for b, a in rows:
        assert a.finished and a.finish_reason is None, f"seq {a.seq_id}: a failed decode_batch finishes every row"
        assert a.seq.seq_len == b.seq.seq_len and a.output_tokens == b.output_tokens, (
            f"seq {a.seq_id}: a failed decode_batch decodes and emits nothing"
        )
    # D2 is a real difference: the loop with only the first row's decode failing decodes the others.
    first = rows[0][0].seq.slot_idx
    loop = run_reference(sbs.before, Translation(seq_faults=[SeqFault("decode", first, "err")]), {})
    for i in sbs.before.idxs[1:]:
        assert loop.world.active[i].seq.seq_len == sbs.before.active[i].seq.seq_len + 1, (
            f"seq {sbs.before.active[i].seq_id}: the loop should have decoded it despite the first row's failure"
        )
