"""The scheduler context of a step: levers (with their environment switches), sampling config,
watchdog and telemetry.

The environment is read only where a caller passes it (`SchedCtx.from_env(os.environ)` is how an
engine starts): nothing here reads `os.environ` by itself, so a world built from a spec is the
same in every shell.

The switches, as decided:
- `METRALE_NO_MTP_BATCH_BOOTSTRAP`, `METRALE_NO_MTP_BOOT_ARGMAX`: set to anything but an empty
  value or a false word (`0`, `false`, `no`, `off`, any case) turns its lever off; so `=0` and
  `=false` leave the lever on, as a reader of the name expects.
- `METRALE_DFLASH_UNIFIED_CTX`: a boolean; unset keeps the default (on), a true word
  (`1`, `true`, `yes`, `on`) or a false word sets it, anything else is a ValueError naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reference.telemetry import Telemetry

ENV_NO_BATCH_BOOTSTRAP = "METRALE_NO_MTP_BATCH_BOOTSTRAP"
ENV_NO_BOOT_ARGMAX = "METRALE_NO_MTP_BOOT_ARGMAX"
ENV_DFLASH_UNIFIED_CTX = "METRALE_DFLASH_UNIFIED_CTX"
ENV_PROPOSE_META_STRIDE = "METRALE_PROPOSE_META_STRIDE"

_FALSE_WORDS = {"0", "false", "no", "off"}
_TRUE_WORDS = {"1", "true", "yes", "on"}


def env_flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """A boolean switch: unset gives `default`; 1/true/yes/on and 0/false/no/off (any case)."""
    raw = env.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ValueError(f"{name}={raw!r}: expected one of 1/true/yes/on or 0/false/no/off")


def env_switch_set(env: Mapping[str, str], name: str) -> bool:
    """A `METRALE_NO_*` switch: set to anything but empty or a false word turns the lever off."""
    raw = env.get(name)
    return raw is not None and raw.strip() != "" and raw.strip().lower() not in _FALSE_WORDS


def env_positive_int(env: Mapping[str, str], name: str) -> int | None:
    """A positive integer override, or None when unset."""
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a positive integer") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r}: expected a positive integer")
    return value


@dataclass(slots=True)
class Levers:
    """Every lever the batched bootstrap reads. `from_env` applies the environment switches."""

    mtp_batch_bootstrap: bool = True
    mtp_max_seqs: int = 8
    dflash_unified_ctx: bool = True
    dflash_serial_append: bool = False
    mtp_boot_argmax: bool = True
    dcut_enabled: bool = False
    draft_stop_logprob: float | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: object) -> Levers:
        """Levers from `overrides`, then the environment switches of `env` (module docstring)."""
        levers = cls(**overrides)  # type: ignore[arg-type]
        if env_switch_set(env, ENV_NO_BATCH_BOOTSTRAP):
            levers.mtp_batch_bootstrap = False
        if env_switch_set(env, ENV_NO_BOOT_ARGMAX):
            levers.mtp_boot_argmax = False
        levers.dflash_unified_ctx = env_flag(env, ENV_DFLASH_UNIFIED_CTX, levers.dflash_unified_ctx)
        return levers


@dataclass(slots=True)
class SamplingConfig:
    """`fast_greedy_grammar`: greedy rows take the per-row argmax fast path; `force_temp_zero`:
    every row samples greedily whatever its temperature."""

    fast_greedy_grammar: bool = True
    force_temp_zero: bool = False


@dataclass(slots=True)
class LogitsContext:
    """What the step's logit processing reads (the engine's verify context)."""

    sampling: SamplingConfig = field(default_factory=SamplingConfig)


@dataclass(slots=True)
class Watchdog:
    """`min_reasoning_floor`: a reasoning sequence may not end its reasoning (or emit EOS) before
    this many output tokens."""

    min_reasoning_floor: int = 0


@dataclass(slots=True)
class SchedCtx:
    """Levers, watchdog, adaptive-speculation settings and per-process telemetry."""

    levers: Levers = field(default_factory=Levers)
    watchdog: Watchdog = field(default_factory=Watchdog)
    spec_backoff_steps: int = 4  # serial steps a backed-off sequence waits before it re-probes
    telemetry: Telemetry = field(default_factory=Telemetry)

    @classmethod
    def from_env(cls, env: Mapping[str, str], **lever_overrides: object) -> SchedCtx:
        """A context whose levers are `Levers.from_env(env, **lever_overrides)`; the rest default."""
        return cls(levers=Levers.from_env(env, **lever_overrides))
