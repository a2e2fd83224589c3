"""What a run checks, as objects built once at the edge: `RunConfig` (device, numerics, dtypes, mix
size, model size, reference device, the implementation, the near-tie budget, where replays go) and
`Tolerance` (how two runs' numbers are compared in one numerics mode and dtype).

`RunConfig.build` takes the options a person gave (pytest's, or a job's command line), then the
environment (`MTP_VERIFY_<OPTION>`), then the defaults: the one place of the project that reads the
suite's environment variables. Properties take the configuration as the `run` fixture of
`properties.run.plugin`, jobs as an argument; nothing reads it at import time.

`OPTION_TABLE` defines each option once (its flag, choices, help): `RunConfig.add_arguments` puts
them on a command's argparse parser, the pytest plugin registers them from the same records, and
`RunConfig.from_args` / `RunConfig.parse` turn the parsed options into a configuration.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from properties.impl import DEFAULT_IMPL, Impl, impl_help, load
from properties.tolerance import Tolerance
from reference.model.modes import DType, NumericsMode

ENV_PREFIX = "MTP_VERIFY_"
NUMERICS = tuple(m.value for m in NumericsMode)
DTYPES = tuple(d.value for d in DType)
REFERENCE_DEVICES = ("same", "cpu")  # where the reference step runs
# Model sizes: `small` is the suite's test model (hidden 32, vocabulary 512 or 601); `serving` has a
# serving model's width and vocabulary (hidden 1024 in 8 heads, the 129280 ids of an MTP model's
# tokenizer: ids past 32767 and 65535, which 16-bit packing gets wrong), for GPU runs.
MODEL_SIZES: dict[str, tuple[int, int, int] | None] = {"small": None, "serving": (1024, 8, 129280)}
# Largest mix by device when none is given. A GPU checks the batch sizes an engine serves; the CPU
# keeps examples cheap but goes past the exact numerics' row tile (8), so the multi-tile path of
# every batched pass is checked on every run.
DEFAULT_MAX_N = {"cpu": 12, "cuda": 64}
DEFAULT_FORCED_BUDGET = 0.01
DEFAULT_REPLAYS = Path(".hypothesis") / "replays"


@dataclass(slots=True, frozen=True)
class Option:
    """One of the suite's options: `name` (the key of `RunConfig.build`), what it sets (`about`: a phrase,
    or a function that renders one, as `--impl`'s from the registry), its values in words (`values`; ""
    where the choices say them), its default in words, its choices (None: any value of `kind`) and the
    type a value is read as."""

    name: str
    about: str | Callable[[], str]
    default: str
    values: str = ""
    choices: tuple[str, ...] | None = None
    kind: type = str

    @property
    def flag(self) -> str:
        """The command-line flag: `--max-n` for `max_n`."""
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        """The environment variable: `MTP_VERIFY_MAX_N` for `max_n`."""
        return ENV_PREFIX + self.name.upper()

    def help(self, default: str | None = None, env: bool = True, choices: Sequence[str] | None = None) -> str:
        """The help text: what the option sets, its values (`choices`, where a command takes fewer), its
        default (`default`: a command's own, in words; else the suite's) and, with `env`, its variable."""
        about = self.about() if callable(self.about) else self.about
        about = about.replace(" (default)", "")  # the default is said once, at the end
        values = _words(choices) if choices else (self.values or _words(self.choices or ()))
        text = f"{about}: {values}" if values else about
        return f"{text} (default: {self.default if default is None else default}{f'; or {self.env}' if env else ''})"

    def arguments(self, default: Any = None, shown: str | None = None, env: bool = True,
                  choices: Sequence[str] | None = None) -> dict[str, Any]:  # fmt: skip
        """The keyword arguments of argparse's `add_argument` (and pytest's `addoption`) for this option:
        `default` where it is not given, the help (`help`, `shown` the default's words), the choices
        (`choices` in place of the suite's) and the type."""
        kw: dict[str, Any] = {"default": default, "help": self.help(shown, env, choices)}
        if choices or self.choices:
            kw["choices"] = tuple(choices or self.choices or ())
        else:
            kw["metavar"] = self.name.upper()  # pytest's would be its dest's, MTP_...
        return kw | ({"type": self.kind} if self.kind is not str else {})


@dataclass(slots=True, frozen=True)
class Default:
    """A command's own default for one of the suite's options (`RunConfig.add_arguments`): the value the
    parser gives where the option is not given, and the help's words for it (`shown`; "": the value
    itself, or the suite's default where the value is None, "" or 0, a command's "not given")."""

    value: Any
    shown: str = ""

    def words(self, option: Option) -> str:
        """The help's words for this default of `option`."""
        if self.shown:
            return self.shown
        return option.default if self.value in (None, "", 0) else str(self.value)


_SERVING = MODEL_SIZES["serving"] or (0, 0, 0)
# The suite's options, each defined once: `RunConfig.build` reads them (each also `MTP_VERIFY_<NAME>`
# in the environment), `RunConfig.add_arguments` puts them on a command's parser, and the pytest plugin
# registers them (`properties.run.plugin.pytest_addoption`), all from these records.
OPTION_TABLE: tuple[Option, ...] = (
    Option("device", "where the step runs", "cpu", values="cpu, cuda, cuda:N or best (cuda where one is visible)"),
    Option(
        "numerics",
        "the numerics",
        NumericsMode.EXACT.value,
        values="exact (bit-equal) or fast (native kernels within rounding, the replay oracle)",
        choices=NUMERICS,
    ),
    Option(
        "dtype",
        "the model's dtype",
        "by numerics and device: exact float64 and float32 on the CPU, float32 on a GPU; fast float32 on "
        "the CPU, bfloat16 on a GPU",
        choices=DTYPES,
    ),
    Option(
        "max_n",
        "the largest sequence mix",
        f"{DEFAULT_MAX_N['cpu']} on the CPU, {DEFAULT_MAX_N['cuda']} on a GPU",
        kind=int,
    ),
    Option(
        "model",
        "the model's size",
        "small",
        values=f"small (hidden 32) or serving (hidden {_SERVING[0]}, vocabulary {_SERVING[2]})",
        choices=tuple(MODEL_SIZES),
    ),
    Option(
        "reference_device",
        "where the reference step runs",
        "same",
        values="same, or cpu (fast numerics on a GPU only)",
        choices=REFERENCE_DEVICES,
    ),
    Option("impl", impl_help, "literal"),
    Option("forced_budget", "the share of decisions fast numerics may force", str(DEFAULT_FORCED_BUDGET), kind=float),
    Option("replays", "where a failure's replay file goes", str(DEFAULT_REPLAYS)),
    Option("threads", "torch intra-op threads", "1, the worlds are tiny", kind=int),
)
OPTION = {o.name: o for o in OPTION_TABLE}
OPTIONS = tuple(OPTION)  # the names `build` reads


@dataclass(slots=True, frozen=True)
class RunConfig:
    """One run's configuration (see the module docstring). `impl_name` as given (a registry name or
    `module:function`); `impl` is that implementation."""

    device: str = "cpu"
    numerics: NumericsMode = NumericsMode.EXACT
    dtypes: tuple[DType, ...] = (DType.FLOAT64, DType.FLOAT32)
    max_n: int = DEFAULT_MAX_N["cpu"]
    reference_device: str = ""  # "": the reference runs on `device` too
    model: str = "small"
    impl_name: str = DEFAULT_IMPL
    forced_budget: float = DEFAULT_FORCED_BUDGET
    replays: Path = DEFAULT_REPLAYS
    threads: int = 1  # torch intra-op threads of the process that runs the properties

    @property
    def impl(self) -> Impl:
        """The implementation under test."""
        return load(self.impl_name)

    @property
    def exact(self) -> bool:
        """Exact numerics: both sides bit for bit."""
        return self.numerics == NumericsMode.EXACT

    def tolerance(self, dtype: DType | str) -> Tolerance:
        """How this run compares numbers of `dtype`."""
        return Tolerance(self.numerics, DType(dtype))

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")

    def with_device(self, device: str) -> RunConfig:
        """This configuration on `device` (a worker's own `cuda:i`)."""
        return dataclasses.replace(self, device=device)

    @classmethod
    def build(cls, options: Mapping[str, Any], env: Mapping[str, str]) -> RunConfig:
        """The configuration `options` (None where not given) and then `env` ask for, defaults for the
        rest. A ValueError names the option (and the variable) that is wrong."""
        raw = {name: option_or_env(name, options, env) for name in OPTIONS}
        device = raw["device"] or "cpu"
        if device == "best":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device != "cpu" and not device.startswith("cuda"):
            raise ValueError(f"{_name('device')}={device!r}: expected cpu, cuda, cuda:N or best")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"{_name('device')}={device}: no CUDA device is visible")
        numerics = NumericsMode(_choice("numerics", raw["numerics"] or "exact", NUMERICS))
        on_gpu = device.startswith("cuda")
        if raw["dtype"]:
            dtypes: tuple[DType, ...] = (DType(_choice("dtype", raw["dtype"], DTYPES)),)
        elif numerics == NumericsMode.EXACT:
            dtypes = (DType.FLOAT32,) if on_gpu else (DType.FLOAT64, DType.FLOAT32)
        else:
            dtypes = (DType.BFLOAT16,) if on_gpu else (DType.FLOAT32,)
        max_n = _number("max_n", raw["max_n"], int, DEFAULT_MAX_N["cuda" if on_gpu else "cpu"])
        if max_n < 1:
            raise ValueError(f"{_name('max_n')}={max_n}: expected a positive integer")
        budget = _number("forced_budget", raw["forced_budget"], float, DEFAULT_FORCED_BUDGET)
        if not 0.0 <= budget <= 1.0:
            raise ValueError(f"{_name('forced_budget')}={budget}: expected a fraction in [0, 1]")
        return cls(
            device=device,
            numerics=numerics,
            dtypes=dtypes,
            max_n=max_n,
            model=_choice("model", raw["model"] or "small", tuple(MODEL_SIZES)),
            reference_device=reference_device_for(device, numerics, raw["reference_device"] or "same"),
            impl_name=str(raw["impl"] or DEFAULT_IMPL),
            forced_budget=budget,
            replays=Path(raw["replays"]) if raw["replays"] else DEFAULT_REPLAYS,
            threads=_number("threads", raw["threads"], int, 1),
        )

    @staticmethod
    def add_arguments(
        parser: argparse.ArgumentParser | argparse._ArgumentGroup,
        only: Iterable[str] | None = None,
        defaults: Mapping[str, Any] | None = None,
        *,
        choices: Mapping[str, Sequence[str]] | None = None,
        env: bool = True,
    ) -> None:
        """Add the suite's options (`OPTION_TABLE`; `only`: those named, for a command that takes fewer)
        to `parser`, each with its flag, choices and help. An option not in `defaults` parses to None where
        it is not given, so that `from_args` takes the environment's value, and its help names its
        variable where `env` (the command reads the environment); one in `defaults` (a value, or a
        `Default` with the help's words for it) is the command's own, its help says so and names no
        variable. `choices` narrows an option's values for a command that takes fewer. A ValueError
        names what is not one of the suite's options."""
        names, defaults, narrowed = set(OPTIONS if only is None else only), defaults or {}, choices or {}
        unknown = (names - set(OPTIONS)) | (set(defaults) - names) | (set(narrowed) - names)
        if unknown:
            raise ValueError(f"not options of the suite (or not among `only`): {', '.join(sorted(unknown))}")
        for opt in OPTION_TABLE:
            if opt.name not in names:
                continue
            if opt.name in defaults:
                given = defaults[opt.name]
                own = given if isinstance(given, Default) else Default(given)
                kw = opt.arguments(own.value, own.words(opt), False, narrowed.get(opt.name))
            else:
                kw = opt.arguments(None, None, env, narrowed.get(opt.name))
            parser.add_argument(opt.flag, **kw)

    @classmethod
    def from_args(cls, namespace: argparse.Namespace, env: Mapping[str, str] = os.environ) -> RunConfig:
        """The configuration the parsed options of `namespace` (`add_arguments`'s; None or absent: not
        given) and then `env` ask for, as `build` gives it (a ValueError names the option that is wrong)."""
        return cls.build({name: getattr(namespace, name, None) for name in OPTIONS}, env)

    @classmethod
    def parse(
        cls, parser: argparse.ArgumentParser, argv: Sequence[str] | None = None, env: Mapping[str, str] = os.environ
    ) -> tuple[argparse.Namespace, RunConfig]:
        """`parser`'s options of `argv` (None: the command line) and the configuration they and `env`
        ask for; a value `build` refuses exits as `parser.error` does (status 2, the message naming the
        option)."""
        args = parser.parse_args(argv)
        try:
            return args, cls.from_args(args, env)
        except ValueError as e:
            parser.error(str(e))

    def options(self) -> list[str]:
        """The pytest options that give this configuration (for a job that starts pytest), in the
        order of `OPTION_TABLE`: a single dtype only, the reference device only where it is the CPU."""
        values: dict[str, Any] = {"device": self.device, "numerics": self.numerics, "max_n": self.max_n}
        values |= {"model": self.model, "impl": self.impl_name, "forced_budget": self.forced_budget}
        values |= {"replays": self.replays, "threads": self.threads}
        values |= {"dtype": self.dtypes[0] if len(self.dtypes) == 1 else None}
        values |= {"reference_device": self.reference_device or None}
        return [a for o in OPTION_TABLE if values[o.name] is not None for a in (o.flag, str(values[o.name]))]


def reference_device_for(device: str, numerics: NumericsMode, raw: str) -> str:
    """Where the reference runs: "" (on `device`) for `same`, "cpu" for `cpu` while the implementation
    runs on a GPU in fast numerics; exact numerics are bit-equal on one device only."""
    raw = _choice("reference_device", raw, REFERENCE_DEVICES)
    if raw == "same" or device == "cpu":
        return ""
    if numerics == NumericsMode.EXACT:
        raise ValueError(
            f"{_name('reference_device')}=cpu needs fast numerics: exact numerics are bit-equal on one device only"
        )
    return "cpu"


def _words(values: Sequence[str]) -> str:
    """`a, b or c`."""
    return " or ".join(filter(None, (", ".join(values[:-1]), *values[-1:])))


@functools.cache
def _name(option: str) -> str:
    return f"--{option.replace('_', '-')} (or {ENV_PREFIX}{option.upper()})"


def option_or_env(name: str, options: Mapping[str, Any], env: Mapping[str, str]) -> Any:
    """Option `name` where given, else `MTP_VERIFY_<NAME>` in `env`, else None."""
    value = options.get(name)
    return value if value is not None else (env.get(ENV_PREFIX + name.upper()) or None)


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{_name(name)}={value!r}: expected one of {', '.join(choices)}")
    return value


def _number(name: str, value: Any, kind: type, default: Any) -> Any:
    if value is None:
        return default
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{_name(name)}={value!r}: expected a {kind.__name__}") from None
