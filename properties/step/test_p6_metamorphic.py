"""P6: metamorphic. A sequence's outcome does not depend on its company: alone or in any mix, in
any order of `active`, under any group cap, with the batched argmax on or off, it ends the same.

Every variant is itself checked against the reference (P1, under the replay oracle in fast
numerics); then the variants' outcomes are compared with each other, sequence by sequence. Exact
numerics: bit for bit. Fast numerics: continuous values within rounding, and a discrete decision
(the token, a draft) may differ between two variants only where the rows it was decided on are
within rounding of each other; what depends on that decision is then not compared between them
(each variant's own comparison with the reference already held it)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.checks.compare import check_equivalence, seq_fields, values_equal
from properties.config import RunConfig
from properties.failures.report import format_report
from properties.run.shards import sharded
from properties.sides.harness import run_side_by_side
from properties.sides.replay_oracle import emitted
from properties.tolerance import Tolerance, differing, row_difference
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import world_specs

# Fields decided by the token (or computed from it), and by the drafts.
AFTER_TOKEN = (
    "output_tokens",
    "output_logprobs",
    "last_token",
    "finished",
    "finish_reason",
    "adaptive_spec",
    "grammar_state",
)
AFTER_DRAFTS = ("pending_drafts", "pending_draft_conf", "draft_kv_k", "draft_kv_v")
# Fields the replay oracle holds against each variant's own rows (fast numerics).
REPLAYED = ("output_logprobs", "pending_draft_conf")


def plain(spec: WorldSpec) -> WorldSpec:
    """No faults, no organic failure that depends on group membership, no confidences (D4)."""
    return replace(
        spec,
        faults=(),
        # A stride that fits every drafter table: an overflowing member fails its whole group, so near
        # max_seq_len the outcome would depend on the company (that is B21/B26, not a P6 claim).
        model=replace(spec.model, meta_stride=64, stash_capacity=max(64, len(spec.seqs))),
        step=replace(spec.step, dcut_enabled=False, draft_stop_logprob=None),
    )


@dataclass(slots=True)
class SeqOutcome:
    fields: dict[str, Any]
    token: int | None
    row: torch.Tensor | None  # the logits row its token was decided on
    draft_rows: dict[int, torch.Tensor]  # draft index -> drafter row


def outcome(run: RunConfig, spec: WorldSpec, what: str) -> dict[int, SeqOutcome]:
    """Per bootstrapped sequence (by slot): its outcome after the implementation, once the variant
    passed its own comparison with the reference."""
    sbs = run_side_by_side(spec, run.impl, run.replays)
    mismatches = check_equivalence(sbs)
    assert not mismatches, format_report(f"P6 variant ({what}) against the reference", sbs, mismatches)
    out = {}
    for i in spec.bootstrap:
        b, a = sbs.before.active[i], sbs.impl.world.active[i]
        fields = seq_fields(a)
        fields.pop("seq_id")
        slot = a.seq.slot_idx
        rows = {k[2]: r for k, r in sbs.impl.draft_rows.items() if k[0] == slot and k[1] == a.seq.seq_len}
        fields.update(sbs.impl.world.model.snapshot(a.seq))
        out[slot] = SeqOutcome(fields, emitted(b, a), sbs.impl.model.rows.get(slot), rows)
    return out


def assert_same(base: dict[int, SeqOutcome], other: dict[int, SeqOutcome], what: str, spec: WorldSpec) -> None:
    """Every sequence of `other` ends as in `base` (the module docstring's rule)."""
    rtol = Tolerance.of(spec.model).rtol
    for slot, o in other.items():
        b = base[slot]
        skip: set[str] = set()
        if b.token != o.token:
            _decided_on_close_rows(b.row, o.row, rtol, f"{what}: slot {slot}'s token {b.token} vs {o.token}")
            skip.update(AFTER_TOKEN + AFTER_DRAFTS + ("ckpt_pos", "ckpt_state"))
        else:
            first = next((i for i, (x, y) in enumerate(zip(_drafts(b), _drafts(o), strict=False)) if x != y), None)
            if first is None and len(_drafts(b)) != len(_drafts(o)):
                first = min(len(_drafts(b)), len(_drafts(o)))
            if first is not None:
                rows = (b.draft_rows.get(first), o.draft_rows.get(first))
                _decided_on_close_rows(*rows, rtol, f"{what}: slot {slot}'s draft {first}")
                skip.update(AFTER_DRAFTS)
        for key, value in o.fields.items():
            if key in skip or (rtol and key in REPLAYED):
                continue
            assert _same(b.fields[key], value, rtol), (
                f"{what}: sequence in slot {slot} differs in {key}: {b.fields[key]!r} vs {value!r}"
            )


def _drafts(o: SeqOutcome) -> list[int]:
    return list(o.fields["pending_drafts"])


def _decided_on_close_rows(a: torch.Tensor | None, b: torch.Tensor | None, rtol: float, what: str) -> None:
    assert rtol > 0, f"{what} differ (exact numerics): a sequence's token or draft depends on its company"
    assert a is not None and b is not None, f"{what} differ, and a row it was decided on was not captured"
    # The same row, seed and position give the same draw, whatever the noise: a seeded request's
    # token must not depend on its company.
    assert not (a.shape == b.shape and bool(torch.equal(a, b))), f"{what} differ, decided on identical rows"
    assert not bool(differing(a, b, rtol).any()), (
        f"{what} differ, and the rows they were decided on differ beyond rounding ({row_difference(a, b):.3g})"
    )


def _same(a: Any, b: Any, rtol: float) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and rtol:
        return a.shape == b.shape and not bool(differing(a, b, rtol).any())
    return values_equal(a, b)


@covers("P6 metamorphic", "B5", "B6", "B14", "B16")
@sharded(4)
@given(data=st.data(), cap=st.sampled_from((0, 1, 2, 3, 8)))
def test_p6_group_cap_and_argmax_path(run: RunConfig, shard: int, data: st.DataObject, cap: int) -> None:
    spec: WorldSpec = data.draw(world_specs(run, min_n=2), label="spec")
    spec = plain(spec)
    base = outcome(run, spec, "as drawn")
    capped = replace(spec, model=replace(spec.model, group_cap=cap))
    assert_same(base, outcome(run, capped, f"group cap {cap}"), f"group cap {cap}", spec)
    flipped = replace(spec, step=replace(spec.step, mtp_boot_argmax=not spec.step.mtp_boot_argmax))
    assert_same(base, outcome(run, flipped, "argmax lever flipped"), "batched argmax lever flipped", spec)


@covers("P6 metamorphic", "B1")
@sharded(4)
@given(data=st.data())
def test_p6_alone_or_in_any_order(run: RunConfig, shard: int, data: st.DataObject) -> None:
    spec: WorldSpec = data.draw(world_specs(run, min_n=2), label="spec")
    spec = plain(spec)
    base = outcome(run, spec, "as drawn")
    alone = data.draw(st.sampled_from(spec.bootstrap), label="alone")
    assert_same(base, outcome(run, replace(spec, bootstrap=(alone,)), "alone"), f"sequence {alone} alone", spec)
    order = data.draw(st.permutations(range(len(spec.seqs))), label="order")
    position = {old: new for new, old in enumerate(order)}
    permuted = replace(
        spec, seqs=tuple(spec.seqs[i] for i in order), bootstrap=tuple(sorted(position[i] for i in spec.bootstrap))
    )
    assert_same(base, outcome(run, permuted, "reordered"), f"active reordered as {order}", spec)
