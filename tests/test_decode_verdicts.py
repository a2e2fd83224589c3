"""The batched argmax the padded decode computes in its own pass (`VectorMtpModel`): `argmax_batch` on
the logits that decode returned takes those verdicts only while the logits are unchanged, and they
are what a fresh pass over the same logits gives, refusals included."""

from __future__ import annotations

import copy
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batched.batched_model import BatchedMtpModel
from batched.vector.model import VectorMtpModel
from reference.errors import ModelError, format_chain
from tests.test_batched_model_equiv import Mix, mixes


def _outcome(fn: object) -> tuple[str, object]:
    try:
        return "ok", fn()  # type: ignore[operator]
    except ModelError as e:
        return "refused", format_chain(e)


@given(mixes(), st.data())
def test_decode_verdicts_equal_a_fresh_pass(mix: Mix, data: st.DataObject) -> None:
    """Tokens, or the refusal naming the first bad row: a row's first cached key made NaN or +inf
    (drawn) poisons its logits through attention."""
    vec = VectorMtpModel.from_model(mix.model.clone(), graph_after=None)
    seqs = copy.deepcopy(mix.seqs)
    n = len(seqs)
    poison = data.draw(st.sampled_from([None, float("nan"), float("inf")]), label="poison")
    if poison is not None:
        row = data.draw(st.integers(0, n - 1), label="poisoned row")
        vec.kv.k[0, seqs[row].block_table[0], 0] = poison
    logits = vec.decode_batch(mix.tokens, seqs)
    m = data.draw(st.integers(1, n), label="rows asked for")
    fresh = _outcome(lambda: BatchedMtpModel.argmax_batch(vec, logits.clone(), m))
    with patch.object(BatchedMtpModel, "_argmax_verdicts", side_effect=AssertionError("a fresh pass ran")):
        got = _outcome(lambda: vec.argmax_batch(logits, m))
    assert got == fresh


@pytest.mark.parametrize("edit", ["raise", "nan"])
@given(mix=mixes())
def test_argmax_batch_sees_in_place_edits_of_decode_logits(edit: str, mix: Mix) -> None:
    """An edit through a view after the decode (as a sampler that masks in place would make) is what
    argmax_batch judges, not the verdicts computed before it."""
    vec = VectorMtpModel.from_model(mix.model.clone(), graph_after=None)
    logits = vec.decode_batch(mix.tokens, copy.deepcopy(mix.seqs))
    n = logits.shape[0]
    before = vec.argmax_batch(logits, n)
    row = logits[n - 1 :]  # a view: the edit bumps the version counter the logits share
    target = (before[n - 1] + 1) % logits.shape[1]
    if edit == "raise":
        row[0, target] = row[0].max() + 1
        assert vec.argmax_batch(logits, n)[n - 1] == target
    else:
        row[0, target] = float("nan")
        with pytest.raises(ModelError) as err:
            vec.argmax_batch(logits, n)
        assert f"row {n - 1} has NaN logits" in format_chain(err.value)
