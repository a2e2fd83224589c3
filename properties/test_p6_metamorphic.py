"""P6: metamorphic. A sequence's outcome does not depend on its company: alone or in any mix, in
any order of `active`, under any group cap, with the batched argmax on or off, it ends the same
(bit for bit in exact numerics)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from properties.behaviours import covers
from properties.compare import seq_fields, values_equal
from properties.harness import run_side_by_side
from properties.run_config import current
from properties.specs import WorldSpec
from properties.strategies import world_specs

RUN = current()
pytestmark = pytest.mark.skipif(RUN.numerics != "exact", reason="metamorphic equalities are bit-exact claims")


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


def outcome(spec: WorldSpec) -> dict[int, dict[str, Any]]:
    """Per bootstrapped sequence (by slot): its fields and its model state after the implementation."""
    sbs = run_side_by_side(spec)
    assert sbs.impl.error is None, f"implementation raised {sbs.impl.error!r}"
    out = {}
    for i in spec.bootstrap:
        a = sbs.impl.world.active[i]
        fields = seq_fields(a)
        fields.pop("seq_id")
        out[a.seq.slot_idx] = {**fields, **sbs.impl.world.model.snapshot(a.seq)}
    return out


def assert_same(base: dict[int, dict[str, Any]], other: dict[int, dict[str, Any]], what: str) -> None:
    for slot, fields in other.items():
        for key, value in fields.items():
            assert values_equal(base[slot][key], value, 0.0, 0.0), (
                f"{what}: sequence in slot {slot} differs in {key}: {base[slot][key]!r} vs {value!r}"
            )


@covers("P6 metamorphic", "B5", "B6", "B14", "B16")
@given(spec=world_specs(RUN, min_n=2), cap=st.sampled_from((0, 1, 2, 3, 8)))
def test_p6_group_cap_and_argmax_path(spec: WorldSpec, cap: int) -> None:
    spec = plain(spec)
    base = outcome(spec)
    assert_same(base, outcome(replace(spec, model=replace(spec.model, group_cap=cap))), f"group cap {cap}")
    flipped = replace(spec, step=replace(spec.step, mtp_boot_argmax=not spec.step.mtp_boot_argmax))
    assert_same(base, outcome(flipped), "batched argmax lever flipped")


@covers("P6 metamorphic", "B1")
@given(spec=world_specs(RUN, min_n=2), data=st.data())
def test_p6_alone_or_in_any_order(spec: WorldSpec, data: st.DataObject) -> None:
    spec = plain(spec)
    base = outcome(spec)
    alone = data.draw(st.sampled_from(spec.bootstrap), label="alone")
    assert_same(base, outcome(replace(spec, bootstrap=(alone,))), f"sequence {alone} alone")
    order = data.draw(st.permutations(range(len(spec.seqs))), label="order")
    position = {old: new for new, old in enumerate(order)}
    permuted = replace(
        spec, seqs=tuple(spec.seqs[i] for i in order), bootstrap=tuple(sorted(position[i] for i in spec.bootstrap))
    )
    assert_same(base, outcome(permuted), f"active reordered as {order}")
