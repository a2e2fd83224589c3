"""The per-row scalars of a bootstrap batch as columns, and the row classes computed over them at once:
the EOS hold, neutral penalties and the batched-argmax eligibility (B4, B5).

One pass over the rows reads every field the classes need into a CPU tensor per field; the classes
are then a handful of elementwise operations over all rows, with exactly the per-row semantics of
`reference.eos_hold.presample_hold_for`, `reference.penalties.classify_penalties` (of
`penalty_params_for(a, VERIFY, floor)`) and `batched.step.greedy_eligible`.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import torch

from reference.penalties import reasoning_floor_holds
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq


@dataclass(slots=True, frozen=True)
class RowTable:
    """Columns of the n rows, row j = refs[j]; every tensor is [n] on the CPU."""

    temperature: torch.Tensor  # float64
    repetition: torch.Tensor  # float64
    frequency: torch.Tensor  # float64
    presence: torch.Tensor  # float64
    n_out: torch.Tensor  # int64: output tokens before this step's token
    min_tokens: torch.Tensor  # int64
    has_eos: torch.Tensor  # bool: the sequence has EOS ids
    has_grammar: torch.Tensor  # bool
    floor_holds: torch.Tensor  # bool: the reasoning floor bans the reasoning end and EOS


def row_table(refs: list[ActiveSeq], min_reasoning_floor: int) -> RowTable:
    """The columns of `refs` (one pass over the rows)."""
    cols: list[tuple] = [
        (
            a.temperature,
            a.repetition_penalty,
            a.frequency_penalty,
            a.presence_penalty,
            len(a.output_tokens),
            a.min_tokens,
            len(a.eos_ids) > 0,
            a.grammar_state is not None,
            reasoning_floor_holds(a, min_reasoning_floor),
        )
        for a in refs
    ]
    t, r, f, p, n_out, min_tok, eos, gram, floor = zip(*cols, strict=True) if cols else ((),) * 9
    f64, i64, b = torch.float64, torch.int64, torch.bool
    return RowTable(
        temperature=column(t, "d", f64),
        repetition=column(r, "d", f64),
        frequency=column(f, "d", f64),
        presence=column(p, "d", f64),
        n_out=column(n_out, "q", i64),
        min_tokens=column(min_tok, "q", i64),
        has_eos=column(eos, "B", b),
        has_grammar=column(gram, "B", b),
        floor_holds=column(floor, "B", b),
    )


def column(values: tuple, code: str, dtype: torch.dtype) -> torch.Tensor:
    """`torch.tensor(values, dtype=dtype)`, through a C array where every value converts exactly (a
    fifth of the time); anything the array refuses goes to `torch.tensor`, which decides as before."""
    try:
        return torch.frombuffer(array(code, values), dtype=dtype) if values else torch.zeros(0, dtype=dtype)
    except (TypeError, OverflowError):
        return torch.tensor(values, dtype=dtype)


def eos_held(t: RowTable) -> torch.Tensor:
    """[n] bool: EOS is held before sampling (fewer output tokens than min tokens, and EOS ids)."""
    return (t.n_out < t.min_tokens) & t.has_eos


def penalties_neutral(t: RowTable) -> torch.Tensor:
    """[n] bool: the verify penalties change no logit: repetition 1, frequency 0, presence 0 and no
    reasoning-floor ban (a NaN parameter is not neutral)."""
    return (t.repetition == 1.0) & (t.frequency == 0.0) & (t.presence == 0.0) & ~t.floor_holds


def greedy_rows(t: RowTable, sched: SchedCtx, verify_ctx: LogitsContext) -> torch.Tensor:
    """[n] bool: the rows the batched argmax may serve (B5): the boot-argmax lever and fast greedy
    on, temperature 0 or forced to 0, no grammar, no EOS hold, neutral penalties."""
    sampling = verify_ctx.sampling
    if not (sched.levers.mtp_boot_argmax and sampling.fast_greedy_grammar):
        return torch.zeros_like(t.has_grammar)
    zero_temp = torch.ones_like(t.has_grammar) if sampling.force_temp_zero else t.temperature == 0.0
    return zero_temp & ~t.has_grammar & ~eos_held(t) & penalties_neutral(t)
