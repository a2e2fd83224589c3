"""The two engines' bootstraps of one step, as explicit results.

The implementation engine bootstraps once (`bootstrap_impl` fills an `ImplBoot`): through the
dispatch with the implementation under test when the gate holds, the per-sequence loop otherwise,
with the step's planned faults injected. The loop engine's step then runs on copies of its engine
until it settles (`settle_reference`, one `RefRound` a run), as the single-step harness settles a
reference: the implementation's call outcomes translated into per-sequence faults through the plan
the loop's outcome implies, and in fast numerics the decisions the replay oracle explains forced onto
it; the settled copy becomes the loop engine.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batched.gate import can_batch_bootstrap
from properties.generations.oracle import Forced, Trace, VerifyRows, divergences, trace_of
from properties.generations.reach import Reach
from properties.generations.spec import GenerationSpec
from properties.impl import Impl
from properties.sides.faults import FaultyModel
from properties.sides.forcing import forced_round
from properties.sides.harness import MAX_ROUNDS, decisions, envelope, masked_tokens, plan_of, run_guarded, run_step
from properties.sides.mismatch import Mismatch
from properties.sides.side_by_side import ForcedDecision, Side, SideBySide
from properties.sides.translate import Envelope, Translation, translate
from properties.worlds.fault_kinds import Call
from properties.worlds.specs import FaultSpec
from properties.worlds.world import World, copy_seq
from reference.decisions import DecisionKey, DecisionLog
from reference.engine import Engine, StepRecord, engine_step
from reference.step import step_mtp_bootstrap_per_seq
from reference.telemetry import LogCapture
from reference.verify import verify_seq


@dataclass(slots=True)
class ImplBoot:
    """What the implementation engine's bootstrap of one step left: its side (sequences as it left
    them), the envelope of the world it found and that world (its engine's scheduler context),
    whether the batched step ran, what it changed outside its world, and its rows' requests by slot."""

    side: Side | None = None
    env: Envelope | None = None
    before: World | None = None
    batched: bool = False
    outside: list[Mismatch] = field(default_factory=list)
    slot_to_id: dict[int, int] = field(default_factory=dict)

    @property
    def calls(self) -> list[Call]:
        return self.side.model.calls if self.side is not None else []


@dataclass(slots=True)
class RefRound:
    """One run of the loop engine's step while it settles: the translation and forced decisions it
    ran with, and what it left (the engine copy, its bootstrap side, the verify decisions)."""

    translation: Translation
    boot_forced: dict[DecisionKey, int] = field(default_factory=dict)
    verify_forced: dict[DecisionKey, int] = field(default_factory=dict)
    forced: list[Forced] = field(default_factory=list)
    own_draws: list[ForcedDecision] = field(default_factory=list)  # the implementation's own draws, forced
    refused: list[str] = field(default_factory=list)
    engine: Engine | None = None
    rec: StepRecord = field(default_factory=StepRecord)
    before: World | None = None
    side: Side | None = None
    sbs: SideBySide | None = None
    verify_trace: Trace = field(default_factory=dict)
    decisions: int = 0

    def reset(self) -> None:
        self.before = self.side = self.sbs = None

    @property
    def calls(self) -> list[Call]:
        return self.side.model.calls if self.side is not None else []

    @property
    def confidences(self) -> dict[int, list[float]]:
        return self.side.model.conf_by_slot if self.side is not None else {}


@dataclass(slots=True, frozen=True)
class Settling:
    """What settling the loop engine's step needs: the spec, the implementation, where replays go,
    the numerics, the number of the step, the implementation engine's verify trace and how a
    differing verify decision is explained (fast numerics)."""

    spec: GenerationSpec
    impl: Impl
    replays: Path
    fast: bool
    step: int
    impl_verify_trace: Trace
    explain_verify: Callable[..., Any]


def clone_engine(e: Engine) -> Engine:
    """An independent copy of an engine: model caches, scheduler context, resources, requests."""
    return Engine(
        e.model.clone(),
        copy.deepcopy(e.sched),
        copy.deepcopy(e.verify_ctx),
        e.ladder_nd,
        copy.deepcopy(e.resources),
        list(e.waiting),
        [copy_seq(a) for a in e.active],
        dict(e.requests),
        dict(e.admitted_at),
        dict(e.finished),
        e.steps,
        e.next_id,
    )


def world_of(spec: GenerationSpec, model, active, sched, idxs, ladder_nd, verify_ctx) -> World:  # type: ignore[no-untyped-def]
    return World(spec, model, active, sched, verify_ctx, idxs, ladder_nd)  # type: ignore[arg-type]


def world_before(spec: GenerationSpec, model, active, sched, idxs, ladder_nd, verify_ctx) -> World:  # type: ignore[no-untyped-def]
    """The world as a bootstrap finds it (sequences and context copied; the model is only asked its
    limits)."""
    seqs = [copy_seq(a) for a in active]
    return world_of(spec, model, seqs, copy.deepcopy(sched), list(idxs), ladder_nd, copy.deepcopy(verify_ctx))


def frozen(side: Side) -> Side:
    """`side` with its sequences and scheduler context copied as the bootstrap left them (the step
    goes on with them)."""
    w = side.world
    side.world = World(
        w.spec, w.model, [copy_seq(a) for a in w.active], copy.deepcopy(w.sched), w.verify_ctx, w.idxs, 0
    )
    return side


def bootstrap_impl(  # type: ignore[no-untyped-def]
    spec: GenerationSpec,
    impl: Impl,
    plan: tuple[FaultSpec, ...],
    reach: Reach,
    boot: ImplBoot,
    model,
    active,
    sched,
    idxs,
    ladder_nd,
    verify_ctx,
) -> None:
    """The dispatch with the implementation under test, `plan` injected, into `boot`: its calls,
    rows and drafter rows (`properties.sides.harness.run_step`), what it changed outside its world, and
    the states of the requests it bootstrapped through the implementation (`reach`)."""
    before = world_before(spec, model, active, sched, idxs, ladder_nd, verify_ctx)
    boot.env = envelope(before)
    boot.slot_to_id = {a.seq.slot_idx: a.seq_id for a in active}
    faulty = FaultyModel(model, plan, masked=masked_tokens(before, list(plan)))
    world = world_of(spec, model, active, sched, idxs, ladder_nd, verify_ctx)
    # Its own (discarded) decision log: the step's log keeps the verify's decisions only.
    if can_batch_bootstrap(faulty, sched, len(idxs), spec.step.dflash_verify_raw_argmax):
        boot.batched, boot.before = True, before
        for i in idxs:
            reach.record(active[i], sched.watchdog.min_reasoning_floor)
        side, boot.outside = run_guarded(world, faulty, impl, DecisionLog())
    else:
        side = run_step(world, faulty, step_mtp_bootstrap_per_seq, DecisionLog())
    boot.side = frozen(side)
    if side.error is not None:
        raise side.error


def bootstrap_ref(spec: GenerationSpec, rnd: RefRound, model, active, sched, idxs, ladder_nd, verify_ctx) -> None:  # type: ignore[no-untyped-def]
    """The per-sequence loop with the round's translated faults and forced decisions, decisions and
    rows recorded (confidences for D4), into `rnd`."""
    before = world_before(spec, model, active, sched, idxs, ladder_nd, verify_ctx)
    faults = list(rnd.translation.seq_faults)
    faulty = FaultyModel(model, (), faults, capture_conf=True, masked=masked_tokens(before, faults))
    log = DecisionLog(forced=dict(rnd.boot_forced), keep_scores=True)
    world = world_of(spec, model, active, sched, idxs, ladder_nd, verify_ctx)
    side = run_step(world, faulty, step_mtp_bootstrap_per_seq, log)
    rnd.before, rnd.side = before, frozen(side)
    if side.error is not None:
        raise side.error


def settle_reference(engine: Engine, boot: ImplBoot, s: Settling) -> RefRound:
    """Run the loop engine's step on copies of `engine` until it settles against the implementation
    engine's bootstrap `boot` (module docstring); the last round, whose engine is the settled one."""
    impl_side = boot.side
    tr = translate(impl_side.model.calls, boot.env) if impl_side is not None else Translation()
    rnd = RefRound(tr)
    for _ in range(MAX_ROUNDS):
        eng = clone_engine(engine)
        rnd.reset()
        rows = VerifyRows()
        log = DecisionLog(forced=dict(rnd.verify_forced), keep_scores=True)
        with LogCapture(), log if s.fast else contextlib.nullcontext():
            rnd.rec = engine_step(eng, functools.partial(bootstrap_ref, s.spec, rnd), rows if s.fast else verify_seq)
        rnd.engine = eng
        rnd.verify_trace = trace_of(rows.rows, log.records) if s.fast else {}
        rnd.decisions = sum(1 for r in log.records if r.key.kind == "token")
        draws, new_boot, new_verify, refused = [], [], [], []
        if impl_side is not None and rnd.side is not None and rnd.before is not None:
            spec = s.spec  # a generation's spec stands for a single-step one here: the same model and step
            under_test = s.impl if boot.batched else s.impl.as_loop()  # the loop ran where the gate closed
            rnd.sbs = SideBySide(
                spec,
                rnd.before,
                rnd.side,
                impl_side,
                rnd.translation,
                under_test,
                replay_dir=s.replays,  # type: ignore[arg-type]
            )
            rnd.decisions += decisions(rnd.sbs)
            rnd.sbs.plan = plan_of(rnd.sbs)
            settled = translate(impl_side.model.calls, boot.env, rnd.sbs.plan, impl_side.model.rows)
            if settled.seq_faults != rnd.translation.seq_faults:
                rnd.translation = settled
                continue
            rnd.translation = rnd.sbs.translation = settled
            draws, new_boot, refused = forced_round(rnd.sbs, s.fast)
            rnd.own_draws += draws
            for f in draws:
                rnd.boot_forced[f.key] = f.impl_choice
        if s.fast:
            new_verify, why = divergences(rnd.verify_trace, s.impl_verify_trace, s.explain_verify)
            refused += why
        rnd.refused = refused
        if not draws and not new_boot and not new_verify:
            break
        for f in new_boot:
            rnd.boot_forced[f.key] = f.impl_choice
        for f in new_verify:
            rnd.verify_forced[f.key] = f.impl_choice
        rnd.forced += [Forced("bootstrap", s.step, f) for f in new_boot]
        rnd.forced += [Forced("verify", s.step, f) for f in new_verify]
    return rnd
