"""One command makes any failure a permanent regression case:

    python -m properties.promote FILE --name NAME [--note TEXT] [--force] [--impl NAME]

A step's world becomes a case of `properties/step/regressions/` (`properties.failures.promote`), a
generation's script one of `properties/generations/regressions/` (`properties.generations.promote`);
the kind is read from the file as `python -m properties.replay` reads it. A case of the draw oracles
(P10) is not promoted: its replay is its check. The options after FILE go to the kind's own promote.
"""

from __future__ import annotations

from pathlib import Path

from properties.replay import forward, kind_of

PROMOTES = {
    "properties.failures.replay": "properties.failures.promote",
    "properties.generations.replay": "properties.generations.promote",
}


def promote_of(path: Path) -> str:
    """The promote module of `path`'s kind; ValueError for a file that is no replay or not promoted."""
    what, replay = kind_of(path)
    if replay not in PROMOTES:
        raise ValueError(f"{path}: {what} is not promoted; `python -m properties.replay {path}` checks it")
    return PROMOTES[replay]


def main(argv: list[str] | None = None) -> int:
    return forward(
        argv, "python -m properties.promote", __doc__, promote_of, "options of the kind's promote (--name, ...)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
