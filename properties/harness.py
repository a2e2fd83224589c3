"""Run the reference step and the implementation under test side by side on identical worlds.

The implementation runs first, with the spec's fault plan injected and every model call and log
record captured. Its call outcomes are translated into per-sequence faults for the reference
(`properties.translate`), which then runs on a fresh copy of the same world with its decisions
recorded. In fast numerics, a decision the two sides took differently is forced onto the reference
(teacher forcing) when the reference's margin there is within the dtype's tolerance, and the
reference re-runs; a difference outside the tolerance is left for the comparator to report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from properties import counters
from properties.faults import FaultyModel
from properties.impl import load
from properties.numerics import margin_tolerance
from properties.specs import WorldSpec
from properties.translate import Envelope, Translation, translate
from properties.world import World, build_world
from reference.decisions import Decision, DecisionKey, DecisionLog
from reference.step import step_mtp_bootstrap_per_seq
from reference.telemetry import LogCapture, LogRecord

MAX_FORCING_ROUNDS = 16
CUT_KINDS = ("topk", "topp")


@dataclass(slots=True)
class Side:
    """One side after its run: the world, the recording model, the logs, and any exception that
    escaped the step."""

    world: World
    model: FaultyModel
    logs: list[LogRecord]
    error: BaseException | None = None
    decisions: list[Decision] = field(default_factory=list)


@dataclass(slots=True)
class SideBySide:
    spec: WorldSpec
    before: World
    ref: Side
    impl: Side
    translation: Translation
    forced: dict[DecisionKey, int] = field(default_factory=dict)
    near_ties: list[Decision] = field(default_factory=list)  # forced decisions and their margins


def run_step(world: World, model: Any, step: Callable[..., Any], decisions: DecisionLog | None = None) -> Side:
    """Run `step` on `world` through `model`, capturing logs and an escaping exception."""
    error: BaseException | None = None
    with LogCapture() as cap:
        try:
            if decisions is None:
                step(model, world.active, world.sched, world.idxs, world.ladder_nd, world.verify_ctx)
            else:
                with decisions:
                    step(model, world.active, world.sched, world.idxs, world.ladder_nd, world.verify_ctx)
        except Exception as e:  # reported by the comparator, with the example
            error = e
    return Side(world, model, cap.records, error, decisions.records if decisions else [])


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


def run_reference(base: World, tr: Translation, forced: dict[DecisionKey, int]) -> Side:
    world = base.clone()
    world.model.poison_scratch()
    model = FaultyModel(world.model, (), list(tr.seq_faults), capture_conf=True)
    return run_step(world, model, step_mtp_bootstrap_per_seq, DecisionLog(forced=dict(forced)))


def run_side_by_side(spec: WorldSpec, impl: Callable[..., Any] | None = None) -> SideBySide:
    """Both runs of `spec`; `impl` defaults to the selected implementation (`--impl`)."""
    step = impl or load()
    base = build_world(spec)
    before = base.clone()

    impl_world = base.clone()
    impl_world.model.poison_scratch()
    impl_side = run_step(impl_world, FaultyModel(impl_world.model, spec.faults), step)

    tr = translate(impl_side.model.calls, envelope(before))
    forced: dict[DecisionKey, int] = {}
    ref_side = run_reference(base, tr, forced)
    out = SideBySide(spec, before, ref_side, impl_side, tr, forced)
    if spec.model.numerics != "exact":
        force_near_ties(out, base)
    counters.count_run(len(out.near_ties), [d.margin for d in out.near_ties])
    return out


def force_near_ties(out: SideBySide, base: World) -> None:
    """Teacher forcing: re-run the reference with the implementation's choice at each divergent
    near-tie until no new one appears."""
    spec, tr, forced = out.spec, out.translation, out.forced

    tol = margin_tolerance(spec.model.dtype)
    for _ in range(MAX_FORCING_ROUNDS):
        new = divergent_near_ties(out, tol)
        if not new:
            break
        for d, choice in new:
            forced[d.key] = choice
            out.near_ties.append(d)
        out.ref = run_reference(base, tr, forced)


def impl_choices(sbs: SideBySide) -> dict[DecisionKey, int]:
    """The implementation's token and draft choices this step, keyed as the reference records them."""
    choices: dict[DecisionKey, int] = {}
    for b, a in zip(sbs.before.active, sbs.impl.world.active, strict=True):
        if b.seq_id not in (sbs.before.active[i].seq_id for i in sbs.before.idxs):
            continue
        n_before = len(b.output_tokens)
        if len(a.output_tokens) > n_before:
            choices[DecisionKey(a.seq_id, n_before, "token")] = a.output_tokens[n_before]
        for i, d in enumerate(a.pending_drafts):
            choices[DecisionKey(a.seq.slot_idx, a.seq.seq_len, "draft", i)] = d
    return choices


def divergent_near_ties(sbs: SideBySide, tol: Callable[[Decision], float]) -> list[tuple[Decision, int]]:
    """The first reference decision per sequence (its token, then its drafts in order) that the
    implementation took otherwise, when it was a near-tie (its margin, or the margin of a
    top-k/top-p cut at the same position, within tolerance). Everything later in that sequence
    depends on it, so it waits for the next round."""
    choices = impl_choices(sbs)
    slot_of_seq = {a.seq_id: a.seq.slot_idx for a in sbs.before.active}
    cut_margin: dict[tuple[int, int], float] = {}
    for d in sbs.ref.decisions:
        if d.key.kind in CUT_KINDS:
            k = (d.key.seq_id, d.key.position)
            cut_margin[k] = min(cut_margin.get(k, float("inf")), d.margin)
    out: list[tuple[Decision, int]] = []
    settled: set[int] = set()  # slots whose first divergence was found
    for d in sbs.ref.decisions:
        if d.key.kind in CUT_KINDS or d.forced:
            continue
        slot = d.key.seq_id if d.key.kind == "draft" else slot_of_seq[d.key.seq_id]
        choice = choices.get(d.key)
        if choice is None or choice == d.chosen or slot in settled:
            continue
        settled.add(slot)
        margin = min(d.margin, cut_margin.get((d.key.seq_id, d.key.position), float("inf")))
        if margin <= tol(d):
            out.append((d, choice))
    return out
