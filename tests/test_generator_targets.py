"""The strategies reach the batched paths: statistics over a fixed sample of each property's
generator, against the targets of `docs/generators.md`.

Each sample is drawn by Hypothesis under `derandomize=True` (generate phase only, no database), so it
is the same in every run for the same strategies and Hypothesis version. Features of the spec alone
(rows, temperatures, cuts, drafter models, fault plans) are read from the specs; those that need a
run (groups formed, drafts returned, grammars ended) from the side-by-side harness on each example,
as the properties run it, and the faults that fired from the implementation's run alone. Each
threshold sits a little under the value measured when it was set, so a change that moves a generator
off its target fails here.

`pytest tests/test_generator_targets.py -s -k table` prints the measured figures; the aimed generators
(wide, stride and greedy worlds) have theirs in `tests/test_aimed_world_targets.py`.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import strategies as st

from properties.config import RunConfig
from properties.impl import Impl, load
from properties.sides.faults import FaultyModel
from properties.sides.harness import masked_tokens, run_side_by_side, run_step
from properties.sides.side_by_side import SideBySide
from properties.worlds.fault_kinds import ALTERNATES, BAD_ROWS, BATCHED_STEP_OPS, ONCE_PER_STEP
from properties.worlds.fault_plans import fault_specs
from properties.worlds.fixed_sample import fixed_sample
from properties.worlds.gate_worlds import dispatch_specs
from properties.worlds.specs import WorldSpec
from properties.worlds.strategies import world_specs
from properties.worlds.world import build_world

# The CPU default of a pytest run (exact numerics, float64/float32, mixes of up to 8), whatever the
# options of this session: the statistics are the generators', not the run's.
RUN = RunConfig("cpu", "exact", ("float64", "float32"), 8)
P1_SAMPLE = 200  # examples of the P1 generator (world_specs)
# Examples of the P4 generator (world_specs with faults, plus one extra fault plan). Hypothesis draws
# fault kinds in clumps: in the first 400 of this sample `decode_batch`'s masked_row never comes up
# (5 of its 135 decode faults before the in-place draw of 2026-12-04), in the first 600 five times.
P4_SAMPLE = 600
DISPATCH_SAMPLE = 200  # specs of the P2 dispatch generator (drawn only)

# Thresholds (fractions of the sample unless named otherwise): the reach targets of the design where
# it names one (two rows or more 80 %, a group that returned drafts 50 %, two groups 20 %, sampled
# rows 25 %), else about two thirds of the value measured when it was set (docs/generators.md has
# both). The sample is deterministic for a given tree, but which examples a session's earlier tests
# leave cached moves it by a few points; a generator that drifts off the batched paths still fails.
# Hypothesis draws a derandomized sample in clumps (it mutates earlier examples), so a strategy
# change moves these figures by several points either way.
# P1 examples that bootstrap two rows or more: a single row batches nothing (measured 0.935).
MIN_BOOTSTRAP_2 = 0.8
# P1 examples with a batched propose group that returned drafts, B16-B19 (measured 0.54).
MIN_GROUP_DRAFTS = 0.5
# P1 examples with two groups or more: chunking by the cap, B16 (measured 0.265).
MIN_TWO_GROUPS = 0.2
# Bootstrapped rows that sample, temperature > 0 (measured 0.357).
MIN_SAMPLED_ROWS = 0.25
# Of the sampled rows: top-p < 1, a temperature <= 0.05, one > 1 (measured 0.54, 0.325, 0.26).
MIN_TOP_P_CUT = 0.35
MIN_TINY_TEMPERATURE = 0.2
MIN_HOT_TEMPERATURE = 0.15
# Distinct temperatures among the sampled rows: continuous, not three round values (measured 32).
MIN_DISTINCT_TEMPERATURES = 25
# Bootstrapped grammar rows whose grammar the step's token ends, walked to its end (measured 0.254).
MIN_GRAMMAR_ENDED = 0.15
# Dispatch specs (P2) with a DFlash drafter model, read by G5 (measured 0.605: drawn two times in three).
MIN_DFLASH = 0.1
# Sequences with no tool-call-end token at all (requests without tools; measured 0.2).
MIN_NO_TOOL_CALL_END = 0.1
# P4 examples with a planned fault that fired (measured 0.70).
MIN_FAULT_FIRED = 0.5
# P1 decode rows whose two best logits tie exactly (tied weights; measured 0.31), and sampled rows
# whose decision is set on a hair (`SeqSpec.near_tie`; measured 0.63).
MIN_TIED_ROWS = 0.2
MIN_NEAR_TIE_SAMPLED = 0.4
# Sampled rows with a temperature within 5 % of 1, not 1 itself (measured 0.23; 0 before).
MIN_TEMPERATURE_NEAR_ONE = 0.15
# Held rows whose own top token is an EOS id, so that the hold moves their token (measured 0.57).
MIN_HELD_EOS_TOP = 0.35


@st.composite
def p4_specs(draw: st.DrawFn) -> WorldSpec:
    """What `properties/step/test_p4_faults.py` checks: its world, or the extra plan when it has none."""
    spec = draw(world_specs(RUN, faults=True))
    extra = draw(fault_specs(max_faults=1))
    return spec if spec.faults else replace(spec, faults=extra)


def group_calls(sbs: SideBySide) -> list[Any]:
    return [c for c in sbs.impl.model.calls if c.op == "run_mtp_propose_batched"]


def returned_drafts(call: Any) -> bool:
    """A group propose that returned, with drafts for at least one member."""
    return call.outcome == "ok" and len(call.empty_rows) < len(call.slots)


def implementation_calls(spec: WorldSpec, impl: Impl) -> list[Any]:
    """The implementation's calls on `spec`'s world with its faults, as `run_side_by_side` makes
    them (which faults fire is the implementation side's alone: the reference is not run)."""
    world = build_world(spec)
    world.model = impl.prepare_model(world.model)
    model = FaultyModel(world.model, spec.faults, masked=masked_tokens(world, list(spec.faults)))
    return run_step(world, model, impl.step).model.calls


def fired_calls(calls: list[Any]) -> set[tuple[str, int]]:
    """(op, call index) of each call a planned fault changed."""
    out, counts = set(), Counter[str]()
    for c in calls:
        if c.injected:
            out.add((c.op, counts[c.op]))
        counts[c.op] += 1
    return out


@dataclass(slots=True)
class Measured:
    """What the samples showed: fractions by name, and the fault coverage."""

    values: dict[str, float] = field(default_factory=dict)
    planned: set[tuple[str, int]] = field(default_factory=set)  # (op, call) drawn
    fired_calls: set[tuple[str, int]] = field(default_factory=set)  # (op, call) fired
    fired_kinds: Counter[tuple[str, str]] = field(default_factory=Counter)  # (op, kind) fired


def fraction(hits: int, total: int) -> float:
    return hits / total if total else 0.0


@functools.lru_cache(maxsize=1)
def measure() -> Measured:
    out, impl = Measured(), load("literal")
    v = out.values

    p1 = fixed_sample(world_specs(RUN), P1_SAMPLE)
    rows = [s.seqs[i] for s in p1 for i in s.bootstrap]
    sampled = [r for r in rows if r.temperature > 0]
    v["bootstrap >= 2 rows"] = fraction(sum(len(s.bootstrap) >= 2 for s in p1), len(p1))
    v["sampled rows"] = fraction(len(sampled), len(rows))
    v["top-p < 1 (of sampled)"] = fraction(sum(r.top_p < 1 for r in sampled), len(sampled))
    v["temperature <= 0.05 (of sampled)"] = fraction(sum(r.temperature <= 0.05 for r in sampled), len(sampled))
    v["temperature > 1 (of sampled)"] = fraction(sum(r.temperature > 1 for r in sampled), len(sampled))
    v["distinct temperatures"] = len({r.temperature for r in sampled})
    v["temperature within 5 % of 1 (of sampled)"] = fraction(
        sum(0 < abs(r.temperature - 1) <= 0.05 for r in sampled), len(sampled)
    )
    v["near tie set (of sampled)"] = fraction(sum(bool(r.near_tie) for r in sampled), len(sampled))
    held = [r for r in rows if r.min_tokens > r.n_out]
    v["own top token an EOS id (of held)"] = fraction(sum(r.eos_top for r in held), len(held))
    groups = drafts = two = grammar_rows = grammar_ended = tied = boot_rows = 0
    for spec in p1:
        sbs = run_side_by_side(spec, impl)
        for row in sbs.ref.model.rows.values():
            boot_rows += 1
            top2 = row.double().topk(2).values
            tied += bool(top2[0] == top2[1])
        calls = group_calls(sbs)
        groups += bool(calls)
        drafts += any(returned_drafts(c) for c in calls)
        two += len(calls) >= 2
        for i in spec.bootstrap:
            state = sbs.ref.world.active[i].grammar_state
            if state is not None:
                grammar_rows += 1
                grammar_ended += state.is_terminated()
    v["group propose formed"] = fraction(groups, len(p1))
    v["group propose returned drafts"] = fraction(drafts, len(p1))
    v["two groups or more"] = fraction(two, len(p1))
    v["grammar rows ended by the grammar"] = fraction(grammar_ended, grammar_rows)
    v["decode rows with their best two logits tied"] = fraction(tied, boot_rows)
    worlds = [build_world(s) for s in p1[:50]]
    seqs = [a for w in worlds for a in w.active]
    v["sequences without a tool-call-end token"] = fraction(sum(a.tool_call_end_token is None for a in seqs), len(seqs))

    dispatch = fixed_sample(dispatch_specs(RUN), DISPATCH_SAMPLE)
    v["DFlash drafter (dispatch specs)"] = fraction(
        sum(s.model.dflash_gamma is not None for s in dispatch), len(dispatch)
    )

    p4 = fixed_sample(p4_specs(), P4_SAMPLE)
    hits = 0
    for spec in p4:
        out.planned |= {(f.op, f.call) for f in spec.faults}
        got = fired_calls(implementation_calls(spec, impl))
        hits += bool(got)
        out.fired_calls |= got
        out.fired_kinds.update((f.op, f.kind) for f in spec.faults if (f.op, f.call) in got)
    v["P4 examples with a fault that fired"] = fraction(hits, len(p4))
    v["P4 examples with a fault planned"] = fraction(sum(bool(s.faults) for s in p4), len(p4))
    return out


def every_call() -> set[tuple[str, int]]:
    """Each (operation, call index) a fault plan can address."""
    return {(op, k) for op in BATCHED_STEP_OPS for k in ((0,) if op in ONCE_PER_STEP else (0, 1, 2))}


@pytest.fixture(scope="module")
def measured() -> Measured:
    return measure()


@pytest.mark.parametrize(
    ("name", "threshold"),
    [
        ("bootstrap >= 2 rows", MIN_BOOTSTRAP_2),
        ("group propose returned drafts", MIN_GROUP_DRAFTS),
        ("two groups or more", MIN_TWO_GROUPS),
        ("sampled rows", MIN_SAMPLED_ROWS),
        ("top-p < 1 (of sampled)", MIN_TOP_P_CUT),
        ("temperature <= 0.05 (of sampled)", MIN_TINY_TEMPERATURE),
        ("temperature > 1 (of sampled)", MIN_HOT_TEMPERATURE),
        ("distinct temperatures", MIN_DISTINCT_TEMPERATURES),
        ("grammar rows ended by the grammar", MIN_GRAMMAR_ENDED),
        ("DFlash drafter (dispatch specs)", MIN_DFLASH),
        ("P4 examples with a fault that fired", MIN_FAULT_FIRED),
        ("decode rows with their best two logits tied", MIN_TIED_ROWS),
        ("near tie set (of sampled)", MIN_NEAR_TIE_SAMPLED),
        ("temperature within 5 % of 1 (of sampled)", MIN_TEMPERATURE_NEAR_ONE),
        ("own top token an EOS id (of held)", MIN_HELD_EOS_TOP),
    ],
)
def test_generator_meets_target(measured: Measured, name: str, threshold: float) -> None:
    got = measured.values[name]
    assert got >= threshold, f"{name}: measured {got:.3f}, target {threshold}"


def test_every_fault_call_is_planned() -> None:
    """The fault strategy itself, for a mix of 8 rows in groups of 2, plans every (operation, call
    index) in a sample of 300 plans."""
    planned = {(f.op, f.call) for plan in fixed_sample(fault_specs(rows=8, group_cap=2), 300) for f in plan}
    assert every_call() <= planned, f"never planned: {sorted(every_call() - planned)}"


def test_every_fault_op_and_alternate_fires(measured: Measured) -> None:
    """Each operation fires a fault, and so does each alternate result (the bad logits rows of
    `decode_batch` included); the errors of the per-sequence propose fire only in some samples."""
    ops = {op for op, _ in measured.fired_kinds}
    assert ops == set(BATCHED_STEP_OPS), f"never fired: {sorted(set(BATCHED_STEP_OPS) - ops)}"
    alternates = {(op, kind) for op in BATCHED_STEP_OPS for kind in ALTERNATES[op]}
    missing = alternates - set(measured.fired_kinds)
    assert not missing, f"never fired: {sorted(missing)}"
    assert {("decode_batch", k) for k in BAD_ROWS} <= set(measured.fired_kinds)


def test_some_sequences_have_no_tool_call_end_token(measured: Measured) -> None:
    assert measured.values["sequences without a tool-call-end token"] >= MIN_NO_TOOL_CALL_END


def test_print_table(measured: Measured) -> None:
    """The measured figures (shown with `-s`): `pytest tests/test_generator_targets.py -s -k table`."""
    for name, value in measured.values.items():
        print(f"{name:45s} {value:.3f}" if value <= 1 else f"{name:45s} {value:.0f}")
    print(f"(op, call) planned {len(measured.planned)}/{len(every_call())}, fired {len(measured.fired_calls)}")
    print("never fired:", sorted(every_call() - measured.fired_calls))
    print("fired (op, kind):", dict(sorted(measured.fired_kinds.items())))
