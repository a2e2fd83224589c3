"""The row-aware fields of a world's sequences put decisions where they turn: an EOS the row wants, a
sampling seed whose two best noisy scores are closest, a top-p exactly on a cumulative boundary; and
tied weights give exact ties in every row."""

from __future__ import annotations

import torch

from properties.worlds.row_shaping import cumulative_mass, gap, gumbel
from properties.worlds.specs import ModelSpec, SeqSpec, WorldSpec
from properties.worlds.world import base_model, build_world
from reference.penalties import PenaltyParams
from reference.sampling import cut_scores, processed_row


def world(**seq: object):  # type: ignore[no-untyped-def]
    """The sequence `seq` describes, shaped; the same unshaped (no `eos_top`, `near_tie`); its logits."""
    spec = WorldSpec(seqs=(SeqSpec(slot_idx=0, token_seed=5, **seq),), bootstrap=(0,))  # type: ignore[arg-type]
    unshaped = {k: v for k, v in seq.items() if k not in ("eos_top", "near_tie")}
    plain = build_world(WorldSpec(seqs=(SeqSpec(slot_idx=0, token_seed=5, **unshaped),), bootstrap=(0,)))  # type: ignore[arg-type]
    a = plain.active[0]
    logits = plain.model.clone().decode(a.last_token, a.seq).double()
    return build_world(spec).active[0], a, logits


def test_eos_top_makes_the_rows_own_top_token_an_eos_id() -> None:
    shaped, plain, logits = world(eos_top=True)
    assert shaped.eos_ids == (*plain.eos_ids, int(logits.argmax()))


def test_near_tie_noise_takes_the_seed_with_the_smallest_lead() -> None:
    shaped, plain, logits = world(temperature=0.7, near_tie="noise")
    row = processed_row(logits, (), None, PenaltyParams(), [])
    scores = cut_scores(row, 0.7, 0, 1.0, 0, len(plain.output_tokens))
    ids = torch.arange(row.shape[0])
    lead = gap(scores + gumbel(shaped.sampling_seed, len(plain.output_tokens), ids))
    drawn = gap(scores + gumbel(plain.sampling_seed, len(plain.output_tokens), ids))
    assert shaped.sampling_seed != plain.sampling_seed and lead < drawn / 4


def test_near_tie_top_p_sits_exactly_on_a_cumulative_boundary() -> None:
    shaped, _, logits = world(temperature=1.3, top_k=40, near_tie="top_p")
    csum = cumulative_mass(processed_row(logits, (), None, PenaltyParams(), []), 1.3, 40)
    assert 0.0 < shaped.top_p < 1.0 and shaped.top_p in csum.tolist()


def test_tied_weights_tie_every_row_exactly() -> None:
    model = base_model(ModelSpec(tie_group=3, vocab_size=600)).clone()
    x = torch.randn(4, model.cfg.hidden, dtype=torch.float64)
    logits = model.head(x)
    assert torch.equal(logits[:, 0::3], logits[:, 1::3]) and torch.equal(logits[:, 0::3], logits[:, 2::3])


def test_a_greedy_row_is_left_as_drawn() -> None:
    shaped, plain, _ = world(near_tie="noise")
    assert shaped.sampling_seed == plain.sampling_seed and shaped.top_p == plain.top_p


def test_near_tie_penalty_sets_the_penalty_where_a_history_token_leads_by_a_hair() -> None:
    shaped, _, logits = world(n_out=6, frequency=0.5, echo=(0, 1), near_tie="penalty")
    history = list(shaped.output_tokens)
    seen = torch.zeros(logits.shape[0], dtype=torch.bool)
    seen[history] = True

    def lead(f: float) -> float:
        row = processed_row(logits, (), None, PenaltyParams(frequency=f), history)
        return float(row[seen].max() - row[~seen].max())

    f = shaped.frequency_penalty
    assert f != 0.5 and lead(f) > 0 and lead(f * 1.001) < 0 < lead(f * 0.999)
