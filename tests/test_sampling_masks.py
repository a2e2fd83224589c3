"""The EOS hold (min tokens) and the reasoning floor, from the sequence's state to the token sampled."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from reference.decisions import argmax_lowest
from reference.eos_hold import Hold, eos_mask_ids, presample_hold_for
from reference.penalties import PositionKind, penalty_history_scope, penalty_params_for
from reference.sampling import sample_token_with_grammar
from reference.sched_ctx import SamplingConfig
from reference.state import ActiveSeq, SequenceState

VOCAB = 12
EOS, EOS2, THINK_END, TOOL_END = 0, 5, 2, 1


class ArgmaxModel:
    def vocab_size(self) -> int:
        return VOCAB

    def argmax_on_device(self, row: torch.Tensor) -> int:
        return argmax_lowest(row)


def seq(**kwargs: object) -> ActiveSeq:
    fields: dict[str, object] = {
        "seq_id": 3,
        "seq": SequenceState(0, None, 4),
        "last_token": 7,
        "sampling_seed": 11,
        "max_tokens": 100,
        "eos_ids": (EOS, EOS2),
    }
    fields.update(kwargs)
    return ActiveSeq(**fields)  # type: ignore[arg-type]


def sample_for(a: ActiveSeq, row: torch.Tensor, floor: int) -> int:
    """The reference step's sampling call for one sequence."""
    pen = penalty_params_for(a, PositionKind.VERIFY, floor)
    n_out = len(a.output_tokens)
    return sample_token_with_grammar(
        ArgmaxModel(),
        row,
        a.temperature,
        a.top_k,
        a.top_p,
        eos_mask_ids(a, n_out),
        a.grammar_state,
        pen,
        penalty_history_scope(a.output_tokens, a.tool_call_end_token),
        SamplingConfig(),
        seq_id=a.seq_id,
        seed=a.sampling_seed,
        position=n_out,
    )


def eos_favoured_row() -> torch.Tensor:
    row = torch.zeros(VOCAB, dtype=torch.float64)
    row[EOS], row[EOS2], row[THINK_END] = 9.0, 8.0, 7.0
    return row


@given(min_tokens=st.integers(0, 6), n_out=st.integers(0, 8), has_eos=st.booleans())
def test_hold_is_min_tokens(min_tokens: int, n_out: int, has_eos: bool) -> None:
    a = seq(min_tokens=min_tokens, eos_ids=(EOS, EOS2) if has_eos else ())
    held = n_out < min_tokens and has_eos
    assert presample_hold_for(a, n_out) == Hold(min_tokens=held)
    assert presample_hold_for(a, n_out).any() is held
    assert eos_mask_ids(a, n_out) == ((EOS, EOS2) if held else ())


@given(
    min_tokens=st.integers(0, 4),
    n_out=st.integers(0, 6),
    temperature=st.sampled_from([0.0, 1.0, 5.0]),
    seed=st.integers(0, 2**32),
)
def test_eos_is_never_sampled_while_held(min_tokens: int, n_out: int, temperature: float, seed: int) -> None:
    a = seq(min_tokens=min_tokens, output_tokens=[8] * n_out, temperature=temperature, sampling_seed=seed)
    tok = sample_for(a, eos_favoured_row(), floor=0)
    if n_out < min_tokens:
        assert tok not in (EOS, EOS2)
    elif temperature == 0.0:
        assert tok == EOS


@given(
    floor=st.integers(0, 6),
    n_out=st.integers(0, 8),
    reasoning=st.booleans(),
    ended=st.booleans(),
    temperature=st.sampled_from([0.0, 1.0, 5.0]),
    seed=st.integers(0, 2**32),
)
def test_reasoning_floor_bans_reasoning_end_and_eos(
    floor: int, n_out: int, reasoning: bool, ended: bool, temperature: float, seed: int
) -> None:
    out = [8] * n_out
    if ended and n_out:
        out[0] = THINK_END
    a = seq(
        output_tokens=out,
        reasoning_end_token=THINK_END if reasoning else None,
        temperature=temperature,
        sampling_seed=seed,
    )
    holds = reasoning and THINK_END not in out and n_out < floor
    for kind in PositionKind:
        assert penalty_params_for(a, kind, floor).banned_ids == ((EOS, THINK_END, EOS2) if holds else ())
    tok = sample_for(a, eos_favoured_row(), floor)
    if holds:
        assert tok not in (EOS, EOS2, THINK_END)
    elif temperature == 0.0:
        assert tok == EOS


def test_tool_call_end_scopes_the_history_sampling_sees() -> None:
    row = torch.zeros(VOCAB, dtype=torch.float64)
    row[8], row[9] = 1.0, 0.9
    # Token 8 was emitted before the tool call ended: its frequency penalty no longer applies.
    a = seq(output_tokens=[8, 8, TOOL_END, 9], tool_call_end_token=TOOL_END, frequency_penalty=0.3)
    assert sample_for(a, row, 0) == 8
    # Without the tool-call scope the whole output is history: 8 drops to 0.4, 9 to 0.6.
    a.tool_call_end_token = None
    assert sample_for(a, row, 0) == 9
