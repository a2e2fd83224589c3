"""Benchmark worlds: a model sized by `BenchSettings` with seeded caches, and a realistic mix of n
draftless sequences for one bootstrap step.

The mix ("mixed"): every fourth row samples (temperature 0.8, top-k 50, top-p 0.95, repetition
penalty 1.1), the others are greedy with neutral penalties, so the batched argmax engages from n = 2;
"greedy" makes every row greedy. Every row has
an SSM slot (shuffled, so the batched step really sorts), a cache of `cache_min..cache_max` tokens
in scattered blocks, `history` output tokens, no grammar, speculation on. Caches hold exactly the
blocks the mix needs, so building and cloning a world stays cheap at n = 256.
"""

from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass

import torch

from batched.batched_model import BatchedMtpModel
from benchmarks.settings import BenchSettings
from reference.model.config import ModelConfig
from reference.model.weights import Weights, build_weights
from reference.sched_ctx import LogitsContext, SchedCtx
from reference.state import ActiveSeq, SequenceState
from reference.vocab import EOS_ID, FIRST_BYTE_ID, TOOL_CALL_END_ID

MAX_DRAFTS = 8
SAMPLED_EVERY = 4  # row i samples when i % SAMPLED_EVERY == SAMPLED_EVERY - 1

_weights: dict[tuple[object, ...], Weights] = {}


@dataclass(slots=True)
class BenchWorld:
    """Everything one bootstrap step reads and writes."""

    model: BatchedMtpModel
    active: list[ActiveSeq]
    sched: SchedCtx
    verify_ctx: LogitsContext
    idxs: list[int]
    ladder_nd: int

    def clone(self) -> BenchWorld:
        """An independent copy (caches, scratch, sequences, telemetry); weights are shared."""
        return BenchWorld(
            self.model.clone(),
            copy.deepcopy(self.active),
            copy.deepcopy(self.sched),
            copy.deepcopy(self.verify_ctx),
            list(self.idxs),
            self.ladder_nd,
        )

    def cache_lens(self) -> list[int]:
        """Tokens in each bootstrapping sequence's cache before the step."""
        return [self.active[i].seq.seq_len for i in self.idxs]


def sync(device: torch.device | str) -> None:
    """Wait for all work queued on `device` (a no-op on the CPU)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def model_config(s: BenchSettings, n: int, main_blocks: int, draft_blocks: int) -> ModelConfig:
    """The model for a mix of n sequences whose caches need the given block counts."""
    return ModelConfig(
        vocab_size=s.vocab_size,
        hidden=s.hidden,
        n_heads=s.n_heads,
        n_attn_layers=s.n_attn_layers,
        block_size=s.block_size,
        num_blocks=main_blocks,
        num_draft_blocks=draft_blocks,
        max_seq_len=s.max_seq_len,
        max_drafts=MAX_DRAFTS,
        num_slots=n,
        num_ssm_slots=n,
        max_batch_rows=max(256, n),
        stash_capacity=max(256, n),
        mtp_propose_batch_max=s.group_cap,
        max_batched_drafts=MAX_DRAFTS,
        dtype=s.dtype,
        numerics=s.numerics,
        device=s.device,
    )


def shared_weights(cfg: ModelConfig) -> Weights:
    """Seeded weights for `cfg`, built once and reused for every n (the last shape only is kept)."""
    key = (cfg.vocab_size, cfg.hidden, cfg.n_attn_layers, cfg.ssm_state, cfg.mlp_width, cfg.dtype, cfg.device)
    if key not in _weights:
        _weights.clear()
        _weights[key] = build_weights(cfg)
    return _weights[key]


def _scattered(count: int, rng: random.Random) -> list[int]:
    ids = list(range(count))
    rng.shuffle(ids)
    return ids


def _seq(i: int, s: BenchSettings, state: SequenceState, rng: random.Random) -> ActiveSeq:
    history = [rng.randrange(FIRST_BYTE_ID, s.vocab_size) for _ in range(s.history)]
    sampled = s.mix == "mixed" and i % SAMPLED_EVERY == SAMPLED_EVERY - 1
    return ActiveSeq(
        seq_id=i,
        seq=state,
        last_token=history[-1],
        sampling_seed=1009 * i + 7,
        max_tokens=s.history + 4096,
        eos_ids=(EOS_ID,),
        output_tokens=history,
        output_logprobs=[None] * len(history),
        temperature=0.8 if sampled else 0.0,
        top_k=50 if sampled else 0,
        top_p=0.95 if sampled else 1.0,
        repetition_penalty=1.1 if sampled else 1.0,
        tool_call_end_token=TOOL_CALL_END_ID,
    )


def build_bench_world(s: BenchSettings, n: int, seed: int = 0) -> BenchWorld:
    """The benchmark world of n sequences (all of them bootstrap), deterministic in `seed`."""
    rng = random.Random(seed)
    lens = [rng.randint(s.cache_min, s.cache_max) for _ in range(n)]
    main_need = [math.ceil((length + 1) / s.block_size) for length in lens]
    draft_need = [math.ceil((length + 1 + s.ladder_nd) / s.block_size) for length in lens]
    cfg = model_config(s, n, sum(main_need), sum(draft_need))
    model = BatchedMtpModel(cfg, shared_weights(cfg))
    gen = torch.Generator(device=cfg.device).manual_seed(seed)
    model.randomize_caches(gen)
    blocks, dblocks = _scattered(cfg.num_blocks, rng), _scattered(cfg.num_draft_blocks, rng)
    ssm_slots = _scattered(n, rng)
    active = []
    for i, length in enumerate(lens):
        table, blocks = blocks[: main_need[i]], blocks[main_need[i] :]
        dtable, dblocks = dblocks[: draft_need[i]], dblocks[draft_need[i] :]
        active.append(_seq(i, s, SequenceState(i, ssm_slots[i], length, table, dtable), rng))
    sync(cfg.device)
    return BenchWorld(model, active, SchedCtx(), LogitsContext(), list(range(n)), s.ladder_nd)
