"""Build a world (model with seeded caches, active sequences, scheduler context) from a `WorldSpec`.

Two worlds built from one spec are identical bit for bit; `World.clone` copies one for the
side-by-side run. Weights are built once per `ModelSpec` and shared; caches are per world.
"""

from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass, replace

import torch

from batched.batched_model import BatchedMtpModel
from properties.worlds.grammars import grammar_history
from properties.worlds.row_shaping import FIRST_PLAIN_TOKEN, shape_rows
from properties.worlds.specs import ModelSpec, SeqSpec, StepSpec, WorldSpec
from reference.model.config import ModelConfig
from reference.model.weights import Weights, build_weights
from reference.sched_ctx import Levers, LogitsContext, SamplingConfig, SchedCtx, Watchdog
from reference.state import ActiveSeq, AdaptiveSpeculation, SequenceState, SpeculationMode
from reference.vocab import build_vocab

MAX_DRAFTS = 8  # longest ladder the strategies ask for


@dataclass(slots=True)
class World:
    spec: WorldSpec
    model: BatchedMtpModel
    active: list[ActiveSeq]
    sched: SchedCtx
    verify_ctx: LogitsContext
    idxs: list[int]
    ladder_nd: int

    def clone(self, into: BatchedMtpModel | None = None) -> World:
        """An independent copy: caches, scratch, sequences (grammar matchers forked) and telemetry.
        With `into` (a model of this world's configuration), that model takes a bit-for-bit copy of
        the caches and scratch instead of a new clone being made, so what it holds beside them (a
        `VectorMtpModel`'s captured graphs) stays valid."""
        if into is not None:
            into.copy_state_from(self.model)
        return World(
            self.spec,
            self.model.clone() if into is None else into,
            [copy_seq(a) for a in self.active],
            copy.deepcopy(self.sched),
            copy.deepcopy(self.verify_ctx),
            list(self.idxs),
            self.ladder_nd,
        )


def copy_seq(a: ActiveSeq) -> ActiveSeq:
    """An independent copy of a sequence (lists copied, grammar matcher forked); cheaper than
    `copy.deepcopy`, which the property runs would otherwise spend a tenth of their time in."""
    seq = a.seq
    return replace(
        a,
        seq=replace(seq, block_table=list(seq.block_table), draft_block_table=list(seq.draft_block_table)),
        output_tokens=list(a.output_tokens),
        output_logprobs=list(a.output_logprobs),
        pending_drafts=list(a.pending_drafts),
        pending_draft_conf=list(a.pending_draft_conf),
        grammar_state=a.grammar_state.fork() if a.grammar_state is not None else None,
        adaptive_spec=replace(a.adaptive_spec),
    )


def model_config(m: ModelSpec) -> ModelConfig:
    """The model configuration a `ModelSpec` stands for, with caches sized for its slots (or as
    `num_blocks` and `num_draft_blocks` say)."""
    blocks_per_seq = math.ceil(m.max_seq_len / m.block_size) + 1
    draft_blocks_per_seq = math.ceil((m.max_seq_len + MAX_DRAFTS) / m.block_size) + 2
    return ModelConfig(
        vocab_size=m.vocab_size,
        hidden=m.hidden,
        n_heads=m.n_heads,
        n_attn_layers=m.n_attn_layers,
        block_size=m.block_size,
        num_blocks=m.num_slots * blocks_per_seq if m.num_blocks is None else m.num_blocks,
        num_draft_blocks=m.num_slots * draft_blocks_per_seq if m.num_draft_blocks is None else m.num_draft_blocks,
        max_seq_len=m.max_seq_len,
        max_drafts=MAX_DRAFTS,
        num_slots=m.num_slots,
        num_ssm_slots=m.num_slots,
        max_batch_rows=max(256, m.num_slots),
        stash_capacity=m.stash_capacity,
        ep=m.ep,
        hss=m.hss,
        mtp_propose_batch_max=m.group_cap,
        max_batched_drafts=m.max_batched_drafts,
        propose_meta_stride=m.meta_stride,
        dflash_gamma=m.dflash_gamma,
        logits_fp32=m.logits_fp32,
        dtype=m.dtype,
        numerics=m.numerics,
        device=m.device,
        seed=m.weights_seed,
        tie_group=m.tie_group,
    )


# The configuration fields the weights depend on (`reference.model.weights.init_weights`).
WEIGHT_FIELDS = (
    "vocab_size",
    "hidden",
    "n_heads",
    "n_attn_layers",
    "mlp_hidden",
    "ssm_state",
    "dtype",
    "device",
    "seed",
    "init_scale",
    "tie_group",
)


@functools.lru_cache(maxsize=16)
def _weights_of(key: ModelConfig) -> Weights:
    return build_weights(key)


def shared_weights(cfg: ModelConfig) -> Weights:
    """The weights of `cfg`, built once for every configuration that draws the same ones (worlds
    that differ only in cache sizes, caps or strides share them)."""
    return _weights_of(ModelConfig(**{f: getattr(cfg, f) for f in WEIGHT_FIELDS}))


@functools.lru_cache(maxsize=16)
def base_model(m: ModelSpec) -> BatchedMtpModel:
    """The model of a `ModelSpec`, built once; worlds clone it."""
    cfg = model_config(m)
    return BatchedMtpModel(cfg, weights=shared_weights(cfg))


def sched_for(step: StepSpec) -> tuple[SchedCtx, LogitsContext]:
    levers = Levers(
        mtp_batch_bootstrap=step.mtp_batch_bootstrap,
        mtp_max_seqs=step.mtp_max_seqs,
        dflash_unified_ctx=step.dflash_unified_ctx,
        dflash_serial_append=step.dflash_serial_append,
        mtp_boot_argmax=step.mtp_boot_argmax,
        dcut_enabled=step.dcut_enabled,
        draft_stop_logprob=step.draft_stop_logprob,
    )
    sched = SchedCtx(
        levers=levers,
        watchdog=Watchdog(min_reasoning_floor=step.min_reasoning_floor),
        spec_backoff_steps=step.spec_backoff_steps,
    )
    sched.telemetry.seen.update(step.seen_log_keys)
    ctx = LogitsContext(SamplingConfig(step.fast_greedy_grammar, step.force_temp_zero))
    return sched, ctx


def adaptive_for(s: SeqSpec) -> AdaptiveSpeculation:
    """on: speculating; backed_off: still waiting after this step's tick; reprobe: due this step."""
    if s.spec == "on":
        return AdaptiveSpeculation()
    if s.spec == "backed_off":
        return AdaptiveSpeculation(mode=SpeculationMode.BACKED_OFF, backoff_remaining=2, serial_steps=3)
    if s.spec == "reprobe":
        return AdaptiveSpeculation(mode=SpeculationMode.BACKED_OFF, backoff_remaining=1, serial_steps=5, probes=1)
    raise ValueError(f"SeqSpec.spec={s.spec!r}: expected on, backed_off or reprobe")


class _Blocks:
    """Hands out block ids from a seeded shuffle so block tables are scattered, not contiguous."""

    def __init__(self, count: int, gen: torch.Generator) -> None:
        self.free = torch.randperm(count, generator=gen).tolist()

    def take(self, n: int, what: str) -> list[int]:
        if n > len(self.free):
            raise ValueError(f"world needs {n} more {what} blocks than the cache has")
        out, self.free = self.free[:n], self.free[n:]
        return out


def draft_table_len(s: SeqSpec, m: ModelSpec, ladder_nd: int) -> int:
    """Blocks in the sequence's drafter block table: room for the positions cache_len+1 .. the end
    of the ladder, plus `extra_draft_blocks`."""
    return math.ceil((s.cache_len + 1 + ladder_nd) / m.block_size) + s.extra_draft_blocks


def request_seed(token_seed: int) -> int:
    """A sequence's sampling seed, 63 bits as engines take them: its low 32 bits from the token seed,
    its high 31 mixed from it, so that a step which keeps 32 bits of a seed (or hashes only its low
    word) draws another request's noise on every world, not only on the draw oracles' (P10)."""
    low = (token_seed * 7919 + 17) & 0xFFFFFFFF
    high = ((token_seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & ((1 << 64) - 1)) >> 33
    return (high << 32) | low


def build_seq(s: SeqSpec, seq_id: int, m: ModelSpec, ladder_nd: int, blocks: _Blocks, dblocks: _Blocks) -> ActiveSeq:
    vocab = build_vocab(m.vocab_size)
    gen = torch.Generator().manual_seed(s.token_seed)
    grammar = None
    if s.grammar is not None:
        grammar, history = grammar_history(s.grammar, m.vocab_size, s.n_out, gen)
    else:
        history = torch.randint(FIRST_PLAIN_TOKEN, m.vocab_size, (s.n_out,), generator=gen).tolist()
        if s.tool_call_end and s.tool_call_end_at is not None and s.n_out > 0:
            history[min(s.tool_call_end_at, s.n_out - 1)] = vocab.tool_call_end_id
    last = history[-1] if history else int(torch.randint(FIRST_PLAIN_TOKEN, m.vocab_size, (1,), generator=gen))
    if s.last_token is not None:
        last = s.last_token
    seq = SequenceState(
        slot_idx=s.slot_idx,
        ssm_slot=s.ssm_slot,
        seq_len=s.cache_len,
        block_table=blocks.take(math.ceil((s.cache_len + 1) / m.block_size), "main"),
        draft_block_table=dblocks.take(draft_table_len(s, m, ladder_nd), "drafter"),
    )
    return ActiveSeq(
        seq_id=seq_id,
        seq=seq,
        last_token=last,
        sampling_seed=request_seed(s.token_seed),
        max_tokens=s.n_out + s.max_tokens_left,
        eos_ids=(vocab.eos_id,),
        output_tokens=list(history),
        output_logprobs=[None] * len(history),
        temperature=s.temperature,
        top_k=s.top_k,
        top_p=s.top_p,
        repetition_penalty=s.repetition,
        frequency_penalty=s.frequency,
        presence_penalty=s.presence,
        grammar_state=grammar,
        top_logprobs=s.top_logprobs,
        stop_ids=s.stop_ids,
        min_tokens=s.min_tokens,
        tool_call_end_token=vocab.tool_call_end_id if s.tool_call_end else None,
        reasoning_end_token=vocab.reasoning_end_id if s.reasoning else None,
        adaptive_spec=adaptive_for(s),
    )


def check_slots(spec: WorldSpec) -> None:
    """A world gives each sequence its own slot and its own SSM slot (or none)."""
    slots = [s.slot_idx for s in spec.seqs]
    ssm = [s.ssm_slot for s in spec.seqs if s.ssm_slot is not None]
    if len(set(slots)) != len(slots) or len(set(ssm)) != len(ssm):
        raise ValueError(f"WorldSpec: slots {slots} and SSM slots {ssm} must each be distinct")


def model_on(m: ModelSpec, device: str) -> ModelSpec:
    """The model spec of `m`'s model on `device`, one side of a run: weights and caches there."""
    return replace(m, device=device, reference_device="")


def build_world(spec: WorldSpec, device: str | None = None) -> World:
    """The world `spec` describes, caches filled from `spec.cache_seed`, on `device` (default the
    spec's). Caches and weights are drawn on the CPU, so the world is the same bits on every device."""
    m = spec.model
    check_slots(spec)
    model = base_model(model_on(m, device or m.device)).clone()
    gen = torch.Generator().manual_seed(spec.cache_seed)
    model.randomize_caches(gen)
    blocks = _Blocks(model.cfg.num_blocks, gen)
    dblocks = _Blocks(model.cfg.num_draft_blocks, gen)
    # Blocks go out in slot order, so a sequence's cache contents do not depend on its index.
    by_slot = sorted(range(len(spec.seqs)), key=lambda i: spec.seqs[i].slot_idx)
    built = {i: build_seq(spec.seqs[i], i, m, spec.step.ladder_nd, blocks, dblocks) for i in by_slot}
    active = [built[i] for i in range(len(spec.seqs))]
    shape_rows(model, spec.seqs, active, spec.step)
    sched, ctx = sched_for(spec.step)
    return World(spec, model, active, sched, ctx, list(spec.bootstrap), spec.step.ladder_nd)


def on_device(world: World, device: str) -> World:
    """A copy of `world` on `device`: a model of its spec there (the same weights, drawn from the
    same seed) holding its caches, checkpoints and scratch bit for bit; sequences and scheduler
    state copied as `World.clone` does."""
    model = base_model(model_on(world.spec.model, device)).clone()
    model.copy_state_from(world.model)
    return World(
        world.spec,
        model,
        [copy_seq(a) for a in world.active],
        copy.deepcopy(world.sched),
        copy.deepcopy(world.verify_ctx),
        list(world.idxs),
        world.ladder_nd,
    )
