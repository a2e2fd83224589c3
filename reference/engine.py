"""The engine loop: admit, bootstrap the draftless sequences, verify the rest, release the finished.

One step (`engine_step`), in order:
1. admit waiting requests, first come first served, while the next one fits (`reference.admission`);
2. grow every unfinished sequence's block tables over the positions this step may write;
3. bootstrap every unfinished sequence without pending drafts, through the `bootstrap` function the
   caller gives (the per-sequence loop, or the dispatch that runs the batched step when its gate
   holds): it decodes and emits one token and proposes drafts;
4. verify every sequence that had pending drafts when the step began (`reference.verify`);
5. release every finished sequence (finished by its own reason, by an error, or aborted).
The loop is deterministic: no RNG anywhere; slots, SSM slots and blocks go out in a fixed order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reference.admission import Resources, admit, blocks_for, can_admit, grow_tables, release
from reference.model.model import TinyMtpModel
from reference.request import Request
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq, FinishReason, TokenLogprobs
from reference.verify import VerifyOutcome, verify_seq

# The bootstrap step's signature: (model, active, sched, idxs, ladder_nd, verify_ctx).
BootstrapFn = Callable[[TinyMtpModel, list[ActiveSeq], SchedCtx, list[int], int, LogitsContext], object]
# The verify step's signature (`reference.verify.verify_seq`): (model, seq, prompt, sched, verify_ctx).
VerifyFn = Callable[[TinyMtpModel, ActiveSeq, tuple[int, ...], SchedCtx, LogitsContext], VerifyOutcome]


@dataclass(slots=True, frozen=True)
class Finished:
    """A request's result: its tokens, logprobs and finish reason; `aborted` when the client
    aborted it; a request finished by an error (a failed decode or sampling) has neither a reason
    nor `aborted`."""

    seq_id: int
    tokens: tuple[int, ...]
    logprobs: tuple[TokenLogprobs | None, ...]
    finish_reason: FinishReason | None
    aborted: bool = False
    steps: int = 0  # engine steps from admission to release

    @property
    def errored(self) -> bool:
        return self.finish_reason is None and not self.aborted


@dataclass(slots=True)
class StepRecord:
    """What one step did, by sequence id."""

    admitted: list[int] = field(default_factory=list)
    bootstrapped: list[int] = field(default_factory=list)
    verified: list[VerifyOutcome] = field(default_factory=list)
    released: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Engine:
    """A model, its resources, the scheduler context and the requests: waiting, running (`active`,
    in admission order) and finished."""

    model: TinyMtpModel
    sched: SchedCtx
    verify_ctx: LogitsContext
    ladder_nd: int
    resources: Resources
    waiting: list[tuple[int, Request]] = field(default_factory=list)
    active: list[ActiveSeq] = field(default_factory=list)
    requests: dict[int, Request] = field(default_factory=dict)
    admitted_at: dict[int, int] = field(default_factory=dict)
    finished: dict[int, Finished] = field(default_factory=dict)
    steps: int = 0
    next_id: int = 0

    @classmethod
    def create(cls, model: TinyMtpModel, sched: SchedCtx, verify_ctx: LogitsContext, ladder_nd: int) -> Engine:
        return cls(model, sched, verify_ctx, ladder_nd, Resources.for_model(model))


def submit(eng: Engine, req: Request) -> int:
    """Queue `req`; returns its sequence id. ValueError for a request the model can never hold (too
    long, more blocks than a cache has, an SSM slot where there are none)."""
    cfg = eng.model.cfg
    req.check(cfg.vocab_size, cfg.max_seq_len)
    need = blocks_for(req.positions(), cfg.block_size)
    if need > min(cfg.num_blocks, cfg.num_draft_blocks) or (req.ssm and cfg.num_ssm_slots == 0):
        ssm = " and an SSM slot" if req.ssm else ""
        raise ValueError(f"request needs {need} blocks per cache{ssm}: more than the model has")
    seq_id = eng.next_id
    eng.next_id += 1
    eng.requests[seq_id] = req
    eng.waiting.append((seq_id, req))
    return seq_id


def abort(eng: Engine, seq_id: int) -> bool:
    """Abort a waiting or running request at once (a running one is released); False when it has
    already finished or is unknown."""
    for i, (sid, _) in enumerate(eng.waiting):
        if sid == seq_id:
            del eng.waiting[i]
            eng.finished[seq_id] = Finished(seq_id, (), (), None, aborted=True)
            return True
    for i, a in enumerate(eng.active):
        if a.seq_id == seq_id:
            a.finished = True
            release(eng.resources, a)
            del eng.active[i]
            eng.finished[seq_id] = finished_record(eng, a, aborted=True)
            return True
    return False


def live(eng: Engine) -> list[tuple[ActiveSeq, Request]]:
    return [(a, eng.requests[a.seq_id]) for a in eng.active]


def admit_waiting(eng: Engine) -> list[int]:
    """Admit waiting requests in order while the next one fits; returns their ids."""
    out = []
    while eng.waiting and can_admit(eng.resources, eng.waiting[0][1], live(eng)):
        seq_id, req = eng.waiting.pop(0)
        eng.active.append(admit(eng.model, eng.resources, req, seq_id))
        eng.admitted_at[seq_id] = eng.steps
        out.append(seq_id)
    return out


def engine_step(eng: Engine, bootstrap: BootstrapFn, verify: VerifyFn = verify_seq) -> StepRecord:
    """One step of the loop (see the module docstring); `verify` is the verify step (an oracle may
    wrap it to keep the rows each verify decided on)."""
    rec = StepRecord(admitted=admit_waiting(eng))
    for a, req in live(eng):
        grow_tables(eng.model, eng.resources, a, req, eng.ladder_nd)
    idxs = [i for i, a in enumerate(eng.active) if not a.finished and not a.pending_drafts]
    to_verify = [a for a in eng.active if not a.finished and a.pending_drafts]
    if idxs:
        rec.bootstrapped = [eng.active[i].seq_id for i in idxs]
        bootstrap(eng.model, eng.active, eng.sched, idxs, eng.ladder_nd, eng.verify_ctx)
    for a in to_verify:
        if not a.finished and a.pending_drafts:
            prompt = eng.requests[a.seq_id].prompt
            rec.verified.append(verify(eng.model, a, prompt, eng.sched, eng.verify_ctx))
    eng.steps += 1
    rec.released = release_finished(eng)
    return rec


def release_finished(eng: Engine) -> list[int]:
    """Release every finished sequence and record its result; returns their ids."""
    done = [a for a in eng.active if a.finished]
    for a in done:
        release(eng.resources, a)
        eng.finished[a.seq_id] = finished_record(eng, a)
    eng.active = [a for a in eng.active if not a.finished]
    return [a.seq_id for a in done]


def finished_record(eng: Engine, a: ActiveSeq, aborted: bool = False) -> Finished:
    steps = eng.steps - eng.admitted_at.get(a.seq_id, eng.steps)
    return Finished(a.seq_id, tuple(a.output_tokens), tuple(a.output_logprobs), a.finish_reason, aborted, steps)


def drain(eng: Engine, bootstrap: BootstrapFn, max_steps: int) -> int:
    """Step until no request is waiting or running, at most `max_steps` steps; returns the steps
    taken. RuntimeError when requests remain (a waiting request that can never fit cannot exist:
    `submit` refuses it, and an idle engine has every resource free)."""
    for n in range(max_steps):
        if not eng.waiting and not eng.active:
            return n
        engine_step(eng, bootstrap)
    if eng.waiting or eng.active:
        raise RuntimeError(f"requests still running after {max_steps} steps")
    return max_steps
