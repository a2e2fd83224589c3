"""Every request the engines release, held to its plain decoding alone (`reference.solo`): no
speculation, no batching, no other request. In fast numerics the solo decode is forced, one token at
a time, onto the implementation engine's choices the replay oracle explains by rounding, and each
engine's rows are held to the solo decode's (`properties.generations.oracle`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from properties.generations.counts import PairStats
from properties.generations.oracle import (
    Forced,
    Taken,
    Trace,
    divergences,
    explain_token,
    logprobs_differences,
    trace_of,
)
from properties.generations.solo_checks import check_solo, solo_rows
from properties.generations.spec import GenerationSpec
from properties.sides.mismatch import Mismatch
from properties.sides.side_by_side import ForcedDecision
from reference.decisions import Decision, DecisionKey, DecisionLog
from reference.engine import Engine, Finished
from reference.model.config import ModelConfig
from reference.model.weights import Weights
from reference.request import Request
from reference.solo import SoloResult, solo_decode
from reference.telemetry import LogCapture

Explain = Callable[[Decision, int, Taken, Taken], tuple[ForcedDecision | None, str]]


@dataclass(slots=True)
class SoloChecks:
    """The solo decodes of one engine pair's requests (cached by request) and, in fast numerics,
    each engine's decisions by request and output position (the traces they are held to)."""

    spec: GenerationSpec
    cfg: ModelConfig
    weights: Weights
    fast: bool
    rtol: float
    stats: PairStats
    trace_impl: dict[int, dict[int, Taken]] = field(default_factory=dict)
    trace_ref: dict[int, dict[int, Taken]] = field(default_factory=dict)
    cache: dict[Any, SoloResult] = field(default_factory=dict)
    own: dict[int, dict[DecisionKey, int]] = field(default_factory=dict)  # own draws, by request

    def add_own_draws(self, draws: list[ForcedDecision]) -> None:
        """Remember the implementation's own draws (forced onto the loop engine): a request's solo
        decode is forced onto them too."""
        for f in draws:
            self.own.setdefault(f.key.owner, {})[f.key] = f.impl_choice

    def solo_of(self, req: Request, ref: Engine, seq_id: int = 0) -> SoloResult:
        """The plain decoding of `req` alone (as the loop engine `ref` would sample it)."""
        key = hash(req)
        if key not in self.cache:
            with LogCapture():
                self.cache[key] = solo_decode(self.cfg, self.weights, req, ref.sched, ref.verify_ctx, seq_id)
        return self.cache[key]

    def explain_for(self, req: Request, ref: Engine) -> Explain:
        ctx = ref.verify_ctx
        return lambda d, choice, r, m: explain_token(self.spec, req, ctx, d, choice, r, m)

    def keep(self, impl: Trace, ref: Trace) -> None:
        """Add this step's decisions of both engines to their traces."""
        for store, trace in ((self.trace_impl, impl), (self.trace_ref, ref)):
            for (sid, pos), t in trace.items():
                store.setdefault(sid, {})[pos] = t

    def forced_solo(
        self, sid: int, done: Finished, ref: Engine
    ) -> tuple[SoloResult, dict[int, torch.Tensor], list[str]]:
        """Fast numerics: the solo decode of request `sid` with every token the implementation
        engine took otherwise forced onto it where the replay oracle explains it (one at a time, in
        order), its rows by output position, and why a differing token was not explained."""
        req = ref.requests[sid]
        trace = self.trace_impl.get(sid, {})
        forced: dict[DecisionKey, int] = dict(self.own.get(sid, {}))
        for _ in range(len(done.tokens) + 1):
            log, rows = DecisionLog(forced=dict(forced), keep_scores=True), {}
            with LogCapture(), log:
                res = solo_decode(self.cfg, self.weights, req, ref.sched, ref.verify_ctx, sid, rows)
            mine = trace_of({(sid, p): r for p, r in rows.items()}, log.records)
            theirs = {(sid, p): t for p, t in trace.items() if p < len(done.tokens)}
            new, refused = divergences(mine, theirs, self.explain_for(req, ref))
            if refused or not new:
                n = sum(1 for r in log.records if r.key.kind == "token")
                self.stats.solo_decisions += n
                self.stats.tally.add([], n)
                return res, rows, refused
            forced[new[0].key] = new[0].impl_choice
            self.stats.tally.add([Forced("solo", self.stats.steps, new[0])], 0)
        return res, rows, []

    def own_solo(self, sid: int, ref: Engine) -> SoloResult:
        """The solo decode of request `sid` forced onto the implementation's own draws."""
        with LogCapture(), DecisionLog(forced=dict(self.own[sid])):
            return solo_decode(self.cfg, self.weights, ref.requests[sid], ref.sched, ref.verify_ctx, sid)

    def engines_logprobs(self, sid: int, ref: list[Any], impl: list[Any]) -> bool:
        """Whether the two engines' logprobs of request `sid` differ only where rounding explains."""
        r, m = self.trace_ref.get(sid, {}), self.trace_impl.get(sid, {})
        bad, _ = logprobs_differences(sid, ref, impl, {p: (r.get(p), m.get(p)) for p in range(len(ref))}, self.rtol)
        return not bad

    def solo_logprobs(
        self, sid: int, solo: dict[int, torch.Tensor], of_ref: bool
    ) -> Callable[[list[Any], list[Any]], bool] | None:
        """Fast numerics: whether an engine's logprobs of `sid` (first) differ from its solo
        decode's only where rounding explains; counts those that do."""
        if not self.fast:
            return None
        trace = (self.trace_ref if of_ref else self.trace_impl).get(sid, {})

        def check(got: list[Any], want: list[Any]) -> bool:
            rows = {p: (trace.get(p), Taken(solo[p], []) if p in solo else None) for p in range(len(got))}
            bad, n = logprobs_differences(sid, got, want, rows, self.rtol)
            self.stats.top_ids_explained += n
            return not bad

        return check

    def check_finished(self, seq_ids: list[int], impl: Engine, ref: Engine, hit: set[int]) -> list[Mismatch]:
        """Hold each request the engines just released to its solo decode, in both engines (the loop
        engine's result is the reference's own claim; a request only one engine released is already
        a difference of the two worlds; a request an injected decode fault `hit` need only hold a
        prefix of it)."""
        out = []
        for sid in seq_ids:
            mine = impl.finished.get(sid)
            if self.fast and mine is not None:
                want, rows, refused = self.forced_solo(sid, mine, ref)
                what = "token against its solo decode the replay oracle cannot explain"
                out += [Mismatch(sid, what, "", why, ("B8",)) for why in refused]
                for name, trace in (("implementation engine", self.trace_impl), ("loop engine", self.trace_ref)):
                    out += solo_rows(self.spec, sid, rows, trace.get(sid, {}), name)
            elif sid in self.own:
                want, rows = self.own_solo(sid, ref), {}
            else:
                want, rows = self.solo_of(ref.requests[sid], ref, sid), {}
            for name, eng in (("loop engine", ref), ("implementation engine", impl)):
                done = eng.finished.get(sid)
                if done is not None:
                    found = check_solo(done, want, sid in hit, self.fast, self.solo_logprobs(sid, rows, eng is ref))
                    out += [replace(m, field=f"{name}: {m.field}") if eng is ref else m for m in found]
            self.count_release(ref.finished[sid])
        return out

    def count_release(self, done: Finished) -> None:
        s = self.stats
        s.generations += 1
        s.tokens += len(done.tokens)
        s.engine_steps_per_generation.append(done.steps)
        s.reasons["aborted" if done.aborted else str(done.finish_reason or "error")] += 1
