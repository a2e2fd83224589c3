"""The tiny model's configuration: sizes, cache capacities, envelope levers and numerics."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

import torch

from reference.model.modes import DType, NumericsMode
from reference.sched_ctx import ENV_PROPOSE_META_STRIDE, env_positive_int

DTYPES: dict[str, torch.dtype] = {d.value: d.torch for d in DType}
NUMERICS = tuple(m.value for m in NumericsMode)
# Exact mode keeps every transcendental elementwise op (sigmoid, SiLU) on tiles of row_tile * dim
# elements; CPU kernels compute a scalar tail differently from the vector body (up to 64 elements a
# step for bf16 with AVX-512), so tile * dim must be a multiple of 64 for a row's bits not to depend
# on its place in the tile. Tiles of a multiple of 8 rows and dims of a multiple of 8 guarantee it.
EXACT_ALIGN = 8


@dataclass(slots=True, frozen=True)
class ModelConfig:
    """Everything that shapes the model. `validate()` names the first bad field in a ValueError.
    Frozen: a model's configuration is shared by its clones, and nothing may change it after build."""

    vocab_size: int = 320
    hidden: int = 64
    n_heads: int = 4
    n_attn_layers: int = 1
    mlp_hidden: int | None = None  # None: 2 * hidden
    ssm_state: int = 32
    block_size: int = 16
    num_blocks: int = 64  # main paged KV
    num_draft_blocks: int = 64  # the drafter's own paged KV
    max_seq_len: int = 128  # a multiple of block_size
    max_drafts: int = 8  # the longest draft run the drafter supports
    num_slots: int = 16  # sequence slots (checkpoint positions live per slot)
    num_ssm_slots: int = 16
    max_batch_rows: int = 256  # rows of the shared hidden_states scratch
    stash_capacity: int = 256  # rows of the hidden stash; 0 = not allocated
    ep: bool = False
    hss: bool = False
    mtp_propose_batch_max: int = 8  # group cap for batched proposes (0 and 1 allowed)
    max_batched_drafts: int = 8  # above it run_mtp_propose_batched returns None
    propose_meta_stride: int | None = None  # None: ceil(max_seq_len / block_size); env overrides
    dflash_gamma: int | None = None
    logits_fp32: bool = False
    dtype: DType = DType.FLOAT64  # a name converts: ModelConfig(dtype="float32")
    numerics: NumericsMode = NumericsMode.EXACT
    device: str = "cpu"
    row_tile: int = 8  # exact mode: every kernel call runs on exactly this many rows
    rms_eps: float = 1e-6
    seed: int = 0
    init_scale: float = 1.0
    # Token ids share embedding rows (the tied head's rows) in groups of this many consecutive ids, so
    # their logits, and the drafter's, tie exactly: every argmax, top-k and top-p cut meets ties.
    tie_group: int = 1

    def __post_init__(self) -> None:
        # Names become members (frozen: set once, here); a name outside the choices is validate()'s.
        if self.dtype in DTYPES:
            object.__setattr__(self, "dtype", DType(self.dtype))
        if self.numerics in NUMERICS:
            object.__setattr__(self, "numerics", NumericsMode(self.numerics))
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first field that is out of range."""
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("int", "int | None") and v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise ValueError(f"ModelConfig.{f.name}={v!r}: expected an integer")
            if f.type == "bool" and not isinstance(v, bool):
                raise ValueError(f"ModelConfig.{f.name}={v!r}: expected a bool")
        positive = (
            "vocab_size",
            "hidden",
            "n_heads",
            "n_attn_layers",
            "ssm_state",
            "block_size",
            "num_blocks",
            "num_draft_blocks",
            "max_seq_len",
            "max_drafts",
            "num_slots",
            "row_tile",
            "tie_group",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"ModelConfig.{name}={getattr(self, name)}: must be >= 1")
        for name in ("num_ssm_slots", "stash_capacity", "mtp_propose_batch_max", "max_batched_drafts"):
            if getattr(self, name) < 0:
                raise ValueError(f"ModelConfig.{name}={getattr(self, name)}: must be >= 0")
        if self.mlp_hidden is not None and self.mlp_hidden < 1:
            raise ValueError(f"ModelConfig.mlp_hidden={self.mlp_hidden}: must be >= 1 or None")
        if self.hidden % self.n_heads:
            raise ValueError(f"ModelConfig.n_heads={self.n_heads}: must divide hidden={self.hidden}")
        if self.max_seq_len % self.block_size:
            raise ValueError(
                f"ModelConfig.max_seq_len={self.max_seq_len}: must be a multiple of block_size={self.block_size}"
            )
        if self.max_batch_rows < 256:
            raise ValueError(f"ModelConfig.max_batch_rows={self.max_batch_rows}: must be >= 256")
        if self.max_batched_drafts > self.max_drafts:
            raise ValueError(
                f"ModelConfig.max_batched_drafts={self.max_batched_drafts}: must be <= max_drafts={self.max_drafts}"
            )
        for name in ("propose_meta_stride", "dflash_gamma"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"ModelConfig.{name}={v}: must be >= 1 or None")
        if self.dtype not in DTYPES:
            raise ValueError(f"ModelConfig.dtype={self.dtype!r}: expected one of {', '.join(DTYPES)}")
        if self.numerics not in NUMERICS:
            raise ValueError(f"ModelConfig.numerics={self.numerics!r}: expected exact or fast")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError):
            raise ValueError(f"ModelConfig.device={self.device!r}: not a torch device") from None
        if not (isinstance(self.rms_eps, float) and 0.0 < self.rms_eps < 1.0):
            raise ValueError(f"ModelConfig.rms_eps={self.rms_eps!r}: expected a float in (0, 1)")
        if not (isinstance(self.init_scale, float | int) and math.isfinite(self.init_scale) and self.init_scale > 0):
            raise ValueError(f"ModelConfig.init_scale={self.init_scale!r}: expected a finite number > 0")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"ModelConfig.seed={self.seed!r}: expected an integer >= 0")
        if self.exact:
            if self.row_tile % EXACT_ALIGN:
                raise ValueError(f"ModelConfig.row_tile={self.row_tile}: exact numerics needs a multiple of 8")
            for name in ("hidden", "ssm_state", "mlp_width"):
                v = self.mlp_width if name == "mlp_width" else getattr(self, name)
                if v % EXACT_ALIGN:
                    field_name = "mlp_hidden" if name == "mlp_width" else name
                    raise ValueError(f"ModelConfig.{field_name}={v}: exact numerics needs a multiple of 8")

    # Derived sizes ---------------------------------------------------------------------------

    @property
    def head_dim(self) -> int:
        return self.hidden // self.n_heads

    @property
    def mlp_width(self) -> int:
        return 2 * self.hidden if self.mlp_hidden is None else self.mlp_hidden

    @property
    def exact(self) -> bool:
        """Exact numerics: bit-equal across batch shapes on one device."""
        return self.numerics == NumericsMode.EXACT

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def logits_dtype(self) -> torch.dtype:
        return torch.float32 if self.logits_fp32 else self.torch_dtype

    @property
    def main_blocks_per_seq(self) -> int:
        """Blocks that cover max_seq_len: the main attention's padded length in blocks."""
        return self.max_seq_len // self.block_size

    @property
    def draft_span(self) -> int:
        """The drafter's padded attention length: max_seq_len + max_drafts rounded up to blocks."""
        return math.ceil((self.max_seq_len + self.max_drafts) / self.block_size) * self.block_size

    @property
    def draft_blocks_per_seq(self) -> int:
        return self.draft_span // self.block_size

    def resolved_meta_stride(self, env: Mapping[str, str]) -> int:
        """The propose-meta stride: METRALE_PROPOSE_META_STRIDE in `env` if set, else the configured
        value, else ceil(max_seq_len / block_size). Raises ValueError for a malformed `env` value."""
        override = env_positive_int(env, ENV_PROPOSE_META_STRIDE)
        if override is not None:
            return override
        if self.propose_meta_stride is not None:
            return self.propose_meta_stride
        return math.ceil(self.max_seq_len / self.block_size)

    # JSON --------------------------------------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ModelConfig:
        """The configuration `to_json` wrote; unknown keys are a ValueError."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("ModelConfig JSON: expected an object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"ModelConfig JSON: unknown fields {', '.join(unknown)}")
        return cls(**data)
