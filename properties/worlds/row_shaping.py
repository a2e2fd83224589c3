"""The row-aware fields of a world's sequences (`SeqSpec.echo`, `eos_top`, `near_tie`), written from
the logits each sequence's last token decodes to on a throw-away copy of the model.

Random histories, EOS ids and sampling seeds almost never sit where a decision turns: a history
token near the top of the row (so penalties move the token), an EOS id the row wants (so a hold
moves it), two noisy candidates within a hair of each other or a top-p right on a cumulative
boundary (so a small error in temperature, mass or penalties moves it). These fields put them
there. Only sampling-side state changes: the world's caches and logits are untouched, and a row
the model refuses to decode keeps what was drawn.

A hair is as fine as the numerics mode can tell from a tie. In exact numerics it is the finest there
is (the closest of 64 seeds, a top-p on the boundary itself, a penalty bisected to the last bit). In
fast numerics the replay oracle forces any decision whose margin rounding could move (up to twice the
rows' tolerance, `properties.tolerance.ROUNDING`, stretched by the penalties and divided by the
temperature): there a hair is `HAIR_ROOM` times that margin, the closest a decision can be and still
be one the oracle holds, not one it forgives.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from properties.tolerance import ROUNDING
from properties.worlds.specs import SeqSpec, StepSpec
from reference.eos_hold import eos_mask_ids
from reference.errors import ModelError
from reference.model.model import TinyMtpModel
from reference.penalties import PositionKind, penalty_history_scope, penalty_params_for
from reference.sampling import cut_scores, keyed_bits, noise_bits, noise_keys, processed_row
from reference.state import ActiveSeq

FIRST_PLAIN_TOKEN = 3  # ids below are specials (EOS, tool-call end, reasoning end)
SEED_CANDIDATES = 64  # sampling seeds a "noise" row chooses from
NOISE_CANDIDATES = 256  # the best-scored tokens whose noise a seed is judged on
SEED_STRIDE = 1_000_003
TOP_P_RANKS = 8  # a "top_p" row's cut sits after one of its first ranks
HAIR_ROOM = 1.25  # a fast-numerics hair over the largest margin rounding can move


def hair_room(model: TinyMtpModel, logits: torch.Tensor) -> float:
    """In logits, the largest margin rounding can move on this row (twice the row's tolerance) times
    `HAIR_ROOM`, before penalties and temperature; 0 in exact numerics."""
    cfg = model.cfg
    if cfg.exact:
        return 0.0
    finite = logits[torch.isfinite(logits)]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    return HAIR_ROOM * 2 * ROUNDING[cfg.dtype] * scale


def stretch(repetition: float) -> float:
    """How much a repetition penalty can stretch a logit difference (`properties.sides.forcing`)."""
    return max(1.0, repetition, 1.0 / repetition) if repetition > 0 else 1.0


def shape_rows(model: TinyMtpModel, specs: tuple[SeqSpec, ...], active: list[ActiveSeq], step: StepSpec) -> None:
    """Apply every sequence's `echo`, then `eos_top`, then `near_tie` (each reads what the one
    before wrote: the history, then the EOS ids). A "penalty" near tie applies to any row with a
    penalty; the others to sampled rows."""
    wanted = [(s, a) for s, a in zip(specs, active, strict=True) if s.echo or s.eos_top or s.near_tie]
    if not wanted:
        return
    probe = model.clone()
    for s, a in wanted:
        seq = replace(a.seq, block_table=list(a.seq.block_table), draft_block_table=list(a.seq.draft_block_table))
        try:
            logits = probe.decode(a.last_token, seq).double()
        except ModelError:
            continue  # a bad row (the bad-input properties build them) keeps what was drawn
        if s.echo and s.grammar is None:
            echo(a, s.echo, logits)
        if s.eos_top:
            top = int(torch.argmax(logits))
            a.eos_ids = tuple(dict.fromkeys((*a.eos_ids, top)))
        room = hair_room(model, logits)
        if s.near_tie == "penalty":
            penalty_tie(a, logits, step.min_reasoning_floor, room)
        elif s.near_tie and a.temperature > 0.0:
            near_tie(a, s.near_tie, s.token_seed, logits, step.min_reasoning_floor, room)


def echo(a: ActiveSeq, positions: tuple[int, ...], logits: torch.Tensor) -> None:
    """Write the row's top-ranked plain tokens (best first) into the history `positions` (those
    before the last and not on the tool-call end)."""
    end = a.output_tokens.index(a.tool_call_end_token) if a.tool_call_end_token in a.output_tokens else -1
    at = [p for p in positions if p < len(a.output_tokens) - 1 and p != end]
    if not at:
        return
    ranked = logits.float()
    ranked[:FIRST_PLAIN_TOKEN] = -math.inf
    for p, tok in zip(at, ranked.topk(len(at)).indices.tolist(), strict=True):
        a.output_tokens[p] = tok


def near_tie(a: ActiveSeq, kind: str, token_seed: int, logits: torch.Tensor, floor: int, room: float = 0.0) -> None:
    """Make `a`'s sampled decision turn on a hair (`room` in logits, `hair_room`): "noise" takes the
    sampling seed whose two best noisy scores are closest, at least the hair apart; "top_p" sets
    top-p a hair inside the row's cumulative probability at a rank the token seed picks (on it, in
    exact numerics: the reference keeps exactly the ranks up to it). Nothing changes where the row
    has fewer than two candidates, or no seed or rank leaves room for the hair."""
    pen = penalty_params_for(a, PositionKind.VERIFY, floor)
    history = penalty_history_scope(a.output_tokens, a.tool_call_end_token)
    try:
        row = processed_row(logits, eos_mask_ids(a, len(a.output_tokens)), a.grammar_state, pen, history)
    except ModelError:
        return
    position = len(a.output_tokens)
    hair = room * stretch(a.repetition_penalty) / a.temperature  # in temperature-scaled scores
    if kind == "top_p":
        csum = cumulative_mass(row, a.temperature, a.top_k)
        if csum.numel() >= 2:
            rank = token_seed % min(csum.numel() - 1, TOP_P_RANKS)
            below = float(csum[rank - 1]) if rank else 0.0
            mass = math.expm1(min(hair, 700.0))  # the most a shift of `hair` moves a probability, relatively
            p = float(csum[rank]) - mass
            if 0.0 < p < 1.0 and (mass == 0.0 or p - below > mass):
                a.top_p = p
        return
    if kind != "noise":
        raise ValueError(f"SeqSpec.near_tie={kind!r}: expected '', 'noise' or 'top_p'")
    scores = cut_scores(row, a.temperature, a.top_k, a.top_p, a.seq_id, position)
    finite = int(torch.isfinite(scores).sum())
    if finite < 2:
        return
    best = scores.topk(min(finite, NOISE_CANDIDATES))
    seeds = [a.sampling_seed + i * SEED_STRIDE for i in range(SEED_CANDIDATES)]
    keys = torch.tensor([noise_keys(seed, position) for seed in seeds], dtype=torch.int64, device=best.indices.device)
    keys = keys.T[:, :, None]
    noisy = best.values + gumbel_of(keyed_bits(tuple(keys), best.indices))  # [seeds, candidates]
    top2 = noisy.topk(2, dim=-1).values
    gaps = top2[:, 0] - top2[:, 1]
    gaps = torch.where(gaps >= hair, gaps, math.inf)
    if bool(torch.isfinite(gaps).any()):
        a.sampling_seed = seeds[int(torch.argmin(gaps))]


# The penalty a "penalty" row is set on, in order of preference, and its neutral value.
PENALTIES = (("frequency_penalty", 0.0), ("presence_penalty", 0.0), ("repetition_penalty", 1.0))
BISECTIONS = 80


def penalty_tie(a: ActiveSeq, logits: torch.Tensor, floor: int, room: float = 0.0) -> None:
    """Set the first active penalty of `a` (frequency, else presence, else repetition) to the value
    at which its best penalised history token leads the best other token by a hair (`room` in logits,
    `hair_room`, stretched by the repetition penalty): any error in that penalty turns the row's
    greedy token. Nothing changes where no penalty is active or no history token leads the row
    without that penalty by more than the hair."""
    name = next((n for n, neutral in PENALTIES if getattr(a, n) != neutral), None)
    if name is None:
        return
    neutral = dict(PENALTIES)[name]
    history = penalty_history_scope(a.output_tokens, a.tool_call_end_token)
    seen = torch.zeros(logits.shape[0], dtype=torch.bool)
    seen[list(set(history))] = True
    eos = eos_mask_ids(a, len(a.output_tokens))

    def lead(x: float) -> float:
        """The best history token's processed score over the best other token's, the penalty at x,
        less the hair at x."""
        setattr(a, name, x)
        pen = penalty_params_for(a, PositionKind.VERIFY, floor)
        try:
            row = processed_row(logits, eos, a.grammar_state, pen, history)
        except ModelError:
            return -math.inf
        return float(row[seen].max() - row[~seen].max()) - room * stretch(a.repetition_penalty)

    drawn = getattr(a, name)
    if not seen.any() or seen.all() or not lead(neutral) > 0.0:
        setattr(a, name, drawn)
        return
    lo, hi = neutral, neutral + 1.0
    while lead(hi) > 0.0 and hi < 1e6:  # the lead falls as the penalty grows
        lo, hi = hi, neutral + 2 * (hi - neutral)
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if lead(mid) > 0.0 else (lo, mid)
    setattr(a, name, lo if lead(lo) > 0.0 else drawn)


def cumulative_mass(row: torch.Tensor, temperature: float, top_k: int) -> torch.Tensor:
    """The cumulative probability of the row's candidates in rank order, over what top-k keeps, as
    `reference.sampling.cut_scores` computes it for its top-p cut."""
    order = torch.sort(row, descending=True, stable=True).indices
    keep = int(torch.isfinite(row).sum())
    if 0 < top_k < keep:
        keep = top_k
    scores = (row - row.max()) / temperature
    return torch.cumsum(torch.softmax(scores[order[:keep]], dim=0), dim=0)


def gumbel(seed: int, position: int, ids: torch.Tensor) -> torch.Tensor:
    """The reference's Gumbel noise of token `ids` at (seed, position) (`reference.sampling`)."""
    return gumbel_of(noise_bits(seed, position, ids))


def gumbel_of(bits: torch.Tensor) -> torch.Tensor:
    """Gumbel noise from the reference's noise bits, as `reference.sampling.gumbel_noise` makes it."""
    u = (bits * 2 + 1).to(torch.float64) * 2.0**-53
    return -torch.log(-torch.log(u))


def gap(noisy: torch.Tensor) -> float:
    """The best noisy score's lead over the second."""
    top2 = noisy.topk(2).values
    return float(top2[0] - top2[1])
