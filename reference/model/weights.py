"""Seeded weights of the tiny model and their safetensors file.

Weights are drawn in float64 on the CPU from `torch.Generator().manual_seed(cfg.seed)` and then cast,
so models of one seed in different dtypes carry the same weights up to rounding (what fast-versus-
exact comparisons need). The scale makes logits spread: a normalised hidden state against embedding
rows of std `2.5 * init_scale / sqrt(hidden)` gives logits of std about 2.5, so the top-2 margin over a
few hundred tokens is mostly a few tenths to a few units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from reference.model.config import ModelConfig

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
LOGIT_STD = 2.5


@dataclass(slots=True)
class BlockWeights:
    """One pre-norm transformer block: attention (q, k, v, o: [hidden, hidden]) and a SiLU MLP."""

    attn_norm: torch.Tensor  # [hidden]
    wq: torch.Tensor  # [hidden, hidden]
    wk: torch.Tensor
    wv: torch.Tensor
    wo: torch.Tensor
    mlp_norm: torch.Tensor  # [hidden]
    w_up: torch.Tensor  # [mlp, hidden]
    w_down: torch.Tensor  # [hidden, mlp]


@dataclass(slots=True)
class SsmWeights:
    """The recurrent layer: h' = sigmoid(w_a x) * h + w_b x, out = w_c h' (x = norm(residual))."""

    norm: torch.Tensor  # [hidden]
    w_a: torch.Tensor  # [state, hidden]
    w_b: torch.Tensor  # [state, hidden]
    w_c: torch.Tensor  # [hidden, state]


@dataclass(slots=True)
class DrafterWeights:
    """DeepSeek-V3-style MTP module: norms of the previous hidden and of the token embedding, a
    projection of their concatenation, one transformer block and a final norm before the shared head."""

    h_norm: torch.Tensor  # [hidden]
    e_norm: torch.Tensor  # [hidden]
    proj: torch.Tensor  # [hidden, 2 * hidden]
    block: BlockWeights
    final_norm: torch.Tensor  # [hidden]


@dataclass(slots=True, weakref_slot=True)
class Weights:
    """All weights; immutable once built (worlds share them)."""

    embed: torch.Tensor  # [vocab, hidden], also the LM head
    layers: list[BlockWeights]
    ssm: SsmWeights
    final_norm: torch.Tensor  # [hidden]
    drafter: DrafterWeights

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Flat name -> tensor map (the safetensors layout)."""
        out: dict[str, torch.Tensor] = {"embed": self.embed, "final_norm": self.final_norm}
        for i, layer in enumerate(self.layers):
            out |= _flat(f"layers.{i}.", layer)
        out |= _flat("ssm.", self.ssm)
        d = self.drafter
        out |= {
            "drafter.h_norm": d.h_norm,
            "drafter.e_norm": d.e_norm,
            "drafter.proj": d.proj,
            "drafter.final_norm": d.final_norm,
        }
        out |= _flat("drafter.block.", d.block)
        return out

    @classmethod
    def from_state_dict(cls, sd: dict[str, torch.Tensor], cfg: ModelConfig) -> Weights:
        """The weights `state_dict` flattened; missing names or wrong shapes are a ValueError."""
        expected = {k: tuple(v.shape) for k, v in _build(cfg, _meta).state_dict().items()}
        missing = sorted(set(expected) - set(sd))
        extra = sorted(set(sd) - set(expected))
        if missing or extra:
            raise ValueError(f"weights file: missing {missing}, unexpected {extra}")
        for k, shape in expected.items():
            if tuple(sd[k].shape) != shape:
                raise ValueError(f"weights file: {k} has shape {tuple(sd[k].shape)}, expected {shape}")
        return cls(
            embed=sd["embed"],
            layers=[_unflat(BlockWeights, f"layers.{i}.", sd) for i in range(cfg.n_attn_layers)],
            ssm=_unflat(SsmWeights, "ssm.", sd),
            final_norm=sd["final_norm"],
            drafter=DrafterWeights(
                h_norm=sd["drafter.h_norm"],
                e_norm=sd["drafter.e_norm"],
                proj=sd["drafter.proj"],
                block=_unflat(BlockWeights, "drafter.block.", sd),
                final_norm=sd["drafter.final_norm"],
            ),
        )

    def to(self, device: str | torch.device, dtype: torch.dtype) -> Weights:
        """A copy with every tensor in `dtype` on `device`."""

        def conv(t: torch.Tensor) -> torch.Tensor:
            return t.to(device=device, dtype=dtype)

        def block(b: BlockWeights) -> BlockWeights:
            return BlockWeights(**{f.name: conv(getattr(b, f.name)) for f in fields(b)})

        d = self.drafter
        return Weights(
            conv(self.embed),
            [block(b) for b in self.layers],
            SsmWeights(**{f.name: conv(getattr(self.ssm, f.name)) for f in fields(self.ssm)}),
            conv(self.final_norm),
            DrafterWeights(conv(d.h_norm), conv(d.e_norm), conv(d.proj), block(d.block), conv(d.final_norm)),
        )


def _flat(prefix: str, obj: object) -> dict[str, torch.Tensor]:
    return {prefix + f.name: getattr(obj, f.name) for f in fields(obj)}  # type: ignore[arg-type]


def _unflat(cls: type, prefix: str, sd: dict[str, torch.Tensor]):
    return cls(**{f.name: sd[prefix + f.name] for f in fields(cls)})


def _meta(shape: tuple[int, ...], kind: str) -> torch.Tensor:
    return torch.empty(shape, device="meta")


def _build(cfg: ModelConfig, make) -> Weights:
    """The weight tree with each tensor from `make(shape, kind)`, kind one of linear, norm, embed,
    gate; tensors are made in a fixed order (the seeded draw depends on it)."""
    h, s, m = cfg.hidden, cfg.ssm_state, cfg.mlp_width

    def block() -> BlockWeights:
        return BlockWeights(
            make((h,), "norm"),
            make((h, h), "linear"),
            make((h, h), "linear"),
            make((h, h), "linear"),
            make((h, h), "linear"),
            make((h,), "norm"),
            make((m, h), "linear"),
            make((h, m), "linear"),
        )

    embed = make((cfg.vocab_size, h), "embed")
    layers = [block() for _ in range(cfg.n_attn_layers)]
    ssm = SsmWeights(make((h,), "norm"), make((s, h), "gate"), make((s, h), "linear"), make((h, s), "linear"))
    final_norm = make((h,), "norm")
    drafter = DrafterWeights(
        make((h,), "norm"), make((h,), "norm"), make((h, 2 * h), "linear"), block(), make((h,), "norm")
    )
    return Weights(embed, layers, ssm, final_norm, drafter)


def init_weights(cfg: ModelConfig) -> Weights:
    """Weights drawn from `cfg.seed` (float64 on the CPU; cast and move with `Weights.to`).

    Linear weights are N(0, init_scale^2 / fan_in); norm weights 1 + N(0, 0.1^2); the embedding
    N(0, (LOGIT_STD * init_scale)^2 / hidden), each id's row that of the first id of its group of
    `tie_group` (exact ties). The SSM decay gate's weights are halved so sigmoid(w_a x) stays mostly
    between 0.2 and 0.8: the state neither vanishes nor saturates."""
    g = torch.Generator().manual_seed(cfg.seed)
    scale = float(cfg.init_scale)

    def make(shape: tuple[int, ...], kind: str) -> torch.Tensor:
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        if kind == "norm":
            return 1.0 + 0.1 * x
        if kind == "embed":
            return x * (LOGIT_STD * scale / math.sqrt(shape[1]))
        return x * (scale / math.sqrt(shape[1])) * (0.5 if kind == "gate" else 1.0)

    w = _build(cfg, make)
    if cfg.tie_group > 1:
        w.embed = w.embed[torch.arange(cfg.vocab_size) // cfg.tie_group * cfg.tie_group].contiguous()
    return w


def build_weights(cfg: ModelConfig) -> Weights:
    """`init_weights(cfg)` in the model's dtype on the model's device."""
    return init_weights(cfg).to(cfg.device, cfg.torch_dtype)


def save_files(cfg: ModelConfig, weights: Weights, directory: str | Path) -> None:
    """Write `config.json` and the weights as `model.safetensors` into `directory` (created)."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    (path / CONFIG_FILE).write_text(cfg.to_json())
    tensors = {k: v.detach().contiguous().cpu() for k, v in weights.state_dict().items()}
    save_file(tensors, str(path / WEIGHTS_FILE))


def load_files(directory: str | Path, device: str | None = None) -> tuple[ModelConfig, Weights]:
    """The configuration and weights `save_files` wrote, bit for bit; `device` overrides the
    configured one. ValueError when a weight's dtype or shape disagrees with the configuration."""
    path = Path(directory)
    cfg = ModelConfig.from_json((path / CONFIG_FILE).read_text())
    if device is not None:
        cfg = replace(cfg, device=device)
    sd = load_file(str(path / WEIGHTS_FILE), device="cpu")
    for name, t in sd.items():
        if t.dtype != cfg.torch_dtype:
            raise ValueError(f"{path}: weight {name} is {t.dtype}, the configuration says {cfg.dtype}")
    return cfg, Weights.from_state_dict({k: v.to(cfg.device) for k, v in sd.items()}, cfg)
