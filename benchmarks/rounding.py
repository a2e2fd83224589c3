"""The `rounding` mode of `python -m benchmarks.profile`: the measured rounding of fast numerics where
the properties compare it. Over generated P1 worlds (the suite's own strategies, drawn from a seed),
how far the implementation's numbers are from the reference's, in units of the dtype's unit roundoff
u (2^-8 for bf16, 2^-24 for float32) times the magnitude of the unit they belong to
(`properties.tolerance`): logits rows, drafter rows by draft index, and the KV, drafter-KV and
SSM units the step wrote. docs/numerics.md holds the measured figures the tolerances are set from.

    python -m benchmarks.profile --mode rounding --device cuda --dtype bfloat16 --examples 30 --max-n 64
    python -m benchmarks.profile --mode rounding --device cuda --reference-device cpu ...   (the reference on the CPU)
"""

from __future__ import annotations

import time
from typing import Any

import torch

UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-53}


def rel(ref: torch.Tensor, impl: torch.Tensor, computed_from: torch.Tensor | None = None) -> float:
    """The largest |ref - impl| over finite entries, relative to the magnitude of each unit (of
    `computed_from` where given: a masked row's unmasked one); 0 where nothing is comparable."""
    from properties.tolerance import unit_scale

    r, m = ref.detach().double(), impl.detach().double().to(ref.device)
    f = torch.isfinite(r) & torch.isfinite(m)
    if not bool(f.any()):
        return 0.0
    scale = unit_scale(r if computed_from is None else computed_from.double().to(r.device)).expand_as(r)
    ok = f & (scale > 0)
    return float(((r - m).abs()[ok] / scale[ok]).max()) if bool(ok.any()) else 0.0


def measure(sbs: Any, note: Any) -> None:
    """Call `note(kind, relative difference)` for every unit both sides of `sbs` computed."""
    from properties.checks.world_state import state_buffers

    for slot, row in sbs.impl.model.rows.items():
        if slot in sbs.ref.model.rows:
            note("logits rows", rel(sbs.ref.model.rows[slot], row))
    for key, row in sbs.impl.draft_rows.items():
        if key in sbs.ref.draft_rows:
            note(
                f"drafter rows, draft {key[2]}", rel(sbs.ref.draft_rows[key], row, sbs.ref.unmasked_draft_rows.get(key))
            )
    before, ref, impl = (state_buffers(w.model) for w in (sbs.before, sbs.ref.world, sbs.impl.world))
    for name, r in ref.items():
        b, m = before[name], impl[name]
        written = (r != b.to(r.device)).any(dim=-1, keepdim=True).expand_as(r)
        if bool(written.any()) and r.shape == m.shape:
            note(f"written {name} units", rel(torch.where(written, r, 0), torch.where(written, m.to(r.device), 0)))


def run_rounding(
    device: str, dtype: str, impl: str, examples: int, max_n: int, reference_device: str = "same", seed: int = 0
) -> dict[str, Any]:
    """The report: examples, decisions and forced ones, and the worst difference of each kind of unit
    in u, over `examples` P1 worlds drawn from `seed` (fast numerics, `impl` against the reference)."""
    from benchmarks.host_throughput import draw_specs
    from properties.config import RunConfig
    from properties.sides.harness import decisions, run_side_by_side

    options = {"device": device, "numerics": "fast", "dtype": dtype, "max_n": max_n, "impl": impl}
    run_config = RunConfig.build(options | {"reference_device": reference_device}, {})
    u = UNIT_ROUNDOFF[dtype]
    worst: dict[str, float] = {}
    count = {"examples": 0, "decisions": 0, "forced": 0}

    def note(kind: str, value: float) -> None:
        worst[kind] = max(worst.get(kind, 0.0), value / u)

    t0 = time.perf_counter()
    for spec in draw_specs(run_config, examples, stream=seed):
        sbs = run_side_by_side(spec, run_config.impl)
        count["examples"] += 1
        count["decisions"] += decisions(sbs)
        count["forced"] += len(sbs.forced_decisions)
        measure(sbs, note)
    report = {"device": run_config.device, "dtype": dtype, "impl": impl, "reference_device": reference_device,
              "max_n": max_n, **count, "seconds": time.perf_counter() - t0, "worst_in_u": dict(sorted(worst.items())),
              "worst_overall_in_u": max(worst.values(), default=0.0)}  # fmt: skip
    print(f"{impl} {dtype} on {report['device']}, n <= {max_n}: {count['examples']} examples, {count['forced']} of "
          f"{count['decisions']} decisions forced, worst {report['worst_overall_in_u']:.3g} u")  # fmt: skip
    for kind, value in report["worst_in_u"].items():
        print(f"{value:10.3g} u  {kind}")
    return report
