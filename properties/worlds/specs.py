"""Plain, printable descriptions of a world: what the strategies generate, what a report shows and
what a replay file holds. Building the world from them is `properties.worlds.world`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from reference.model.modes import DType, NumericsMode
from reference.sampling_params import SamplingParams


@dataclass(slots=True, frozen=True)
class ModelSpec:
    """The model a world runs: numerics, dtype, sizes and the envelope levers the gate reads."""

    dtype: DType = DType.FLOAT64  # names convert: ModelSpec(dtype="float32", numerics="fast")
    numerics: NumericsMode = NumericsMode.EXACT
    device: str = "cpu"
    vocab_size: int = 512
    hidden: int = 32
    n_heads: int = 2
    block_size: int = 16
    max_seq_len: int = 128
    num_slots: int = 8
    dflash_gamma: int | None = None
    logits_fp32: bool = False
    stash_capacity: int = 64
    group_cap: int = 4
    max_batched_drafts: int = 8
    ep: bool = False
    hss: bool = False
    meta_stride: int | None = None
    weights_seed: int = 0
    # Where the reference step runs: "" on `device`. Another device (the CPU, while the implementation
    # runs on a GPU) only in fast numerics, where the reference's numbers are compared within the
    # dtype's rounding anyway; exact numerics promise bit-equality on one device only.
    reference_device: str = ""
    n_attn_layers: int = 1
    # Blocks in the main and in the drafter cache. None: room for every slot's whole `max_seq_len`
    # (the properties' worlds). A count: caches sized to what the world's sequences need (the
    # benchmarks' mixes of up to 256 rows on a serving-sized model, where slot-sized caches take GBs).
    num_blocks: int | None = None
    num_draft_blocks: int | None = None
    # Token ids share embedding rows in groups of this many (`ModelConfig.tie_group`): exact ties in
    # every logits and drafter row, at the argmax and at the top-k and top-p boundaries.
    tie_group: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", DType(self.dtype))
        object.__setattr__(self, "numerics", NumericsMode(self.numerics))
        if self.reference_device not in ("", self.device) and self.exact:
            raise ValueError(
                f"ModelSpec.reference_device={self.reference_device!r} with device={self.device!r}: "
                "a reference on another device needs fast numerics (exact numerics are bit-equal on one device only)"
            )

    @property
    def exact(self) -> bool:
        """Exact numerics: both sides bit for bit."""
        return self.numerics == NumericsMode.EXACT

    @property
    def ref_device(self) -> str:
        """The device the reference step runs on."""
        return self.reference_device or self.device


@dataclass(slots=True, frozen=True)
class SeqSpec:
    """One sequence of the mix. `ssm_slot` None: the sequence has no SSM slot."""

    cache_len: int = 5
    n_out: int = 0
    max_tokens_left: int = 16
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    repetition: float = 1.0
    frequency: float = 0.0
    presence: float = 0.0
    min_tokens: int = 0
    reasoning: bool = False
    stop_ids: tuple[int, ...] = ()
    tool_call_end: bool = True  # whether the request has a tool-call-end token at all
    tool_call_end_at: int | None = None  # a history position holding it (with tool_call_end)
    # History positions (before the last) that get this row's own top-ranked next tokens, best first:
    # random history tokens almost never sit near the top of the row, so penalties over them (and
    # their scope) would hardly ever change a token. Positions past the history or on the tool-call
    # end are skipped; grammar rows keep their grammar's history.
    echo: tuple[int, ...] = ()
    grammar: str | None = None
    top_logprobs: int | None = None
    spec: str = "on"  # on | backed_off | reprobe
    ssm_slot: int | None = 0
    slot_idx: int = 0
    token_seed: int = 0
    extra_draft_blocks: int = 0
    last_token: int | None = None  # None: drawn from token_seed (bad-input tests set one out of vocab)
    # The row's own top-ranked next token is also one of its EOS ids: a hold on this row changes its
    # token, and an unheld row ends with it.
    eos_top: bool = False
    # A row's decision made as sensitive as the world allows (`properties.worlds.row_shaping`): for a sampled
    # row "noise" picks, of 64 sampling seeds, the one whose two best noisy scores are closest, and
    # "top_p" sets top-p to exactly the row's cumulative probability at a rank the token seed picks;
    # for a penalised row "penalty" sets its penalty where the best history token leads by a hair.
    near_tie: str = ""

    @property
    def sampling(self) -> SamplingParams:
        """This sequence's sampling parameters, as the one record (`reference.sampling_params`)."""
        return SamplingParams(self.temperature, self.top_k, self.top_p, self.repetition, self.frequency, self.presence)


@dataclass(slots=True, frozen=True)
class FaultSpec:
    """Make the `call`-th call (0-based) of model operation `op` fail (`err`) or return its
    alternate result (`none`, `empty`, `nan_row`), for member `row` of a batched call where that
    matters. `err` and `none` are injected before the call runs, so the call changes nothing;
    `empty` and `nan_row` replace part of the result of a call that ran. With `in_place`, a bad
    logits row of `decode_batch` is written into the very tensor the call returned (as a logits
    processor edits in place) instead of into a copy: the step must decide on what the tensor holds
    when it reads it, not on anything it derived from the tensor before."""

    op: str
    call: int = 0
    kind: str = "err"
    row: int | None = None
    in_place: bool = False


@dataclass(slots=True, frozen=True)
class StepSpec:
    """The step's inputs besides the sequences: levers, sampling config, ladder, watchdog."""

    ladder_nd: int = 3
    mtp_batch_bootstrap: bool = True
    mtp_max_seqs: int = 8
    dflash_unified_ctx: bool = True
    dflash_serial_append: bool = False
    mtp_boot_argmax: bool = True
    dcut_enabled: bool = False
    draft_stop_logprob: float | None = None
    fast_greedy_grammar: bool = True
    force_temp_zero: bool = False
    min_reasoning_floor: int = 0
    spec_backoff_steps: int = 4
    dflash_verify_raw_argmax: bool = False
    seen_log_keys: tuple[str, ...] = ()  # once-per-process log keys already used before this step


@dataclass(slots=True, frozen=True)
class WorldSpec:
    """A whole example: model, sequences (index = position in `active`), which of them bootstrap,
    step inputs, the seed of the cache contents, and the fault plan."""

    model: ModelSpec = field(default_factory=ModelSpec)
    seqs: tuple[SeqSpec, ...] = ()
    bootstrap: tuple[int, ...] = ()
    step: StepSpec = field(default_factory=StepSpec)
    cache_seed: int = 0
    faults: tuple[FaultSpec, ...] = ()

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> WorldSpec:
        d = json.loads(text)
        return cls(
            model=ModelSpec(**d["model"]),
            seqs=tuple(SeqSpec(**_tuples(s)) for s in d["seqs"]),
            bootstrap=tuple(d["bootstrap"]),
            step=StepSpec(**d["step"]),
            cache_seed=d["cache_seed"],
            faults=tuple(FaultSpec(**f) for f in d["faults"]),
        )


def _tuples(d: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}


def changed_fields(obj: object) -> dict[str, Any]:
    """The fields of a spec dataclass that differ from its defaults (for compact reports)."""
    default = replace(type(obj)())  # type: ignore[call-arg]
    return {f.name: getattr(obj, f.name) for f in fields(obj) if getattr(obj, f.name) != getattr(default, f.name)}


def compact(spec: WorldSpec) -> str:
    """A few lines a person can read: the non-default parts of the spec."""
    lines = [f"model: {changed_fields(spec.model) or 'defaults'}", f"step: {changed_fields(spec.step) or 'defaults'}"]
    lines.append(f"bootstrap idxs: {list(spec.bootstrap)}  cache_seed: {spec.cache_seed}")
    for i, s in enumerate(spec.seqs):
        mark = "*" if i in spec.bootstrap else " "
        lines.append(f" {mark}seq[{i}] {changed_fields(s)}")
    for f in spec.faults:
        where = (f" (row {f.row})" if f.row is not None else "") + (" in place" if f.in_place else "")
        lines.append(f"  fault: {f.op} call {f.call} -> {f.kind}{where}")
    return "\n".join(lines)
