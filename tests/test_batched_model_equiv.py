"""In exact numerics every batched operation is bit-equal to the per-sequence operations, row by row:
logits, hidden rows, argmax tokens, stash contents, drafts, confidences, and every cache afterwards."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, replace

import torch
from hypothesis import given
from hypothesis import strategies as st

from batched.batched_model import BatchedMtpModel
from reference.model.config import ModelConfig
from reference.model.kernels import bits_equal
from reference.model.paged_kv import BlockAllocator
from reference.state import SequenceState

SLOTS = 24


@functools.cache
def base_model(dtype: str) -> BatchedMtpModel:
    cfg = ModelConfig(
        dtype=dtype, max_seq_len=64, num_blocks=160, num_draft_blocks=192, num_slots=SLOTS,
        num_ssm_slots=SLOTS, stash_capacity=32, mtp_propose_batch_max=8,
        max_batched_drafts=6, propose_meta_stride=8,
    )  # fmt: skip
    return BatchedMtpModel(cfg)


@dataclass(slots=True)
class Mix:
    model: BatchedMtpModel
    seqs: list[SequenceState]  # sorted by SSM slot, else slot: decode_batch's row order
    tokens: list[int]


@st.composite
def mixes(draw: st.DrawFn, max_n: int = 12) -> Mix:
    """A world with random caches and 1..max_n sequences of random lengths, some without an SSM slot."""
    model = base_model(draw(st.sampled_from(["float64", "float32", "bfloat16"]))).clone()
    cfg = model.cfg
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    model.randomize_caches(gen)
    main = BlockAllocator(cfg.num_blocks, cfg.block_size, gen)
    draft = BlockAllocator(cfg.num_draft_blocks, cfg.block_size, gen)
    n = draw(st.integers(1, max_n))
    perm = draw(st.permutations(range(SLOTS)))
    keys, spare = perm[:n], iter(perm[n:])
    seqs = []
    for key in keys:
        length = draw(st.integers(0, cfg.max_seq_len - 1))
        has_ssm = draw(st.booleans())
        slot_idx = next(spare) if has_ssm else key
        seqs.append(main.sequence(draft, slot_idx, key if has_ssm else None, length, 1, 1 + cfg.max_drafts))
    seqs.sort(key=lambda s: s.ssm_slot if s.ssm_slot is not None else s.slot_idx)
    tokens = [draw(st.integers(0, cfg.vocab_size - 1)) for _ in seqs]
    return Mix(model, seqs, tokens)


def _per_sequence_decodes(model: BatchedMtpModel, mix: Mix, seqs: list[SequenceState]) -> tuple[torch.Tensor, ...]:
    """Reference: one decode per row in row order; returns logits [n, V] and each decode's hidden row."""
    logits, hidden = [], []
    for t, s in zip(mix.tokens, seqs, strict=True):
        logits.append(model.decode(t, s))
        hidden.append(model.hidden_states[0].clone())
    return torch.stack(logits), torch.stack(hidden)


@given(mixes())
def test_decode_batch_equals_per_sequence_decodes(mix: Mix) -> None:
    ref, impl = mix.model.clone(), mix.model.clone()
    ref.poison_scratch()
    impl.poison_scratch()
    ref_seqs, impl_seqs = copy.deepcopy(mix.seqs), copy.deepcopy(mix.seqs)
    ref_logits, ref_hidden = _per_sequence_decodes(ref, mix, ref_seqs)
    logits = impl.decode_batch(mix.tokens, impl_seqs)
    n = len(mix.seqs)
    assert bits_equal(logits, ref_logits)
    assert bits_equal(impl.hidden_states[:n], ref_hidden)
    assert torch.isnan(impl.hidden_states[n:]).all()
    assert impl_seqs == ref_seqs
    assert [d for d in impl.diff_state(ref) if d != "hidden_states"] == []
    assert impl.argmax_batch(logits, n) == [ref.argmax_on_device(row) for row in ref_logits]


@given(mixes(), st.data())
def test_batched_propose_equals_per_sequence_proposes(mix: Mix, data: st.DataObject) -> None:
    """After a decode_batch, stash every row; a group of rows (any order of stash rows) proposes k
    drafts batched on one side and one by one from the same stash rows on the other."""
    mix.model.decode_batch(mix.tokens, mix.seqs)
    mix.model.poison_scratch()
    n = len(mix.seqs)
    mix.model.hidden_states[:n].normal_(generator=torch.Generator().manual_seed(n))
    ref, impl = mix.model.clone(), mix.model.clone()
    impl.stash_verify_hidden_rows(list(range(n)))
    ref.stash[:n] = ref.hidden_states[:n]  # type: ignore[index]
    group = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True), label="stash rows")
    k = data.draw(st.integers(1, ref.cfg.max_batched_drafts), label="k")
    members = [mix.seqs[j] for j in group]
    tokens = [data.draw(st.integers(0, ref.cfg.vocab_size - 1)) for _ in group]
    positions = [s.seq_len for s in members]
    ref_seqs, impl_seqs = copy.deepcopy(members), copy.deepcopy(members)

    ref_drafts, ref_conf, ref_hidden = [], [], []
    for j, t, p, s in zip(group, tokens, positions, ref_seqs, strict=True):
        ref.save_hidden_for_mtp_from_stash(j)
        conf: list[float] = []
        ref_drafts.append(ref.run_mtp_propose_multi(t, p, k, s, conf_out=conf))
        ref_conf.append(conf)
        ref_hidden.append(ref.hidden_states[0].clone())
    conf_out: list[list[float]] = [[0.0]]
    drafts = impl.run_mtp_propose_batched(tokens, positions, group, k, impl_seqs, conf_out=conf_out)

    assert drafts == ref_drafts
    assert conf_out == ref_conf
    assert bits_equal(impl.hidden_states[: len(group)], torch.stack(ref_hidden))
    assert impl_seqs == ref_seqs
    assert [d for d in impl.diff_state(ref) if d not in ("hidden_states", "mtp_hidden_in")] == []
    for a, b in zip(impl_seqs, ref_seqs, strict=True):
        sa, sb = impl.snapshot(a), ref.snapshot(b)
        assert all(bits_equal(sa[key], sb[key]) if key != "ckpt_pos" else sa[key] == sb[key] for key in sa)


@given(mixes(max_n=6))
def test_propose_without_confidences_gives_the_same_drafts(mix: Mix) -> None:
    mix.model.decode_batch(mix.tokens, mix.seqs)
    n = len(mix.seqs)
    with_conf, without = mix.model.clone(), mix.model.clone()
    args = ([5] * n, [s.seq_len for s in mix.seqs], list(range(n)), 3)
    for m in (with_conf, without):
        m.stash_verify_hidden_rows(list(range(n)))
    conf: list[list[float]] = []
    a = with_conf.run_mtp_propose_batched(*args, copy.deepcopy(mix.seqs), conf_out=conf)
    b = without.run_mtp_propose_batched(*args, copy.deepcopy(mix.seqs))
    assert a == b and len(conf) == n and all(len(c) == 3 for c in conf)
    assert with_conf.diff_state(without) == []


def test_above_the_batched_envelope_returns_none_and_changes_nothing() -> None:
    model = base_model("float64").clone()
    seq = SequenceState(0, 0, 4, [1], [2])
    before, conf = model.clone(), [[1.0]]
    assert model.run_mtp_propose_batched([1], [4], [0], model.cfg.max_batched_drafts + 1, [seq], conf_out=conf) is None
    assert model.diff_state(before) == [] and conf == [[1.0]]


def test_zero_drafts_gives_empty_lists() -> None:
    model = base_model("float64").clone()
    seqs = [SequenceState(0, 0, 4, [1], [2]), SequenceState(1, 1, 4, [3], [4])]
    conf: list[list[float]] = [[1.0]]
    assert model.run_mtp_propose_batched([1, 2], [4, 4], [0, 1], 0, seqs, conf_out=conf) == [[], []]
    assert conf == [[], []]


def test_envelope_queries() -> None:
    model = base_model("float64")
    assert model.mtp_propose_batch_max() == 8
    assert model.propose_meta_stride() == 8
    assert model.can_batch_verify([2] * 32) and model.can_batch_verify([1, 8])
    assert not model.can_batch_verify([2] * 33)
    assert not model.can_batch_verify([0, 2]) and not model.can_batch_verify([9])
    cfg = model.cfg
    for change in ({"stash_capacity": 0}, {"ep": True}, {"hss": True}):
        other = BatchedMtpModel(replace(cfg, **change), model.weights)
        assert not other.can_batch_verify([2, 2]), change
