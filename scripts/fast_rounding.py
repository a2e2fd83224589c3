"""Measure the rounding of fast numerics where the properties compare it: over generated P1 worlds
(the suite's own strategies), how far the implementation's numbers are from the reference's, in
units of the dtype's unit roundoff u (2^-8 for bf16, 2^-24 for float32) times the magnitude of the
unit they belong to (`properties.checks.numerics`): logits rows, drafter rows by draft index, and the KV,
drafter-KV and SSM units the step wrote. Prints a table and writes JSON; docs/numerics.md holds the
measured figures the tolerances are set from.

    python scripts/fast_rounding.py --device cuda --dtype bfloat16 --examples 300 --max-n 64 --out r.json
    python scripts/fast_rounding.py --device cuda --reference-device cpu ...   (the reference on the CPU)
"""

from __future__ import annotations

import argparse
import json
import os

import torch
from hypothesis import HealthCheck, given, settings

UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-53}


def rel(ref: torch.Tensor, impl: torch.Tensor, computed_from: torch.Tensor | None = None) -> float:
    """The largest |ref - impl| over finite entries, relative to the magnitude of each unit (of
    `computed_from` where given: a masked row's unmasked one)."""
    from properties.checks.numerics import unit_scale

    r, m = ref.detach().double(), impl.detach().double().to(ref.device)
    f = torch.isfinite(r) & torch.isfinite(m)
    if not bool(f.any()):
        return 0.0
    scale = unit_scale(r if computed_from is None else computed_from.double().to(r.device)).expand_as(r)
    ok = f & (scale > 0)
    return float(((r - m).abs()[ok] / scale[ok]).max()) if bool(ok.any()) else 0.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--examples", type=int, default=200)
    p.add_argument("--max-n", type=int, default=12)
    p.add_argument("--reference-device", default="same", choices=("same", "cpu"))
    p.add_argument("--out", default=None)
    a = p.parse_args()
    os.environ.update(
        MTP_VERIFY_DEVICE=a.device,
        MTP_VERIFY_NUMERICS="fast",
        MTP_VERIFY_DTYPE=a.dtype,
        MTP_VERIFY_MAX_N=str(a.max_n),
        MTP_VERIFY_REFERENCE_DEVICE=a.reference_device,
    )
    from properties.checks.world_state import state_buffers
    from properties.config import current
    from properties.harness import run_side_by_side
    from properties.strategies import world_specs

    u = UNIT_ROUNDOFF[a.dtype]
    worst: dict[str, float] = {}
    count = {"examples": 0, "forced": 0, "decisions": 0}

    def note(kind: str, value: float) -> None:
        worst[kind] = max(worst.get(kind, 0.0), value / u)

    @settings(
        max_examples=a.examples, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(spec=world_specs(current()))
    def sample(spec) -> None:  # type: ignore[no-untyped-def]
        sbs = run_side_by_side(spec)
        count["examples"] += 1
        count["forced"] += len(sbs.forced_decisions)
        for slot, row in sbs.impl.model.rows.items():
            if slot in sbs.ref.model.rows:
                note("logits rows", rel(sbs.ref.model.rows[slot], row))
        for key, row in sbs.impl.draft_rows.items():
            if key in sbs.ref.draft_rows:
                unmasked = sbs.ref.unmasked_draft_rows.get(key)
                note(f"drafter rows, draft {key[2]}", rel(sbs.ref.draft_rows[key], row, unmasked))
        before, ref, impl = (state_buffers(w.model) for w in (sbs.before, sbs.ref.world, sbs.impl.world))
        for name, r in ref.items():
            b, m = before[name], impl[name]
            written = (r != b.to(r.device)).any(dim=-1, keepdim=True).expand_as(r)
            if bool(written.any()) and r.shape == m.shape:
                note(f"written {name} units", rel(torch.where(written, r, 0), torch.where(written, m.to(r.device), 0)))

    sample()
    table = {
        "dtype": a.dtype,
        "device": a.device,
        "reference_device": a.reference_device,
        "max_n": a.max_n,
        **count,
        "worst_in_u": dict(sorted(worst.items())),
    }
    print(json.dumps(table, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
