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

Each step's two bootstraps are explicit results (`properties.generations.bootstraps`); the
registered differences D1 and D4 are kept by `properties.generations.registered`, D2 is applied by
the translation, D3 by comparing each implementation bootstrap's logs as a multiset; every released
request is held to its solo decode (`properties.generations.solo`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import traceback
from dataclasses import replace
from pathlib import Path

import torch

from batched.batched_model import BatchedMtpModel
from properties.checks.calls import check_calls
from properties.checks.logs import check_logs
from properties.checks.world_state import Owners
from properties.config import DEFAULT_REPLAYS
from properties.generations.bootstraps import ImplBoot, RefRound, Settling, bootstrap_impl, settle_reference
from properties.generations.checks import StepView, compare_engines
from properties.generations.counts import PairStats
from properties.generations.oracle import Taken, VerifyRows, bootstrap_trace, trace_of
from properties.generations.oracle import row_mismatches as trace_row_mismatches
from properties.generations.registered import OpenD1, d1_entries, d1_slots, d4_confidences
from properties.generations.resources import check_resources
from properties.generations.solo import SoloChecks
from properties.generations.spec import Action, GenerationSpec, RequestSpec, Script
from properties.impl import Impl
from properties.sides.mismatch import Mismatch
from properties.sides.replay_oracle import replay_mismatches
from properties.sides.replay_oracle import row_mismatches as boot_row_mismatches
from properties.sides.side_by_side import ForcedDecision
from properties.tolerance import Tolerance
from properties.worlds.fault_kinds import BAD_ROWS
from properties.worlds.specs import FaultSpec
from properties.worlds.world import model_config, sched_for, shared_weights
from reference.decisions import Decision, DecisionLog
from reference.engine import Engine, StepRecord, abort, engine_step, submit
from reference.model.config import ModelConfig
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


class EnginePair:
    """The two engines of `spec`, the script of what was done to them, and the checks' state."""

    def __init__(self, spec: GenerationSpec, impl: Impl, replays: Path = DEFAULT_REPLAYS) -> None:
        self.spec = spec
        self.impl = impl
        self.replays = replays
        base = base_model(spec)
        self.cfg = base.cfg
        self.impl_engine = self._engine(base)
        self.impl_engine.model = self.impl.prepare_model(self.impl_engine.model)
        self.ref_engine = self._engine(base)
        self.script = Script(spec)
        self.stats = PairStats()
        self.planned: list[FaultSpec] = []
        self.d1 = OpenD1()
        self.hit: set[int] = set()  # requests an injected decode fault hit
        self.fast = Tolerance.of(spec.model).fast
        self.solo = SoloChecks(spec, base.cfg, base.weights, self.fast, Tolerance.of(spec.model).rtol, self.stats)
        self._slots_seen: set[int] = set()

    @property
    def open_d1(self) -> dict[tuple[str, int], int]:
        """The D1 entries open now, each with the step that opened it."""
        return self.d1.entries

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
            req = replace(rs, stop_at=None, eos_at=None).request(self.cfg.max_seq_len)
            plain = self.solo.solo_of(req, self.ref_engine).tokens
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
            out += self.solo.check_finished([seq_id], self.impl_engine, self.ref_engine, self.hit)
        return out + self._invariants()

    def live_ids(self) -> list[int]:
        e = self.impl_engine
        return [sid for sid, _ in e.waiting] + [a.seq_id for a in e.active]

    def step(self) -> list[Mismatch]:
        """One step of both engines, then every check; returns what differs."""
        self.script.actions.append(Action("step"))
        plan, self.planned = tuple(self.planned), []
        fast = self.fast
        boot = ImplBoot()
        impl_rows = VerifyRows()
        impl_log = DecisionLog(keep_scores=True)
        ref_before = self.ref_engine  # the loop engine's step runs on copies (`settle_reference`)
        before = (ref_before.model, self.impl_engine.model.clone()) if fast else None
        bootstrap = functools.partial(bootstrap_impl, self.spec, self.impl, plan, self.stats.reach, boot)
        try:
            with LogCapture(), impl_log if fast else contextlib.nullcontext():  # logs: held per bootstrap below
                rec_impl = engine_step(self.impl_engine, bootstrap, impl_rows if fast else verify_seq)
        except Exception as e:
            return [Mismatch(None, "the implementation's engine raised", "", _error_text(e))]
        if not rec_impl.bootstrapped:
            self.planned = list(plan)  # a planned fault waits for the next step that bootstraps
        impl_trace = trace_of(impl_rows.rows, impl_log.records) if fast else {}
        settling = Settling(
            self.spec, self.impl, self.replays, fast, self.stats.steps + 1, impl_trace, self._explain_verify
        )
        try:
            rnd = settle_reference(self.ref_engine, boot, settling)
        except Exception as e:
            return [Mismatch(None, "the reference engine raised", _error_text(e), "")]
        self.ref_engine = rnd.engine  # type: ignore[assignment]
        self.stats.tally.add(rnd.forced, rnd.decisions)
        self.solo.add_own_draws(rnd.own_draws)
        self.stats.steps += 1
        self.stats.batched_bootstraps += boot.batched
        self._count_faults(boot)
        new_d1 = d1_slots(boot.calls, rnd.calls)
        d1 = frozenset(self.d1.entries) | d1_entries(self.ref_engine, new_d1)
        conf = d4_confidences(boot.calls, rnd.confidences)
        view = StepView(rec_impl, rnd.rec, d1, new_d1, conf, before, self.solo.engines_logprobs if fast else None)
        # Who held a block or SSM slot at any time in the step: the running requests before it and
        # the rows it bootstrapped (a request admitted and finished within the step holds its SSM
        # slot only then).
        during = list(rnd.sbs.before.active) if rnd.sbs is not None else []
        view.owners_before = Owners([*ref_before.active, *during], self.cfg.block_size)
        self.stats.d1_reads += self.d1.reads(self.ref_engine, rnd.rec)
        out = list(boot.outside) + self._bootstrap_checks(boot, rnd)
        if fast:
            out += trace_row_mismatches(self.spec, rnd.verify_trace, impl_trace, "verify")
            impl_trace.update(bootstrap_trace(rnd.sbs, impl=True) if rnd.sbs is not None else {})
            ref_trace = dict(rnd.verify_trace)
            ref_trace.update(bootstrap_trace(rnd.sbs, impl=False) if rnd.sbs is not None else {})
            self.solo.keep(impl_trace, ref_trace)
        out += compare_engines(self.impl_engine, self.ref_engine, view)
        self.stats.d1_opened += len(new_d1)
        self.stats.d1_closed_by_rewrite += self.d1.update(new_d1, self.impl_engine, self.ref_engine, self.stats.steps)
        self._count(rnd.rec)
        out += self.solo.check_finished(rnd.rec.released, self.impl_engine, self.ref_engine, self.hit)
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

    # Checks --------------------------------------------------------------------------------------

    def _bootstrap_checks(self, boot: ImplBoot, rnd: RefRound) -> list[Mismatch]:
        """The step's bootstraps held as a single step is: the decisions the replay oracle could not
        explain, the implementation's rows against the loop's, and, where the batched step ran, its
        calls and its logs against the once-keys its engine had marked before it."""
        out = [Mismatch(None, "decision the replay oracle cannot explain", "", why, ("B8",)) for why in rnd.refused]
        if rnd.sbs is None:
            return out
        out += boot_row_mismatches(rnd.sbs)
        if boot.batched and boot.before is not None:
            sbs = replace(rnd.sbs, before=replace(rnd.sbs.before, sched=boot.before.sched))
            out += check_calls(sbs) + check_logs(sbs)
        if self.fast:
            out += replay_mismatches(rnd.sbs)
        return out

    def _explain_verify(self, d: Decision, choice: int, ref: Taken, impl: Taken) -> tuple[ForcedDecision | None, str]:
        req = self.ref_engine.requests[d.key.owner]
        return self.solo.explain_for(req, self.ref_engine)(d, choice, ref, impl)

    def _invariants(self) -> list[Mismatch]:
        return check_resources(self.impl_engine, "implementation engine") + check_resources(
            self.ref_engine, "reference engine"
        )

    def _count_faults(self, boot: ImplBoot) -> None:
        """Count the injected faults that fired; note the requests a decode fault hit (they finish
        by an error, so their solo decode no longer applies)."""
        for c in boot.calls:
            if not c.injected:
                continue
            self.stats.faults_fired += 1
            if c.op in ("decode", "decode_batch") and (c.outcome == "err" or c.outcome in BAD_ROWS):
                hit = c.slots if c.outcome == "err" else (c.slots[c.detail.get("row", 0)],)
                self.hit.update(boot.slot_to_id[s] for s in hit)

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
