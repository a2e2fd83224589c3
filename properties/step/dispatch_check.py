"""P2's dispatch check (G8), for any dispatch: the world run side by side through `dispatch`, which
must say it ran the batched step exactly when expected, with the calls that path makes (one
`decode_batch` and no `decode` when batched, one `decode` a bootstrapping sequence and no
`decode_batch` otherwise), and leave the world as the reference does.

P2 runs the seed's dispatch with the implementation under test as its batched step
(`implementation_dispatch`); the suite's self-tests run the seed's literal dispatch
(`batched.dispatch.step_mtp_bootstrap`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from batched.dispatch import dispatch_bootstrap
from batched.gate import can_batch_bootstrap
from properties.checks.compare import check_equivalence
from properties.config import RunConfig
from properties.failures.report import format_report
from properties.impl import Impl
from properties.sides.harness import run_side_by_side
from properties.worlds.specs import WorldSpec
from properties.worlds.world import base_model, sched_for

# (model, active, sched, idxs, ladder_nd, verify_ctx, dflash_verify_raw_argmax) -> whether it ran batched
Dispatch = Callable[..., bool]


def gate_of(spec: WorldSpec) -> tuple[bool, bool]:
    """(the DFlash-serve flag the dispatch is given, whether the gate opens) for `spec`'s world (G1-G8)."""
    raw = spec.step.dflash_verify_raw_argmax
    sched, _ = sched_for(spec.step)
    return raw, can_batch_bootstrap(base_model(spec.model), sched, len(spec.bootstrap), raw)


def implementation_dispatch(impl: Impl) -> Dispatch:
    """The seed's dispatch with `impl`'s step in place of the literal batched step."""
    return functools.partial(dispatch_bootstrap, impl.step)


def through_dispatch(under_test: Impl, step: Callable[..., None], batched: bool) -> Impl:
    """`under_test` with `step` (the dispatch) as its step: as it is where the gate opens, as the loop
    where it closes (`Impl.as_loop`)."""
    return under_test.with_step(step) if batched else under_test.as_loop(step)


def check_dispatch(
    claim: str,
    run: RunConfig,
    spec: WorldSpec,
    dispatch: Dispatch,
    under_test: Impl,
    raw: bool,
    batched: bool,
    why: str,
) -> None:
    """`spec` run side by side through `dispatch` (with `raw` as its DFlash-serve flag) in place of
    `under_test`'s step (`through_dispatch`); fails with `claim`'s
    report unless the dispatch ran the batched step exactly when `batched` (`why` says what the
    gate was given), with that path's calls, and the world equals the reference's."""
    ran: list[bool] = []

    def step(model: Any, active: Any, sched: Any, idxs: list[int], ladder_nd: int, verify_ctx: Any) -> None:
        ran.append(dispatch(model, active, sched, idxs, ladder_nd, verify_ctx, raw))

    sbs = run_side_by_side(spec, through_dispatch(under_test, step, batched), run.replays)
    ops = [c.op for c in sbs.impl.model.calls]
    error = f" (the step raised {sbs.impl.error!r})" if sbs.impl.error is not None else ""
    assert ran == [batched], f"{why}: the gate says batched={batched}, dispatch returned {ran}{error}, calls {ops}"
    if batched:
        assert ops.count("decode_batch") == 1 and "decode" not in ops, f"{why}: gate open but calls were {ops}"
    else:
        assert "decode_batch" not in ops and ops.count("decode") == len(spec.bootstrap), (
            f"{why}: gate closed: expected {len(spec.bootstrap)} per-sequence decodes, calls were {ops}"
        )
    mismatches = check_equivalence(sbs)
    assert not mismatches, format_report(claim, sbs, mismatches)
