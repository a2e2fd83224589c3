"""Benchmark worlds: a model sized by `BenchSettings` with seeded caches, and the mix of n draftless
sequences of one bootstrap step (`mixed`: every fourth row samples, so the batched argmax engages
from n = 2; `greedy`: every row greedy), each in a shuffled SSM slot with a cache in scattered blocks
(docs/benchmarks.md). The world is a `WorldSpec` (`bench_spec`) built by the properties' own builder,
with caches of exactly the blocks the mix needs, so building and cloning it stays cheap at n = 256."""

from __future__ import annotations

import functools
import gc
import math
import random
from dataclasses import dataclass, replace
from typing import Any

import torch

from batched.vector.model import VectorMtpModel
from benchmarks.settings import IMPL_NAMES, LOOP, BenchSettings
from properties.impl import Impl, load, plain
from properties.worlds.specs import ModelSpec, SeqSpec, StepSpec, WorldSpec
from properties.worlds.world import World, build_world, draft_table_len
from reference.step import step_mtp_bootstrap_per_seq

MAX_DRAFTS = 8
SAMPLED_EVERY = 4  # row i samples when i % SAMPLED_EVERY == SAMPLED_EVERY - 1


def sync(device: torch.device | str) -> None:
    """Wait for all work queued on `device` (a no-op on the CPU)."""
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _scattered(count: int, rng: random.Random) -> list[int]:
    ids = list(range(count))
    rng.shuffle(ids)
    return ids


def _seq(i: int, s: BenchSettings, cache_len: int, ssm_slot: int, seed: int) -> SeqSpec:
    sampled = s.mix == "mixed" and i % SAMPLED_EVERY == SAMPLED_EVERY - 1
    sampling = {"temperature": 0.8, "top_k": 50, "top_p": 0.95, "repetition": 1.1} if sampled else {}
    return SeqSpec(cache_len=cache_len, n_out=s.history, max_tokens_left=4096, ssm_slot=ssm_slot, slot_idx=i,
                   token_seed=1009 * seed + i, **sampling)  # fmt: skip


def bench_spec(s: BenchSettings, n: int, seed: int = 0) -> WorldSpec:
    """The benchmark mix of n sequences as a `WorldSpec` (all of them bootstrap), deterministic in
    `seed`, with caches of exactly the blocks the mix needs."""
    rng = random.Random(seed)
    lens = [rng.randint(s.cache_min, s.cache_max) for _ in range(n)]
    ssm_slots = _scattered(n, rng)
    seqs = tuple(_seq(i, s, length, ssm_slots[i], seed) for i, length in enumerate(lens))
    shape = ("dtype", "numerics", "device", "vocab_size", "hidden", "n_heads", "n_attn_layers", "block_size",
             "max_seq_len", "group_cap")  # fmt: skip
    model = ModelSpec(**{k: getattr(s, k) for k in shape}, num_slots=n, stash_capacity=max(256, n),
                      max_batched_drafts=MAX_DRAFTS,
                      num_blocks=sum(math.ceil((length + 1) / s.block_size) for length in lens))  # fmt: skip
    model = replace(model, num_draft_blocks=sum(draft_table_len(q, model, s.ladder_nd) for q in seqs))
    return WorldSpec(model, seqs, tuple(range(n)), StepSpec(ladder_nd=s.ladder_nd), cache_seed=seed)


def build_bench_world(s: BenchSettings, n: int, seed: int = 0) -> World:
    """The benchmark world of n sequences, built by the properties' own builder
    (`properties.worlds.world.build_world`) from `bench_spec`."""
    world = build_world(bench_spec(s, n, seed))
    sync(s.device)
    return world


def cache_lens(world: World) -> list[int]:
    """Tokens in each bootstrapping sequence's cache before the step."""
    return [world.active[i].seq.seq_len for i in world.idxs]


@functools.cache
def bench_impl(name: str) -> Impl:
    """The implementation a benchmark runs under `name`: `loop` (the per-sequence reference step) or a
    name of the suite's registry (`properties.impl.REGISTRY`). ValueError for any other name."""
    if name not in IMPL_NAMES:
        raise ValueError(f"benchmark implementation {name!r}: expected one of {', '.join(IMPL_NAMES)}")
    return plain(step_mtp_bootstrap_per_seq, LOOP) if name == LOOP else load(name)


@dataclass(slots=True)
class StepBench:
    """The benchmark world of n sequences on the model one implementation runs on, and the model
    every measured step runs on: each step gets a fresh copy of the world in it, so the fully
    batched step's graphs stay captured."""

    settings: BenchSettings
    impl: Impl
    base: World
    work: Any

    @classmethod
    def make(cls, s: BenchSettings, n: int, impl: str = "vector", graph_after: int | None = 1) -> StepBench:
        """The bench of `impl` (`bench_impl`) at n sequences; on a `VectorMtpModel` (`vector`,
        `vector-gathered`), its passes are captured as graphs after `graph_after` eager calls (None: never)."""
        runs = bench_impl(impl)
        base = build_bench_world(s, n)
        base.model = runs.prepare_model(base.model)
        if isinstance(base.model, VectorMtpModel):
            base.model.graph_after = graph_after
        return cls(s, runs, base, base.model.clone())

    def fresh(self) -> World:
        """The world copied into the working model, its garbage collected, the device idle."""
        w = self.base.clone(into=self.work)
        gc.collect()  # the copy's garbage is not the step's
        sync(self.settings.device)
        return w

    def run(self, w: World) -> None:
        """One step of the implementation on `w`, the device synchronised after it."""
        self.impl.step(w.model, w.active, w.sched, w.idxs, w.ladder_nd, w.verify_ctx)
        sync(self.settings.device)
