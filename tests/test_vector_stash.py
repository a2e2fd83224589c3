"""`VectorMtpModel.stash_verify_hidden_rows`: its one-slice path for rows 0..n-1 and the general path
for everything else accept, refuse and write exactly as `BatchedMtpModel`'s."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from batched.batched_model import BatchedMtpModel
from batched.vector.model import VectorMtpModel
from reference.errors import ModelError, format_chain
from tests.test_batched_model_equiv import Mix, mixes


def _stash(model: BatchedMtpModel, rows: list[object], rank: object) -> str | None:
    try:
        model.stash_verify_hidden_rows(rows, rank)  # type: ignore[arg-type]
    except ModelError as e:
        return format_chain(e)
    return None


@given(mixes(), st.data(), st.sampled_from([0, 0, 0, 1, False, 0.0]))
def test_vector_stash_equals_batched_stash(mix: Mix, data: st.DataObject, rank: object) -> None:
    """The same refusal text or none, and every buffer bit for bit: the step's rows 0..n-1 (n up to
    past the capacity) or any list of rows."""
    cap = mix.model.cfg.stash_capacity
    rows = data.draw(
        st.one_of(
            st.integers(0, cap + 2).map(lambda n: list(range(n))),
            st.lists(st.one_of(st.integers(-2, cap + 2), st.booleans(), st.just(1.0)), max_size=cap + 2),
        ),
        label="rows",
    )
    mix.model.decode_batch(mix.tokens, mix.seqs)
    ref = mix.model.clone()
    vec = VectorMtpModel.from_model(mix.model.clone(), graph_after=None)
    assert _stash(vec, rows, rank) == _stash(ref, rows, rank)
    assert vec.diff_state(ref) == []
