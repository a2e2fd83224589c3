"""The fully batched step's static-shape passes (`batched.vector.static_passes`, `batched.vector.passes`):
buckets, the padded decode and propose against `BatchedMtpModel`'s (bit for bit in exact numerics,
every buffer compared, so a padding row's stray write fails), and on a GPU the graph replays against
the same passes run eagerly."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from batched.batched_model import BatchedMtpModel
from batched.vector.model import VectorMtpModel
from batched.vector.static_passes import PassCache, StaticPass, padded, row_bucket, span_bucket
from reference.errors import ModelError, format_chain
from reference.model.kernels import bits_equal
from tests.test_batched_model_equiv import Mix, mixes


@given(st.integers(1, 4096))
def test_row_bucket_covers_n_on_few_shapes(n: int) -> None:
    r = row_bucket(n)
    assert n <= r < n + (8 if n <= 64 else 32)
    assert r % (8 if n <= 64 else 32) == 0


@given(st.integers(1, 10_000), st.integers(1, 10_000))
def test_span_bucket_covers_the_span_within_a_quarter(blocks: int, cap: int) -> None:
    b = span_bucket(blocks, cap)
    assert blocks <= b <= max(blocks, cap)
    assert b <= blocks + blocks // 4
    top = b >> max(0, b.bit_length() - 3)
    assert b == top << max(0, b.bit_length() - 3) or b == max(blocks, cap)  # m * 2**e, m in 4..7; or the cap


def test_padded_repeats_the_first_entry() -> None:
    assert padded([3, 1], 5) == [3, 1, 3, 3, 3]
    assert padded([[7]], 2) == [[7], [7]]


def test_static_pass_refuses_inputs_of_another_size() -> None:
    cache = PassCache(torch.device("cpu"))
    p = cache.get(("k",), [2, 3])
    p.load([[1, 2], [3, 4, 5]])
    assert p.ints.tolist() == [1, 2, 3, 4, 5] and [v.tolist() for v in p.views] == [[1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="4 integers for a buffer of 5"):
        p.load([[1], [2, 3, 4]])
    assert isinstance(p, StaticPass) and not cache.graphs and cache.captures == 0


def _pair(mix: Mix, graph_after: int | None = None) -> tuple[BatchedMtpModel, VectorMtpModel]:
    ref = mix.model.clone()
    vec = VectorMtpModel.from_model(mix.model.clone(), graph_after=graph_after)
    ref.poison_scratch()
    vec.poison_scratch()
    return ref, vec


@given(mixes())
def test_padded_decode_equals_decode_batch(mix: Mix) -> None:
    """Logits, hidden rows, every cache and SSM state, and every scratch row past n, bit for bit."""
    ref, vec = _pair(mix)
    ref_seqs, vec_seqs = copy.deepcopy(mix.seqs), copy.deepcopy(mix.seqs)
    want = ref.decode_batch(mix.tokens, ref_seqs)
    got = vec.decode_batch(mix.tokens, vec_seqs)
    assert tuple(got.shape) == tuple(want.shape)
    assert bits_equal(got, want)
    assert vec_seqs == ref_seqs
    assert vec.diff_state(ref) == []


@given(mixes(), st.data())
def test_padded_propose_equals_batched_propose(mix: Mix, data: st.DataObject) -> None:
    """After one decode_batch and the stash, a group proposes k drafts on both models: drafts,
    confidences, hidden rows, the drafter cache and every other buffer, bit for bit."""
    mix.model.decode_batch(mix.tokens, mix.seqs)
    mix.model.stash_verify_hidden_rows(list(range(len(mix.seqs))))
    n = len(mix.seqs)
    ref, vec = mix.model.clone(), VectorMtpModel.from_model(mix.model.clone(), graph_after=None)
    group = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True), label="stash rows")
    k = data.draw(st.integers(1, ref.cfg.max_batched_drafts), label="k")
    members = [mix.seqs[j] for j in group]
    tokens = [data.draw(st.integers(0, ref.cfg.vocab_size - 1)) for _ in group]
    args = (tokens, [s.seq_len for s in members], group, k)
    conf_ref: list[list[float]] = []
    conf_vec: list[list[float]] = [[0.5]]
    want = ref.run_mtp_propose_batched(*args, copy.deepcopy(members), conf_out=conf_ref)
    got = vec.run_mtp_propose_batched(*args, copy.deepcopy(members), conf_out=conf_vec)
    assert got == want
    assert conf_vec == conf_ref
    assert vec.diff_state(ref) == []


@given(mixes(max_n=6))
def test_padded_propose_refuses_a_member_whose_stash_row_is_not_finite(mix: Mix) -> None:
    """The member named is a real one (padding repeats member 0), and nothing is written."""
    n = len(mix.seqs)
    vec = VectorMtpModel.from_model(mix.model.clone(), graph_after=None)
    vec.decode_batch(mix.tokens, mix.seqs)
    vec.stash_verify_hidden_rows(list(range(n)))
    bad = n - 1
    assert vec.stash is not None
    vec.stash[bad, 0] = float("inf")
    before = vec.clone()
    with pytest.raises(ModelError) as err:
        vec.run_mtp_propose_batched(mix.tokens, [s.seq_len for s in mix.seqs], list(range(n)), 2, mix.seqs)
    assert f"member {bad} (stash row {bad}): drafter input is not finite" in format_chain(err.value)
    assert vec.diff_state(before) == []


# -- GPU: graph replays against eager runs of the same padded passes ---------------------------------


def _on_cuda(mix: Mix, numerics: str) -> Mix:
    """`mix` with its model (caches included) on the GPU, in `numerics`."""
    from dataclasses import replace

    cfg = replace(mix.model.cfg, device="cuda", numerics=numerics)
    model = BatchedMtpModel(cfg)
    model.copy_state_from(mix.model)
    return Mix(model, mix.seqs, mix.tokens)


@pytest.mark.gpu
@pytest.mark.parametrize("numerics", ["fast", "exact"])
@given(mix=mixes())
def test_graph_replays_equal_eager_passes(numerics: str, mix: Mix) -> None:
    """Decode and propose three times on one graph model (the world copied back in between): the
    first call runs eagerly, the second captures and replays, the third replays. Logits, drafts,
    confidences, the batched argmax of the decode's logits (asked for after the propose) and every
    buffer equal one eager run's, bit for bit, and a replay leaves the logits an earlier call
    returned alone."""
    mix = _on_cuda(mix, numerics)
    n = len(mix.seqs)
    eager = VectorMtpModel.from_model(mix.model.clone(), graph_after=None)
    graphed = VectorMtpModel.from_model(mix.model.clone(), graph_after=1)
    pristine = mix.model.clone()

    def step(model: VectorMtpModel) -> tuple[torch.Tensor, list[list[int]] | None, list[list[float]], list[int]]:
        seqs = copy.deepcopy(mix.seqs)
        logits = model.decode_batch(mix.tokens, seqs)
        model.stash_verify_hidden_rows(list(range(n)))
        conf: list[list[float]] = []
        positions = [s.seq_len for s in seqs]
        drafts = model.run_mtp_propose_batched(mix.tokens, positions, list(range(n)), 3, seqs, conf_out=conf)
        return logits, drafts, conf, model.argmax_batch(logits, n)  # the decode's verdicts, after later passes

    want = step(eager)
    runs = []
    for _ in range(3):
        graphed.copy_state_from(pristine)
        runs.append(step(graphed))
        if len(runs) == 2:
            kept = runs[1][0].clone()
    cache = graphed.pass_cache()
    assert cache.captures == 2 and cache.replays == 4
    assert bits_equal(runs[1][0], kept), "a replay overwrote logits an earlier call returned"
    for got in runs:
        assert bits_equal(got[0], want[0])
        assert got[1:] == want[1:]
    assert graphed.diff_state(eager) == []


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@given(sections=st.lists(st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=40), min_size=1, max_size=4))
def test_a_pass_loads_its_sections_in_order(device: str, sections: list[list[int]]) -> None:
    """The integer inputs land in the pass's buffer section by section (on CUDA through a pinned
    buffer, copied without a sync); a second load, which reuses the pinned buffer once the first copy
    has landed, replaces them."""
    p = PassCache(torch.device(device)).get(("load",), [len(s) for s in sections])
    for shift in (0, 1):
        want = [[v + shift for v in s] for s in sections]
        p.load(want)
        assert [v.tolist() for v in p.views] == want
