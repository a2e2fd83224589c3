"""Two engines side by side on identical copies of one world, for whole generations (P9).

Engine "impl" bootstraps through the dispatch with the implementation under test: the batched step
when the gate holds (G8), the per-sequence loop otherwise. Engine "ref" always bootstraps through
the per-sequence loop. Everything else (admission, verify, release) is the reference's and the
same in both. A planned fault is injected into the impl engine's next bootstrap; its call outcomes
are translated into per-sequence faults for the ref engine's bootstrap in the same step and settled
against the call plan the ref engine's outcome implies, exactly as the single-step harness does (the
ref engine's step reruns on a copy until the translation holds), so the two worlds must stay equal,
step after step. In fast numerics the same reruns force onto the ref engine the bootstrap and verify
decisions the replay oracle explains by rounding, and each finished request's solo decode is forced
likewise (`properties.generations.oracle`).

The registered differences over whole generations:
- D1: where the ref engine's bootstrap skipped a checkpoint after a failed save and the impl
  engine's took it, the two checkpoints differ. The entry stays registered (left out of the state
  comparison) until both engines have written it again; a verify that restores it in the meantime is
  counted (`PairStats.d1_reads`) and its consequences are held to the comparison like anything else.
- D2: applied by the translation (a failed decode of every row).
- D3: logs are not compared here (nothing a later step reads).
- D4: the impl engine's confidences must equal the reference drafter's where a group recorded them.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from batched.batched_model import BatchedMtpModel
from batched.gate import can_batch_bootstrap
from properties.checks.calls import check_calls
from properties.checks.logs import check_logs
from properties.checks.mismatch import Mismatch
from properties.checks.numerics import rounding
from properties.checks.replay_oracle import next_forced, replay_mismatches
from properties.checks.replay_oracle import row_mismatches as boot_row_mismatches
from properties.checks.world_state import Owners
from properties.config import DEFAULT_REPLAYS
from properties.faults import BAD_ROWS, Call, FaultyModel
from properties.generations.checks import StepView, check_resources, check_solo, compare_engines, solo_rows
from properties.generations.oracle import (
    Forced,
    ForcedTally,
    Taken,
    Trace,
    VerifyRows,
    bootstrap_trace,
    divergences,
    explain_token,
    logprobs_differences,
    trace_of,
)
from properties.generations.oracle import row_mismatches as trace_row_mismatches
from properties.generations.reach import Reach
from properties.generations.spec import Action, GenerationSpec, RequestSpec, Script
from properties.harness import MAX_ROUNDS, decisions, envelope, masked_tokens, plan_of, run_guarded, run_step
from properties.impl import Impl
from properties.side_by_side import ForcedDecision, Side, SideBySide
from properties.specs import FaultSpec
from properties.translate import Translation, translate
from properties.world import World, copy_seq, model_config, sched_for, shared_weights
from reference.decisions import Decision, DecisionKey, DecisionLog
from reference.engine import Engine, Finished, StepRecord, abort, engine_step, submit
from reference.model.config import ModelConfig
from reference.request import Request
from reference.solo import SoloResult, solo_decode
from reference.step import step_mtp_bootstrap_per_seq
from reference.telemetry import LogCapture
from reference.verify import verify_seq


def generation_config(spec: GenerationSpec) -> ModelConfig:
    """The model of `spec`: as a single-step world's, with `num_blocks` blocks in each cache when
    given (else enough for every slot's longest request)."""
    cfg = model_config(spec.model)
    full = spec.model.num_slots * math.ceil(spec.model.max_seq_len / spec.model.block_size)
    n = spec.num_blocks or full
    return replace(cfg, num_blocks=n, num_draft_blocks=n)


@functools.lru_cache(maxsize=16)
def base_model(spec: GenerationSpec) -> BatchedMtpModel:
    """Weights for a spec, built once; engines clone it (the cache seed does not change them)."""
    cfg = generation_config(replace(spec, cache_seed=0))
    return BatchedMtpModel(cfg, weights=shared_weights(cfg))


@dataclass(slots=True)
class PairStats:
    """What a run did, for reports and the measured figures."""

    steps: int = 0
    batched_bootstraps: int = 0
    generations: int = 0
    tokens: int = 0
    engine_steps_per_generation: list[int] = field(default_factory=list)
    verifies: int = 0
    drafts_proposed: int = 0
    drafts_accepted: int = 0
    bonus_tokens: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    faults_fired: int = 0
    slots_reused: int = 0
    crossed_blocks: int = 0
    d1_opened: int = 0
    d1_reads: int = 0
    d1_closed_by_rewrite: int = 0
    tally: ForcedTally = field(default_factory=ForcedTally)  # fast numerics: decisions and those forced
    solo_decisions: int = 0  # of them, the solo decodes' (fast numerics)
    top_ids_explained: int = 0  # top-logprob ids that differ from the solo decode's by rounding
    reach: Reach = field(default_factory=Reach)  # requests' states at their bootstraps through the implementation


@dataclass(slots=True)
class RefRound:
    """One run of the loop engine's step while it settles: the translation and forced decisions it
    ran with, and what it left (the engine copy, its bootstrap side, the verify decisions)."""

    translation: Translation
    boot_forced: dict[DecisionKey, int] = field(default_factory=dict)
    verify_forced: dict[DecisionKey, int] = field(default_factory=dict)
    forced: list[Forced] = field(default_factory=list)
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


class EnginePair:
    """The two engines of `spec`, the script of what was done to them, and the checks' state."""

    def __init__(self, spec: GenerationSpec, impl: Impl, replays: Path = DEFAULT_REPLAYS) -> None:
        self.spec = spec
        self.impl = impl
        self.replays = replays
        base = base_model(spec)
        self.cfg = base.cfg
        self.weights = base.weights
        self.impl_engine = self._engine(base)
        self.impl_engine.model = self.impl.prepare_model(self.impl_engine.model)
        self.ref_engine = self._engine(base)
        self.script = Script(spec)
        self.stats = PairStats()
        self.planned: list[FaultSpec] = []
        self.open_d1: dict[tuple[str, int], int] = {}  # D1 entry -> the step that opened it
        self.hit: set[int] = set()  # requests an injected decode fault hit
        self._solo: dict[Any, SoloResult] = {}
        self._slots_seen: set[int] = set()
        self.fast = spec.model.numerics != "exact"
        self._rtol = rounding(spec.model.dtype, not self.fast)
        self._impl_boot: Side | None = None
        self._impl_env = None
        self._impl_verify_trace: Trace = {}
        self._trace_impl: dict[int, dict[int, Taken]] = {}  # fast numerics: by request, by output position
        self._trace_ref: dict[int, dict[int, Taken]] = {}
        self._calls_impl: list[Call] = []
        self._calls_ref: list[Call] = []
        self._conf_ref: dict[int, list[float]] = {}
        self._batched = False
        self._slot_to_id: dict[int, int] = {}
        self._outside: list[Mismatch] = []  # what this step's bootstrap changed outside its world
        self._impl_before: World | None = None  # the world the implementation's bootstrap found

    def _engine(self, base: BatchedMtpModel) -> Engine:
        model = base.clone()
        model.randomize_caches(torch.Generator().manual_seed(self.spec.cache_seed))  # as `build_world` does
        sched, ctx = sched_for(self.spec.step)
        return Engine.create(model, sched, ctx, self.spec.step.ladder_nd)

    # Actions -------------------------------------------------------------------------------------

    def add(self, rs: RequestSpec) -> int:
        """Submit the request to both engines (its `stop_at` and `eos_at` resolved first, from its solo
        decode without them); returns its id."""
        if rs.stop_at is not None or rs.eos_at is not None:
            plain = self.solo_of(replace(rs, stop_at=None, eos_at=None).request(self.cfg.max_seq_len)).tokens
            stop = (plain[rs.stop_at],) if rs.stop_at is not None and rs.stop_at < len(plain) else ()
            eos = (plain[rs.eos_at],) if rs.eos_at is not None and rs.eos_at < len(plain) else ()
            rs = replace(
                rs,
                stop_at=None,
                eos_at=None,
                stop_ids=tuple(dict.fromkeys((*rs.stop_ids, *stop))),
                eos_ids=tuple(dict.fromkeys((*rs.eos_ids, *eos))),
            )
        self.script.actions.append(Action("add", request=rs))
        req = rs.request(self.cfg.max_seq_len)
        sid = submit(self.impl_engine, req)
        if submit(self.ref_engine, req) != sid:
            raise AssertionError("the two engines numbered a request differently")
        return sid

    def plan_fault(self, f: FaultSpec) -> None:
        """Inject `f` into the impl engine's next bootstrap (the next step that bootstraps)."""
        self.script.actions.append(Action("fault", fault=f))
        self.planned.append(f)

    def abort(self, seq_id: int) -> list[Mismatch]:
        """Abort in both engines; the aborted request must hold a prefix of its solo decode."""
        self.script.actions.append(Action("abort", seq_id=seq_id))
        done = abort(self.impl_engine, seq_id), abort(self.ref_engine, seq_id)
        out = [] if done[0] == done[1] else [Mismatch(seq_id, "abort", str(done[1]), str(done[0]))]
        if done[1]:
            out += self._check_finished([seq_id])
        return out + self._invariants()

    def live_ids(self) -> list[int]:
        e = self.impl_engine
        return [sid for sid, _ in e.waiting] + [a.seq_id for a in e.active]

    def step(self) -> list[Mismatch]:
        """One step of both engines, then every check; returns what differs."""
        self.script.actions.append(Action("step"))
        plan, self.planned = tuple(self.planned), []
        self._impl_boot = None
        self._batched = False
        self._outside = []
        self._impl_before = None
        fast = self.fast
        impl_rows = VerifyRows()
        impl_log = DecisionLog(keep_scores=True)
        ref_before = self.ref_engine  # the loop engine's step runs on copies (`_settle_reference`)
        before = (ref_before.model, self.impl_engine.model.clone()) if fast else None
        try:
            with LogCapture(), impl_log if fast else contextlib.nullcontext():  # logs: D3, held by P7
                rec_impl = engine_step(
                    self.impl_engine, functools.partial(self._bootstrap_impl, plan), impl_rows if fast else verify_seq
                )
        except Exception as e:
            return [Mismatch(None, "the implementation's engine raised", "", _error_text(e))]
        if not rec_impl.bootstrapped:
            self.planned = list(plan)  # a planned fault waits for the next step that bootstraps
        self._calls_impl = self._impl_boot.model.calls if self._impl_boot is not None else []
        impl_trace = trace_of(impl_rows.rows, impl_log.records) if fast else {}
        self._impl_verify_trace = impl_trace
        try:
            rnd = self._settle_reference()
        except Exception as e:
            return [Mismatch(None, "the reference engine raised", _error_text(e), "")]
        rec_ref = rnd.rec
        self.stats.steps += 1
        self.stats.batched_bootstraps += self._batched
        self._count_faults()
        new_d1 = self._d1_slots()
        d1 = frozenset(self.open_d1) | self._d1_entries(new_d1)
        view = StepView(rec_impl, rec_ref, d1, new_d1, self._d4(), before, self._engines_logprobs if fast else None)
        # Who held a block or SSM slot at any time in the step: the running requests before it and
        # the rows it bootstrapped (a request admitted and finished within the step holds its SSM
        # slot only then).
        during = list(rnd.sbs.before.active) if rnd.sbs is not None else []
        view.owners_before = Owners([*ref_before.active, *during], self.cfg.block_size)
        self._count_d1_reads(rec_ref)
        out = list(self._outside)
        out += [Mismatch(None, "decision the replay oracle cannot explain", "", why, ("B8",)) for why in rnd.refused]
        if rnd.sbs is not None:
            out += boot_row_mismatches(rnd.sbs)
            if self._batched and self._impl_before is not None:
                # The single-step checks of the implementation's own bootstrap: its calls, and its
                # logs against the once-keys its engine had marked before it.
                boot = replace(rnd.sbs, before=replace(rnd.sbs.before, sched=self._impl_before.sched))
                out += check_calls(boot) + check_logs(boot)
            if fast:
                out += replay_mismatches(rnd.sbs)
        if fast:
            out += trace_row_mismatches(self.spec, rnd.verify_trace, impl_trace, "verify")
            impl_trace.update(bootstrap_trace(rnd.sbs, impl=True) if rnd.sbs is not None else {})
            self._keep(self._trace_impl, impl_trace)
            self._keep(self._trace_ref, rnd.verify_trace)
            if rnd.sbs is not None:
                self._keep(self._trace_ref, bootstrap_trace(rnd.sbs, impl=False))
        out += compare_engines(self.impl_engine, self.ref_engine, view)
        self._update_d1(new_d1)
        self._count(rec_ref)
        out += self._check_finished(rec_ref.released)
        return out + self._invariants()

    def drain(self, max_steps: int = 400) -> list[Mismatch]:
        """Step until no request is waiting or running; the first step that differs ends it."""
        self.script.actions.append(Action("drain"))
        for _ in range(max_steps):
            if not self.live_ids():
                return []
            out = self.step()
            self.script.actions.pop()  # the steps of a drain are the drain
            if out:
                return out
        return [Mismatch(None, "drain", f"idle within {max_steps} steps", str(self.live_ids()))]

    # Bootstraps ----------------------------------------------------------------------------------

    def _world(self, model, active, sched, idxs, ladder_nd, verify_ctx) -> World:
        return World(self.spec, model, active, sched, verify_ctx, idxs, ladder_nd)  # type: ignore[arg-type]

    def _bootstrap_impl(self, plan: tuple[FaultSpec, ...], model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
        """The dispatch (batched/dispatch.py) with the implementation under test, faults injected;
        its calls, rows and drafter rows kept (`properties.harness.run_step`)."""
        before = self._before(model, active, sched, idxs, ladder_nd, verify_ctx)
        self._impl_env = envelope(before)
        self._slot_to_id = {a.seq.slot_idx: a.seq_id for a in active}
        faulty = FaultyModel(model, plan, masked=masked_tokens(before, list(plan)))
        world = self._world(model, active, sched, idxs, ladder_nd, verify_ctx)
        # Its own (discarded) decision log: the step's log keeps the verify's decisions only.
        if can_batch_bootstrap(faulty, sched, len(idxs), self.spec.step.dflash_verify_raw_argmax):
            self._batched = True
            self._impl_before = before
            for i in idxs:
                self.stats.reach.record(active[i], sched.watchdog.min_reasoning_floor)
            side, self._outside = run_guarded(world, faulty, self.impl, DecisionLog())
        else:
            side = run_step(world, faulty, step_mtp_bootstrap_per_seq, DecisionLog())
        self._impl_boot = self._frozen(side, before)
        if side.error is not None:
            raise side.error

    def _before(self, model, active, sched, idxs, ladder_nd, verify_ctx) -> World:
        """The world as a bootstrap finds it (sequences copied; the model is only asked its limits)."""
        return World(
            self.spec,  # type: ignore[arg-type]
            model,
            [copy_seq(a) for a in active],
            copy.deepcopy(sched),
            copy.deepcopy(verify_ctx),
            list(idxs),
            ladder_nd,
        )

    def _frozen(self, side: Side, before: World) -> Side:
        """`side` with its sequences and scheduler context copied as the bootstrap left them (the
        step goes on with them)."""
        w = side.world
        sched = copy.deepcopy(w.sched)
        side.world = World(w.spec, w.model, [copy_seq(a) for a in w.active], sched, w.verify_ctx, w.idxs, 0)
        return side

    def _bootstrap_ref(self, rnd: RefRound, model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
        """The per-sequence loop with the translated faults and the forced decisions, decisions and
        rows recorded (confidences for D4)."""
        before = self._before(model, active, sched, idxs, ladder_nd, verify_ctx)
        faults = list(rnd.translation.seq_faults)
        faulty = FaultyModel(model, (), faults, capture_conf=True, masked=masked_tokens(before, faults))
        log = DecisionLog(forced=dict(rnd.boot_forced), keep_scores=True)
        side = run_step(
            self._world(model, active, sched, idxs, ladder_nd, verify_ctx), faulty, step_mtp_bootstrap_per_seq, log
        )
        rnd.before, rnd.side = before, self._frozen(side, before)
        if side.error is not None:
            raise side.error

    def _settle_reference(self) -> RefRound:
        """Run the loop engine's step until it settles, as the single-step harness does: on a copy of
        the engine each time, with the impl engine's bootstrap faults translated through the plan the
        reference's outcome implies, and (fast numerics) the decisions the replay oracle explains
        forced onto it; the settled copy becomes the loop engine."""
        snapshot = self.ref_engine
        boot = self._impl_boot
        tr = translate(boot.model.calls, self._impl_env) if boot is not None else Translation()
        rnd = RefRound(tr)
        for _ in range(MAX_ROUNDS):
            eng = clone_engine(snapshot)
            rnd.reset()
            rows = VerifyRows()
            log = DecisionLog(forced=dict(rnd.verify_forced), keep_scores=True)
            with LogCapture(), log if self.fast else contextlib.nullcontext():
                rnd.rec = engine_step(
                    eng, functools.partial(self._bootstrap_ref, rnd), rows if self.fast else verify_seq
                )
            rnd.engine = eng
            rnd.verify_trace = trace_of(rows.rows, log.records) if self.fast else {}
            rnd.decisions = sum(1 for r in log.records if r.key.kind == "token")
            new_boot, new_verify, refused = [], [], []
            if boot is not None and rnd.side is not None and rnd.before is not None:
                rnd.sbs = SideBySide(
                    self.spec,  # type: ignore[arg-type]
                    rnd.before,
                    rnd.side,
                    boot,
                    rnd.translation,
                    self.impl,
                    replay_dir=self.replays,
                )
                rnd.decisions += decisions(rnd.sbs)
                rnd.sbs.plan = plan_of(rnd.sbs)
                settled = translate(boot.model.calls, self._impl_env, rnd.sbs.plan, boot.model.rows)
                if settled.seq_faults != rnd.translation.seq_faults:
                    rnd.translation = settled
                    continue
                rnd.translation = rnd.sbs.translation = settled
                if self.fast:
                    new_boot, refused = next_forced(rnd.sbs)
            if self.fast:
                new_verify, why = divergences(rnd.verify_trace, self._impl_verify_trace, self._explain_verify)
                refused += why
            rnd.refused = refused
            if not new_boot and not new_verify:
                break
            for f in new_boot:
                rnd.boot_forced[f.key] = f.impl_choice
            for f in new_verify:
                rnd.verify_forced[f.key] = f.impl_choice
            step = self.stats.steps + 1
            rnd.forced += [Forced("bootstrap", step, f) for f in new_boot]
            rnd.forced += [Forced("verify", step, f) for f in new_verify]
        self.ref_engine = rnd.engine
        self._calls_ref = rnd.side.model.calls if rnd.side is not None else []
        self._conf_ref = rnd.side.model.conf_by_slot if rnd.side is not None else {}
        self.stats.tally.add(rnd.forced, rnd.decisions)
        return rnd

    # Registered differences ----------------------------------------------------------------------

    def _d1_slots(self) -> frozenset[int]:
        """Slots whose checkpoint the impl engine took while the ref engine, after a failed save,
        did not call it (D1)."""
        impl_ok = {c.slots[0] for c in self._calls_impl if c.op == "start_checkpoint_async" and c.outcome == "ok"}
        ref_called = {c.slots[0] for c in self._calls_ref if c.op == "start_checkpoint_async"}
        saves = {c.slots[0] for c in self._calls_ref if c.op == "save_hidden_for_mtp" and c.outcome == "err"}
        return frozenset((impl_ok - ref_called) & saves)

    def _d1_entries(self, slots: frozenset[int]) -> frozenset[tuple[str, int]]:
        out = set()
        for a in self.ref_engine.active:
            if a.seq.slot_idx in slots:
                out.add(("ckpt_pos", a.seq.slot_idx))
                if a.seq.ssm_slot is not None:
                    out.add(("ssm.ckpt", a.seq.ssm_slot))
        return frozenset(out)

    def _update_d1(self, new: frozenset[int]) -> None:
        """Open this step's D1 entries; close every entry both engines now hold alike."""
        self.stats.d1_opened += len(new)
        for entry in self._d1_entries(new):
            self.open_d1[entry] = self.stats.steps
        for entry in list(self.open_d1):
            if self._entry_equal(entry):
                del self.open_d1[entry]
                self.stats.d1_closed_by_rewrite += 1

    def _entry_equal(self, entry: tuple[str, int]) -> bool:
        buf, i = entry
        a, b = self.impl_engine.model.ssm, self.ref_engine.model.ssm
        if buf == "ckpt_pos":
            return a.ckpt_pos[i] == b.ckpt_pos[i]
        return bool(torch.equal(a.ckpt[i], b.ckpt[i]))

    def _count_d1_reads(self, rec: StepRecord) -> None:
        """Verifies this step that restored a checkpoint D1 left different."""
        slots = {a.seq_id: a.seq.slot_idx for a in self.ref_engine.active}
        slots.update({sid: None for sid in rec.released})
        for v in rec.verified:
            if ("ckpt_pos", slots.get(v.seq_id, -1)) in self.open_d1:
                self.stats.d1_reads += 1

    def _d4(self) -> dict[int, list[float]]:
        """D4: by slot, the confidences the impl engine's sequences must hold: the reference
        drafter's, where a successful group asked for them and proposed."""
        out: dict[int, list[float]] = {}
        for c in self._calls_impl:
            if c.op == "run_mtp_propose_batched" and c.outcome == "ok" and c.detail.get("conf"):
                for g, slot in enumerate(c.slots):
                    if g not in c.empty_rows:
                        out[slot] = self._conf_ref.get(slot, [])
        return out

    # Oracle and invariants -----------------------------------------------------------------------

    def solo_of(self, req: Request, seq_id: int = 0) -> SoloResult:
        key = hash(req)
        if key not in self._solo:
            e = self.ref_engine
            with LogCapture():
                self._solo[key] = solo_decode(self.cfg, self.weights, req, e.sched, e.verify_ctx, seq_id)
        return self._solo[key]

    def forced_solo(self, sid: int, done: Finished) -> tuple[SoloResult, dict[int, torch.Tensor], list[str]]:
        """Fast numerics: the solo decode of request `sid` with every token the impl engine took
        otherwise forced onto it where the replay oracle explains it (one at a time, in order), its
        rows by output position, and why a differing token was not explained."""
        req, e = self.ref_engine.requests[sid], self.ref_engine
        trace = self._trace_impl.get(sid, {})
        forced: dict[DecisionKey, int] = {}
        for _ in range(len(done.tokens) + 1):
            log, rows = DecisionLog(forced=dict(forced), keep_scores=True), {}
            with LogCapture(), log:
                res = solo_decode(self.cfg, self.weights, req, e.sched, e.verify_ctx, sid, rows)
            mine = trace_of({(sid, p): r for p, r in rows.items()}, log.records)
            theirs = {(sid, p): t for p, t in trace.items() if p < len(done.tokens)}
            new, refused = divergences(mine, theirs, self._explain_for(req))
            if refused or not new:
                n = sum(1 for r in log.records if r.key.kind == "token")
                self.stats.solo_decisions += n
                self.stats.tally.add([], n)
                return res, rows, refused
            forced[new[0].key] = new[0].impl_choice
            self.stats.tally.add([Forced("solo", self.stats.steps, new[0])], 0)
        return res, rows, []

    def _explain_for(self, req: Request) -> Callable[[Decision, int, Taken, Taken], tuple[ForcedDecision | None, str]]:
        ctx = self.ref_engine.verify_ctx
        return lambda d, choice, ref, impl: explain_token(self.spec, req, ctx, d, choice, ref, impl)

    def _explain_verify(self, d: Decision, choice: int, ref: Taken, impl: Taken) -> tuple[ForcedDecision | None, str]:
        return self._explain_for(self.ref_engine.requests[d.key.owner])(d, choice, ref, impl)

    def _engines_logprobs(self, sid: int, ref: list[Any], impl: list[Any]) -> bool:
        """Whether the two engines' logprobs of request `sid` differ only where rounding explains."""
        r, m = self._trace_ref.get(sid, {}), self._trace_impl.get(sid, {})
        bad, _ = logprobs_differences(sid, ref, impl, {p: (r.get(p), m.get(p)) for p in range(len(ref))}, self._rtol)
        return not bad

    def _solo_logprobs(
        self, sid: int, solo: dict[int, torch.Tensor], eng: Engine
    ) -> Callable[[list[Any], list[Any]], bool] | None:
        """Fast numerics: whether an engine's logprobs of `sid` (first) differ from its solo decode's
        only where rounding explains; counts those that do."""
        if not self.fast:
            return None
        trace = (self._trace_ref if eng is self.ref_engine else self._trace_impl).get(sid, {})

        def check(got: list[Any], want: list[Any]) -> bool:
            rows = {p: (trace.get(p), Taken(solo[p], []) if p in solo else None) for p in range(len(got))}
            bad, n = logprobs_differences(sid, got, want, rows, self._rtol)
            self.stats.top_ids_explained += n
            return not bad

        return check

    def _keep(self, store: dict[int, dict[int, Taken]], trace: Trace) -> None:
        for (sid, pos), t in trace.items():
            store.setdefault(sid, {})[pos] = t

    def _check_finished(self, seq_ids: list[int]) -> list[Mismatch]:
        """Hold each request the engines just released to its solo decode, in both engines (the
        loop engine's result is the reference's own claim; a request only one engine released is
        already a difference of the two worlds). Fast numerics: the solo decode forced onto the
        impl engine's explained near-ties, and each engine's rows held to the solo decode's."""
        out = []
        for sid in seq_ids:
            mine = self.impl_engine.finished.get(sid)
            if self.fast and mine is not None:
                want, rows, refused = self.forced_solo(sid, mine)
                what = "token against its solo decode the replay oracle cannot explain"
                out += [Mismatch(sid, what, "", why, ("B8",)) for why in refused]
                for name, trace in (("implementation engine", self._trace_impl), ("loop engine", self._trace_ref)):
                    out += solo_rows(self.spec, sid, rows, trace.get(sid, {}), name)
            else:
                want, rows = self.solo_of(self.ref_engine.requests[sid], sid), {}
            for name, eng in (("loop engine", self.ref_engine), ("implementation engine", self.impl_engine)):
                done = eng.finished.get(sid)
                if done is not None:
                    out += [
                        replace(m, field=f"{name}: {m.field}") if eng is self.ref_engine else m
                        for m in check_solo(done, want, sid in self.hit, self.fast, self._solo_logprobs(sid, rows, eng))
                    ]
            done = self.ref_engine.finished[sid]
            self.stats.generations += 1
            self.stats.tokens += len(done.tokens)
            self.stats.engine_steps_per_generation.append(done.steps)
            self.stats.reasons["aborted" if done.aborted else str(done.finish_reason or "error")] += 1
        return out

    def _invariants(self) -> list[Mismatch]:
        return check_resources(self.impl_engine, "implementation engine") + check_resources(
            self.ref_engine, "reference engine"
        )

    def _count_faults(self) -> None:
        """Count the injected faults that fired; note the requests a decode fault hit (they finish
        by an error, so their solo decode no longer applies)."""
        for c in self._calls_impl:
            if not c.injected:
                continue
            self.stats.faults_fired += 1
            if c.op in ("decode", "decode_batch") and (c.outcome == "err" or c.outcome in BAD_ROWS):
                hit = c.slots if c.outcome == "err" else (c.slots[c.detail.get("row", 0)],)
                self.hit.update(self._slot_to_id[s] for s in hit)

    def _count(self, rec: StepRecord) -> None:
        s = self.stats
        for v in rec.verified:
            s.verifies += 1
            s.drafts_proposed += v.proposed
            s.drafts_accepted += v.accepted
            s.bonus_tokens += v.emitted == v.proposed + 1
        for a in self.ref_engine.active:
            if a.seq_id in rec.admitted and a.seq.slot_idx in self._slots_seen:
                s.slots_reused += 1
            self._slots_seen.add(a.seq.slot_idx)
            if a.seq.seq_len >= self.cfg.block_size and a.seq.seq_len % self.cfg.block_size == 0:
                s.crossed_blocks += 1


def _error_text(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(e).__name__}: {e}{where}"
