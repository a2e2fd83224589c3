"""The mode a mutation run checks in: numerics, dtype and device, as the suite takes them
(`--numerics`, `--dtype`, `--device`), and where its table goes in `docs/mutants.md`.

The default mode (exact numerics, the suite's own dtypes, the CPU) keeps the page's original
block (`mutants`); every other mode, and a subset run of any mode, has a block of its own
(`mutants:fast-bfloat16-cpu-subset`, `properties.run.doc_blocks`), so that the page holds one table
per mode and each run rewrites only its own."""

from __future__ import annotations

from dataclasses import dataclass

from properties.run.doc_blocks import Block
from reference.model.modes import DType, NumericsMode

# The devices a run takes: the CPU, or cuda (every visible GPU, a mutant on each); the numerics and
# dtypes are the suite's (`NumericsMode`, `DType`; the options `properties.config.OPTION_TABLE`'s).
DEVICES = ("cpu", "cuda")
COMMAND = "python -m mutants.run"  # what writes the tables, named in their markers
DEFAULT_BLOCK = Block("mutants", COMMAND)
DEFAULT_BEGIN, DEFAULT_END = DEFAULT_BLOCK.begin, DEFAULT_BLOCK.end


@dataclass(slots=True, frozen=True)
class Mode:
    """numerics exact|fast, dtype (None: the suite's choice for the numerics and device), device
    cpu|cuda, whether the run checked a subset of the catalogue, and the implementation under test
    when it is not the default (module:function)."""

    numerics: NumericsMode = NumericsMode.EXACT
    dtype: DType | None = None
    device: str = "cpu"
    subset: bool = False
    impl: str | None = None
    reference_device: str = ""  # "": the reference runs on `device` too; "cpu": on the CPU (fast numerics)

    def __post_init__(self) -> None:
        """Names become members (`Mode("fast", "bfloat16")`); a ValueError names a bad one."""
        object.__setattr__(self, "numerics", NumericsMode(self.numerics))
        object.__setattr__(self, "dtype", None if self.dtype is None else DType(self.dtype))

    @property
    def is_default(self) -> bool:
        plain = self.dtype is None and not self.subset and self.impl is None and not self.reference_device
        return plain and self.numerics == NumericsMode.EXACT and self.device == "cpu"

    @property
    def key(self) -> str:
        """The mode's name: numerics-dtype-device, then -subset for a subset run and the
        implementation (module.function) when not the default."""
        name = f"{self.numerics}-{self.dtype or 'default'}-{self.device}"
        name += f"-reference-{self.reference_device}" if self.reference_device else ""
        return name + ("-subset" if self.subset else "") + (f"-{self.impl.replace(':', '.')}" if self.impl else "")

    @property
    def block(self) -> Block:
        """This mode's table in the page: the page's original block for the default mode, else `mutants:KEY`."""
        return DEFAULT_BLOCK if self.is_default else Block(f"mutants:{self.key}", COMMAND)

    @property
    def begin(self) -> str:
        """The line opening this mode's table in the page."""
        return self.block.begin

    @property
    def end(self) -> str:
        """The line closing this mode's table."""
        return self.block.end

    def describe(self) -> str:
        """One phrase for the table's summary line."""
        dtype = self.dtype or "the suite's dtypes"
        subset = ", subset of the catalogue" if self.subset else ""
        impl = f", implementation `{self.impl}`" if self.impl else ""
        ref = f", reference on {self.reference_device}" if self.reference_device else ""
        return f"{self.numerics} numerics, {dtype}, {self.device}{ref}{subset}{impl}"

    def pytest_args(self, device: str | None = None) -> list[str]:
        """The suite's options for this mode; `device` (e.g. cuda:1) in place of the mode's."""
        args = ["--numerics", self.numerics.value, "--device", device or self.device]
        args += ["--reference-device", self.reference_device] if self.reference_device else []
        return [*args, "--dtype", self.dtype.value] if self.dtype else args
