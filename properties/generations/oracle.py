"""The replay oracle over whole generations (P9 in fast numerics).

In fast numerics the engine bootstrapping through the implementation computes its rows with other
kernels than the loop engine, and its caches then hold values that differ by rounding; every later
decode of the request (its bootstraps and verifies) reads them. The solo decode computes one row at a
time where the engines prefill a prompt or verify k + 1 tokens in one pass. So a discrete decision
may legitimately differ near a tie, in a bootstrap, in a verify or against the solo decode. The rule
is the single-step one (`properties.sides.replay_oracle`), applied to every token decision of a generation:

- bootstrap: the implementation's decisions are replayed on its own rows (`replay_mismatches`), its
  rows held to the loop engine's (`row_mismatches`), and a decision it took otherwise is forced onto
  the loop engine's bootstrap only when `next_forced` explains it by rounding;
- verify: both engines verify with the reference's code, each on its own target rows, so the
  implementation engine's token is by construction the reference semantics on its row (its recorded
  decision is its replay). Its rows are held to the loop engine's within the rounding tolerance, and a
  token it took otherwise is forced onto the loop engine's verify when `explain` accepts the margin;
- solo: each finished request's rows are held to its solo decode's, and a token the engine took
  otherwise is forced onto the solo decode when `explain` accepts it.

This module keeps the rows each token decision was made on (`Taken`, by sequence and output
position) and asks `explain` about one decision at a time, with the view of the two sides it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch

from properties import counters
from properties.checks.forced_budget import over_budget as budget_exceeded
from properties.sides.forcing import explain, top_ids_explained
from properties.sides.mismatch import Mismatch
from properties.sides.replay_oracle import CUT_KINDS, replay_of
from properties.sides.side_by_side import ForcedDecision, Replay
from properties.tolerance import Tolerance, differing, row_difference
from reference.decisions import Decision, DecisionLog
from reference.engine import VerifyFn
from reference.request import Request
from reference.sched_ctx import LogitsContext
from reference.verify import verify_seq

TOKEN_KINDS = ("token", *CUT_KINDS)


@dataclass(slots=True)
class Taken:
    """One token decision: the logits row it was made on (as the model returned it) and the
    decisions recorded at its output position with their scores (the token, any top-k/top-p cut)."""

    row: torch.Tensor
    records: list[Decision]

    def token(self) -> Decision | None:
        return next((r for r in self.records if r.key.kind == "token"), None)


Trace = dict[tuple[int, int], Taken]  # (sequence id, output position) -> the decision there


@dataclass(slots=True)
class Forced:
    """A decision forced onto the reference side: where (a bootstrap, a verify or a solo decode),
    the engine step it happened in, and what explains it."""

    where: str
    step: int
    decision: ForcedDecision

    def text(self) -> str:
        return f"{self.where} at engine step {self.step}: {self.decision.text()}"


@dataclass(slots=True)
class ForcedTally:
    """Every forced decision of a run and the decisions the reference side made (the budget's base)."""

    forced: list[Forced] = field(default_factory=list)
    decisions: int = 0

    def add(self, forced: list[Forced], decisions: int) -> None:
        """Count them here and in the running test's counters (the near-tie budget's plugin,
        `properties.checks.forced_budget`, and the summary read those)."""
        self.forced += forced
        self.decisions += decisions
        counters.decisions[counters.current_test] += decisions
        counters.near_ties[counters.current_test] += len(forced)
        if forced:
            test = counters.current_test
            largest = max(f.decision.ref_margin for f in forced)
            counters.largest_near_tie[test] = max(counters.largest_near_tie.get(test, 0.0), largest)


def budget_text(tallies: list[ForcedTally], budget: float) -> str:
    """The forced decisions of `tallies` against the budget, one line each (both margins, the row
    difference and what it explains)."""
    forced = [f for t in tallies for f in t.forced]
    decisions = sum(t.decisions for t in tallies)
    lines = [
        f"{len(forced)} of {decisions} decisions forced ({100 * len(forced) / max(decisions, 1):.2f} %; "
        f"budget {budget:.0%}, at least one allowed)"
    ]
    return "\n".join(lines + [f"  {f.text()}" for f in forced])


def over_budget(tallies: list[ForcedTally], budget: float) -> str | None:
    """Why the forced decisions of `tallies` are over the near-tie budget `budget`, or None."""
    return budget_exceeded(sum(len(t.forced) for t in tallies), sum(t.decisions for t in tallies), budget)


class _FirstRun:
    """A model that keeps the logits of its first `decode_run` (a verify's target pass; the
    rollback's replay decodes again after it)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.logits: torch.Tensor | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def decode_run(self, seq: Any, tokens: list[int]) -> torch.Tensor:
        out = self._model.decode_run(seq, tokens)
        if self.logits is None:
            self.logits = out.detach().clone()
        return out


class VerifyRows:
    """The verify step, keeping the target rows of each verify by (sequence id, output position)."""

    def __init__(self, verify: VerifyFn = verify_seq) -> None:
        self.verify = verify
        self.rows: dict[tuple[int, int], torch.Tensor] = {}

    def __call__(self, model: Any, a: Any, prompt: Any, sched: Any, verify_ctx: LogitsContext) -> Any:
        proxy = _FirstRun(model)
        n = len(a.output_tokens)
        out = self.verify(proxy, a, prompt, sched, verify_ctx)
        if proxy.logits is not None:
            for j in range(proxy.logits.shape[0]):
                self.rows[(a.seq_id, n + j)] = proxy.logits[j]
        return out


def trace_of(rows: dict[tuple[int, int], torch.Tensor], records: list[Decision]) -> Trace:
    """The decisions of `records` at the positions `rows` holds a row for."""
    at: dict[tuple[int, int], list[Decision]] = {}
    for r in records:
        if r.key.kind in TOKEN_KINDS:
            at.setdefault((r.key.owner, r.key.position), []).append(r)
    return {k: Taken(rows[k], recs) for k, recs in at.items() if k in rows}


def bootstrap_trace(sbs: Any, impl: bool) -> Trace:
    """The token decisions of a side-by-side bootstrap (`properties.sides.harness.SideBySide`), for the
    implementation (its rows, its decisions replayed on them) or the reference (its rows and
    records)."""
    out: Trace = {}
    side = sbs.impl if impl else sbs.ref
    for b in (sbs.before.active[i] for i in sbs.before.idxs):
        slot, key = b.seq.slot_idx, (b.seq_id, len(b.output_tokens))
        row = side.model.rows.get(slot)
        if row is None:
            continue
        if impl:
            replay = replay_of(sbs, slot)
            records = [] if replay is None else [r for r in replay.log.records if r.key.kind in TOKEN_KINDS]
        else:
            records = [r for r in side.decisions if (r.key.owner, r.key.position) == key and r.key.kind in TOKEN_KINDS]
        if any(r.key.kind == "token" for r in records):
            out[key] = Taken(row, records)
    return out


def explain_token(
    spec: Any, req: Request, verify_ctx: LogitsContext, d: Decision, choice: int, ref: Taken, impl: Taken
) -> tuple[ForcedDecision | None, str]:
    """`explain` for token decision `d` of the reference side, taken as `choice` by the other side:
    the two rows, each side's records at the position, and the request's sampling parameters."""
    slot = 0  # the view holds one sequence
    impl_token = impl.token()
    seq = SimpleNamespace(seq=SimpleNamespace(slot_idx=slot), **req.sampling.fields())
    view = SimpleNamespace(
        spec=spec,
        before=SimpleNamespace(active=[seq], verify_ctx=verify_ctx),
        ref=SimpleNamespace(model=SimpleNamespace(rows={slot: ref.row}), decisions=ref.records, draft_rows={}),
        impl=SimpleNamespace(model=SimpleNamespace(rows={slot: impl.row}), draft_rows={}),
        replays={slot: Replay(None if impl_token is None else impl_token.chosen, None, DecisionLog(impl.records))},
    )
    return explain(view, d, choice, slot)  # type: ignore[arg-type]


def divergences(
    ref: Trace,
    impl: Trace,
    explain_one: Callable[[Decision, int, Taken, Taken], tuple[ForcedDecision | None, str]],
) -> tuple[list[ForcedDecision], list[str]]:
    """Per sequence, the first unforced token decision of `ref` that `impl` took otherwise: forced
    when `explain_one` explains it, else why not. Later ones depend on it and wait for the next run."""
    forced: list[ForcedDecision] = []
    refused: list[str] = []
    settled: set[int] = set()
    for key in sorted(ref):
        m = impl.get(key)
        d, md = ref[key].token(), (m.token() if m is not None else None)
        if key[0] in settled or m is None or d is None or md is None or d.forced or md.chosen == d.chosen:
            continue
        settled.add(key[0])
        f, why = explain_one(d, md.chosen, ref[key], m)
        if f is not None:
            forced.append(f)
        else:
            refused.append(why)
    return forced, refused


def row_mismatches(spec: Any, ref: Trace, impl: Trace, what: str) -> list[Mismatch]:
    """Check 1 over `what` (rows of the same inputs on both sides): each row within rounding."""
    rtol = Tolerance.of(spec.model).rtol
    out = []
    for key in sorted(set(ref) & set(impl)):
        r, m = ref[key].row, impl[key].row
        if bool(differing(r, m, rtol).any()):
            out.append(
                Mismatch(
                    key[0],
                    f"{what} logits row of output position {key[1]} (beyond rounding)",
                    f"within {rtol:.3g} of the row's largest magnitude",
                    f"largest difference {row_difference(r, m):.3g}",
                    ("B1", "B2"),
                )
            )
    return out


def logprobs_differences(
    sid: int, ref: list[Any], impl: list[Any], rows: dict[int, tuple[Taken | None, Taken | None]], rtol: float
) -> tuple[list[str], int]:
    """Fast numerics: the output positions whose logprobs entries differ beyond what rounding
    explains (`top_ids_explained` on the two rows of that position; `rows` by output position), as
    texts, and how many differed within it."""
    bad: list[str] = []
    explained = 0
    for pos, (r, m) in enumerate(zip(ref, impl, strict=False)):
        same = (r is None) == (m is None) and (
            r is None or (r.token, [i for i, _ in r.top]) == (m.token, [i for i, _ in m.top])
        )
        if same:
            continue
        pair = rows.get(pos, (None, None))
        why = "no rows kept for it"
        if pair[0] is not None and pair[1] is not None:
            why = top_ids_explained(r, m, pair[0].row, pair[1].row, rtol) or ""
        if why:
            bad.append(f"request {sid} position {pos}: {why}")
        else:
            explained += 1
    if len(ref) != len(impl):
        bad.append(f"request {sid}: {len(ref)} logprobs entries against {len(impl)}")
    return bad, explained
