"""Run the reference step and the implementation under test side by side on identical worlds.

The implementation runs first, with the spec's fault plan injected, every model call and log record
captured, and the numbers it decided on kept (its logits rows and drafter rows). Its call outcomes
are translated into per-sequence faults for the reference (`properties.sides.translate`), which then runs
on a fresh copy of the same world with its decisions recorded. The translation trusts only calls
that match the plan the reference's outcome implies (`properties.sides.call_plan`), so the two are settled
together: the reference re-runs until the translated faults no longer change. In fast numerics, a
decision the implementation took otherwise is forced onto the reference when the replay oracle
explains it by rounding (`properties.sides.replay_oracle`), and the reference re-runs again.

In fast numerics the reference may run on another device than the implementation
(`ModelSpec.reference_device`, the CPU while the implementation runs on a GPU): the world is built
there, copied bit for bit to the implementation's device, and after the step the implementation's
world and captured numbers are copied back, so every check compares like with like.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from properties import counters
from properties.config import DEFAULT_REPLAYS, RunConfig
from properties.failures.report import format_report
from properties.impl import Impl, canonical
from properties.sides import outside
from properties.sides.call_plan import Plan, expected_plan
from properties.sides.faults import FaultyModel
from properties.sides.forcing import forced_round
from properties.sides.mismatch import Mismatch
from properties.sides.outside_weights import remember_weights, weights_written
from properties.sides.side_by_side import Side, SideBySide
from properties.sides.stats import record_paths
from properties.sides.translate import Envelope, Translation, translate
from properties.tolerance import Tolerance
from properties.worlds.specs import WorldSpec
from properties.worlds.world import World, build_world, on_device
from reference.capture import DraftRows
from reference.decisions import DecisionKey, DecisionLog
from reference.eos_hold import eos_mask_ids
from reference.penalties import PositionKind, penalty_params_for
from reference.step import step_mtp_bootstrap_per_seq
from reference.telemetry import LogCapture

MAX_ROUNDS = 16


def run_guarded(
    world: World,
    model: FaultyModel | Callable[[World], FaultyModel],
    impl: Impl,
    decisions: DecisionLog | None = None,
) -> tuple[Side, list[Mismatch]]:
    """`run_step` of the implementation, and what it changed outside its world (`properties.sides.outside`):
    weights it wrote are put back before this returns. `model` is the model the step runs through, or
    what makes it from `world` (the implementation's `prepare_model`, which may put a new model in the
    world): the watch begins before that runs, so that a preparation is held to the step's rule (it
    may build new objects, never change existing ones). The world's model as given is watched, and a
    new one the preparation put in the world from when it was made. A report of any change ends with
    what was compared by identity only (`outside.not_fingerprinted`)."""
    given = [world.model]
    remember_weights(given)
    packages = outside.packages_of(getattr(impl.step, "__module__", ""), canonical(impl.name).partition(":")[0])
    before = outside.snapshot(given, packages)
    faulty = model if isinstance(model, FaultyModel) else model(world)
    made = [world.model] if world.model is not given[0] else []
    remember_weights(made)
    made_before = outside.model_snapshot(made, len(given))
    side = run_step(world, faulty, impl.step, decisions)
    changed = outside.changes(before, outside.snapshot(given, packages, before))
    changed += outside.changes(made_before, outside.model_snapshot(made, len(given)))
    changed += weights_written(given + made)
    out = [Mismatch(None, f"{what}, outside the world (before | after the step)", a, b) for what, a, b in changed]
    note = outside.not_fingerprinted(before) if out else None
    if note:  # on the first, which the report shows in full
        out[0].field += f"\n      {note}"
    return side, out


def run_step(world: World, model: Any, step: Callable[..., Any], decisions: DecisionLog | None = None) -> Side:
    """Run `step` on `world` through `model`, capturing logs, drafter rows and an escaping exception."""
    error: BaseException | None = None
    with LogCapture() as cap, DraftRows() as drafts, decisions or contextlib.nullcontext():
        try:
            step(model, world.active, world.sched, world.idxs, world.ladder_nd, world.verify_ctx)
        except Exception as e:  # reported by the comparator, with the example
            error = e
    return Side(world, model, cap.records, error, decisions.records if decisions else [], drafts.rows, drafts.unmasked)


def side_on(side: Side, device: str) -> Side:
    """`side` with its world, captured rows and call details on `device` (bit for bit), so that the
    implementation's run on a GPU is checked against a reference run on the CPU."""
    world = on_device(side.world, device)
    side.model.moved(world.model)
    return Side(
        world,
        side.model,
        side.logs,
        side.error,
        side.decisions,
        {k: v.to(device) for k, v in side.draft_rows.items()},
        {k: v.to(device) for k, v in side.unmasked_draft_rows.items()},
    )


def envelope(before: World) -> Envelope:
    cfg = before.model.cfg
    return Envelope(
        before={a.seq.slot_idx: a.seq for a in before.active},
        last_tokens={a.seq.slot_idx: a.last_token for a in before.active},
        vocab_size=cfg.vocab_size,
        max_seq_len=cfg.max_seq_len,
        stash_capacity=cfg.stash_capacity,
        meta_stride=before.model.propose_meta_stride(),
    )


def masked_tokens(world: World, faults: list[Any]) -> dict[int, torch.Tensor]:
    """By slot, the tokens each sequence's masks exclude before the step (EOS while held, banned
    ids, what its grammar disallows): what a `masked_row` fault keeps finite. Empty unless one of
    `faults` (fault specs or per-sequence faults) is such a fault."""
    out: dict[int, torch.Tensor] = {}
    if not any(f.kind == "masked_row" for f in faults):
        return out
    for a in world.active:
        vocab = world.model.cfg.vocab_size
        m = torch.zeros(vocab, dtype=torch.bool)
        m[list(eos_mask_ids(a, len(a.output_tokens)))] = True
        m[list(penalty_params_for(a, PositionKind.VERIFY, world.sched.watchdog.min_reasoning_floor).banned_ids)] = True
        if a.grammar_state is not None:
            m |= ~a.grammar_state.allowed_mask()
        out[a.seq.slot_idx] = m
    return out


def run_reference(
    base: World, tr: Translation, forced: dict[DecisionKey, int], masked: dict[int, torch.Tensor] | None = None
) -> Side:
    """The per-sequence loop on a fresh copy of `base`, with the translated faults and the forced
    decisions; decisions are recorded with their scores."""
    world = base.clone()
    world.model.poison_scratch()
    model = FaultyModel(world.model, (), list(tr.seq_faults), capture_conf=True, masked=masked)
    return run_step(world, model, step_mtp_bootstrap_per_seq, DecisionLog(forced=dict(forced), keep_scores=True))


def plan_of(sbs: SideBySide) -> Plan:
    """The plan the reference's current outcome implies."""
    before, ref = sbs.before, sbs.ref
    return expected_plan(
        before.active,
        before.idxs,
        ref.world.active,
        ref.model.calls,
        sbs.spec.step,
        before.model.mtp_propose_batch_max(),
        sbs.under_test.per_row_fast_greedy_calls,
    )


def run_side_by_side(spec: WorldSpec, impl: Impl, replays: Path = DEFAULT_REPLAYS) -> SideBySide:
    """Both runs of `spec`, `impl` the implementation under test; a failure's replay goes under
    `replays`. Raises AssertionError, with the report, when the implementation changed anything
    outside its world."""
    ref_device = spec.model.ref_device
    base = build_world(spec, ref_device)
    before = base.clone()
    masked = masked_tokens(before, list(spec.faults))

    impl_world = base.clone() if ref_device == spec.model.device else on_device(base, spec.model.device)

    def prepared(world: World) -> FaultyModel:  # inside the watch: what a preparation changes is seen
        world.model = impl.prepare_model(world.model)
        world.model.poison_scratch()
        return FaultyModel(world.model, spec.faults, masked=masked)

    impl_side, changed = run_guarded(impl_world, prepared, impl)
    if ref_device != spec.model.device:
        impl_side = side_on(impl_side, ref_device)

    env = envelope(before)
    calls = impl_side.model.calls
    tr = translate(calls, env)
    ref = run_reference(base, tr, {}, masked)
    out = SideBySide(spec, before, ref, impl_side, tr, impl, outside=changed, replay_dir=replays)
    fast = Tolerance.of(spec.model).fast
    for _ in range(MAX_ROUNDS):
        out.plan = plan_of(out)
        settled = translate(calls, env, out.plan, impl_side.model.rows)
        if settled.seq_faults != out.translation.seq_faults:
            out.translation = settled
        else:
            out.translation = settled
            draws, near, refused = forced_round(out, fast)
            out.unexplained = refused
            if not draws and not near:
                break
            for f in draws + near:
                out.forced[f.key] = f.impl_choice
            out.own_draws += draws
            out.forced_decisions += near
        out.ref = run_reference(base, out.translation, out.forced, masked)
        out.rounds += 1
    counters.count_run(len(out.forced_decisions), [f.ref_margin for f in out.forced_decisions], decisions(out))
    if out.outside:
        raise AssertionError(format_report("state outside the compared world", out, out.outside))
    return out


def decisions(sbs: SideBySide) -> int:
    """Token and draft decisions the reference made (cuts excluded)."""
    return sum(1 for d in sbs.ref.decisions if d.key.kind in ("token", "draft"))


def checked_side_by_side(
    claim: str, run: RunConfig, spec: WorldSpec, *checks: Callable[[SideBySide], list[Mismatch]], record: bool = False
) -> SideBySide:
    """`spec` run side by side with `run`'s implementation (`run_side_by_side`), which fails with
    `claim`'s report unless every one of `checks` finds no mismatch (their mismatches reported in
    the order given); with `record`, the example's paths are recorded first
    (`properties.sides.stats.record_paths`). Returns the run, for a property's further claims."""
    sbs = run_side_by_side(spec, run.impl, run.replays)
    if record:
        record_paths(sbs)
    mismatches = [m for check in checks for m in check(sbs)]
    assert not mismatches, format_report(claim, sbs, mismatches)
    return sbs
