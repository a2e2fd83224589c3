"""What the two promote commands share: a regression case's name, its file written only where no
other case of that name is in the way, and the command line."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def write_case(dest_dir: Path, name: str, text: str, force: bool, what: str) -> Path:
    """Write `text` to `dest_dir/NAME.json` and return that path. ValueError for a name that is not
    lower-case letters, digits, `_` and `-` (at most 64); FileExistsError when another `what` has
    that name (unless `force`)."""
    if not NAME.fullmatch(name):
        raise ValueError(f"--name {name!r}: use lower-case letters, digits, '_' and '-' (at most 64)")
    dest = dest_dir / f"{name}.json"
    if dest.exists() and dest.read_text() != text and not force:
        raise FileExistsError(f"{dest} exists with another {what}: choose another --name or pass --force")
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def promote_main(
    argv: list[str] | None,
    parser: argparse.ArgumentParser,
    promote: Callable[[Path, str | None, str, bool], Path],
    replayed_by: str,
    fails_now: Callable[[Path, str], str | None],
) -> int:
    """A promote command: parse `argv`, `promote` the source (2, with the reason, when that is
    refused), then say where the case is replayed (`replayed_by`) and whether it fails here now
    (`fails_now(dest, impl)`: how, or None when it passes)."""
    args = parser.parse_args(argv)
    try:
        dest = promote(args.source, args.name, args.note, args.force)
    except (ValueError, FileExistsError) as e:
        print(e, file=sys.stderr)
        return 2
    print(f"promoted to {dest}; {replayed_by} replays it on every run")
    failure = fails_now(dest, args.impl)
    print(f"it fails here now{failure}: commit it with the fix" if failure is not None else "it passes here now")
    return 0


def promote_parser(prog: str, doc: str | None, source: str, default_impl: str) -> argparse.ArgumentParser:
    """The promote command line: the file (`source` says what it is), --name, --note, --force, --impl."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help=source)
    parser.add_argument("--name", default=None, help="the regression's name (default: the file's name)")
    parser.add_argument("--note", default="", help="what the case caught, kept in the file")
    parser.add_argument("--force", action="store_true", help="replace a regression of the same name")
    parser.add_argument("--impl", default=default_impl, help="the implementation to check it against now")
    return parser
