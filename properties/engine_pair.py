"""Two engines side by side on identical copies of one world, for whole generations (P9).

Engine "impl" bootstraps through the dispatch with the implementation under test: the batched step
when the gate holds (G8), the per-sequence loop otherwise. Engine "ref" always bootstraps through
the per-sequence loop. Everything else (admission, verify, release) is the reference's and the
same in both. A planned fault is injected into the impl engine's next bootstrap; its call outcomes
are translated into per-sequence faults for the ref engine's bootstrap in the same step, exactly as
the single-step harness does, so the two worlds must stay equal, step after step.

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

import functools
import math
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from batched.batched_model import BatchedMtpModel
from batched.gate import can_batch_bootstrap
from properties.faults import BAD_ROWS, Call, FaultyModel
from properties.generation_checks import StepView, check_resources, check_solo, compare_engines
from properties.generation_spec import Action, GenerationSpec, RequestSpec, Script
from properties.impl import load
from properties.mismatch import Mismatch
from properties.specs import FaultSpec
from properties.translate import Envelope, Translation, translate
from properties.world import model_config, sched_for
from reference.engine import Engine, StepRecord, abort, engine_step, submit
from reference.model.config import ModelConfig
from reference.request import Request
from reference.solo import SoloResult, solo_decode
from reference.state import ActiveSeq
from reference.step import step_mtp_bootstrap_per_seq
from reference.telemetry import LogCapture

StepFn = Callable[..., Any]


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
    return BatchedMtpModel(generation_config(replace(spec, cache_seed=0)))


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


def envelope_before(active: list[ActiveSeq], model: BatchedMtpModel) -> Envelope:
    """What the translation needs to know of the world before a bootstrap: every running
    sequence's state and last token (by slot) and the model's limits."""
    cfg = model.cfg
    return Envelope(
        before={a.seq.slot_idx: replace(a.seq, block_table=list(a.seq.block_table)) for a in active},
        last_tokens={a.seq.slot_idx: a.last_token for a in active},
        vocab_size=cfg.vocab_size,
        max_seq_len=cfg.max_seq_len,
        stash_capacity=cfg.stash_capacity,
        meta_stride=model.propose_meta_stride(),
    )


def translate_bootstrap(calls: list[Call], env: Envelope) -> Translation:
    """The ref engine's per-sequence faults for the impl engine's bootstrap calls: the one place the
    translation is asked (without a call plan: a fault on the fast-greedy argmax, which only a plan
    can place, is not planned in P9)."""
    return translate(calls, env)


class EnginePair:
    """The two engines of `spec`, the script of what was done to them, and the checks' state."""

    def __init__(self, spec: GenerationSpec, impl: StepFn | None = None) -> None:
        self.spec = spec
        self.impl = impl or load()
        base = base_model(spec)
        self.cfg = base.cfg
        self.weights = base.weights
        self.impl_engine = self._engine(base)
        self.ref_engine = self._engine(base)
        self.script = Script(spec)
        self.stats = PairStats()
        self.planned: list[FaultSpec] = []
        self.open_d1: dict[tuple[str, int], int] = {}  # D1 entry -> the step that opened it
        self.hit: set[int] = set()  # requests an injected decode fault hit
        self._solo: dict[int, SoloResult] = {}
        self._slots_seen: set[int] = set()
        self._translation = Translation()
        self._calls_impl: list[Call] = []
        self._calls_ref: list[Call] = []
        self._conf_ref: dict[int, list[float]] = {}
        self._batched = False
        self._slot_to_id: dict[int, int] = {}

    def _engine(self, base: BatchedMtpModel) -> Engine:
        model = base.clone()
        model.randomize_caches(torch.Generator().manual_seed(self.spec.cache_seed))  # as `build_world` does
        sched, ctx = sched_for(self.spec.step)
        return Engine.create(model, sched, ctx, self.spec.step.ladder_nd)

    # Actions -------------------------------------------------------------------------------------

    def add(self, rs: RequestSpec) -> int:
        """Submit the request to both engines (its `stop_at` resolved first); returns its id."""
        if rs.stop_at is not None:
            plain = self.solo_of(replace(rs, stop_at=None).request(self.cfg.max_seq_len))
            stop = (plain.tokens[rs.stop_at],) if rs.stop_at < len(plain.tokens) else ()
            rs = replace(rs, stop_at=None, stop_ids=tuple(dict.fromkeys((*rs.stop_ids, *stop))))
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
        self._translation, self._calls_impl, self._calls_ref, self._conf_ref = Translation(), [], [], {}
        self._batched = False
        try:
            with LogCapture():  # logs are not compared here (D3; P7 holds them)
                rec_impl = engine_step(self.impl_engine, functools.partial(self._bootstrap_impl, plan))
        except Exception as e:
            return [Mismatch(None, "the implementation's engine raised", "", _error_text(e))]
        if not rec_impl.bootstrapped:
            self.planned = list(plan)  # a planned fault waits for the next step that bootstraps
        try:
            with LogCapture():
                rec_ref = engine_step(self.ref_engine, self._bootstrap_ref)
        except Exception as e:
            return [Mismatch(None, "the reference engine raised", _error_text(e), "")]
        self.stats.steps += 1
        self.stats.batched_bootstraps += self._batched
        self._count_faults()
        new_d1 = self._d1_slots()
        view = StepView(rec_impl, rec_ref, frozenset(self.open_d1) | self._d1_entries(new_d1), new_d1, self._d4())
        self._count_d1_reads(rec_ref)
        out = compare_engines(self.impl_engine, self.ref_engine, view)
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

    def _bootstrap_impl(self, plan: tuple[FaultSpec, ...], model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
        """The dispatch (batched/dispatch.py) with the implementation under test, faults injected."""
        env = envelope_before(active, model)
        self._slot_to_id = {a.seq.slot_idx: a.seq_id for a in active}
        faulty = FaultyModel(model, plan)
        if can_batch_bootstrap(faulty, sched, len(idxs), self.spec.step.dflash_verify_raw_argmax):
            self._batched = True
            self.impl(faulty, active, sched, idxs, ladder_nd, verify_ctx)
        else:
            step_mtp_bootstrap_per_seq(faulty, active, sched, idxs, ladder_nd, verify_ctx)
        self._calls_impl = faulty.calls
        self._translation = translate_bootstrap(faulty.calls, env)

    def _bootstrap_ref(self, model, active, sched, idxs, ladder_nd, verify_ctx) -> None:
        """The per-sequence loop with the translated faults, confidences captured (D4)."""
        faulty = FaultyModel(model, (), list(self._translation.seq_faults), capture_conf=True)
        step_mtp_bootstrap_per_seq(faulty, active, sched, idxs, ladder_nd, verify_ctx)
        self._calls_ref, self._conf_ref = faulty.calls, faulty.conf_by_slot

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

    def _check_finished(self, seq_ids: list[int]) -> list[Mismatch]:
        """Hold each request the engines just released to its solo decode, in both engines (the
        loop engine's result is the reference's own claim; a request only one engine released is
        already a difference of the two worlds)."""
        out = []
        for sid in seq_ids:
            want = self.solo_of(self.ref_engine.requests[sid], sid)
            for name, eng in (("loop engine", self.ref_engine), ("implementation engine", self.impl_engine)):
                done = eng.finished.get(sid)
                if done is not None:
                    out += [
                        replace(m, field=f"{name}: {m.field}") if eng is self.ref_engine else m
                        for m in check_solo(done, want, sid in self.hit)
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
