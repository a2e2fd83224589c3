"""The docs are the tree's current truth: every file or folder `README.md` and `docs/*.md` name in
code spans exists in the project, every relative link resolves, and every `python -m MODULE` they
give answers `--help`. A file renamed, a page deleted or a command retired fails here, naming the
page and what it names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Names the docs use for what is not in the tree, each with why.
NOT_IN_TREE = {
    "mtp_bootstrap_batched.rs": "the engine's own source of the batched step, outside the project",
    "REPORT.json": "a benchmark job's output, in its results folder",
    "environment.json": "a job's output",
    "logs/": "a job's output folder",
    "replays/": "a job's output folder (the nightly's failures)",
    "report/benchmarks.md": "a benchmark job's output",
    "report.md": "a job's output",
    "summary.json": "a job's output",
    "summary.md": "a job's output",
}
PATH_LIKE = re.compile(r"[A-Za-z0-9_.\-/*]+")
FILE_LIKE = re.compile(r"\.(py|md|toml|json|sh|txt|rs)$")
PLACEHOLDER = re.compile(r"NAME|FILE|DIR|CASE|PATH|REPLAY|NNN|^\$|^/|^\.\.|^http|^\.hypothesis|^artifacts")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
MODULE = re.compile(r"python3? -m ([A-Za-z_][A-Za-z0-9_.]*)")
NOT_OURS = {"pip", "venv", "pytest"}


def project_paths() -> set[str]:
    """Every file git knows or would add (tracked, or untracked and not ignored), and each folder with a '/'."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    if listed.returncode != 0:  # not a checkout (an installed copy): the files on disk
        files = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]
    else:
        files = listed.stdout.split()
    out = set(files)
    for f in files:
        parts = f.split("/")
        out |= {"/".join(parts[:i]) + "/" for i in range(1, len(parts))}
    return out


PATHS = project_paths()
TOP = {p.split("/")[0] for p in PATHS}


def exists(name: str) -> bool:
    """`name` is a project path: from the root when it starts with a top-level entry, else the tail
    of one (a page's `step.py` under a heading that names its folder); `*` matches within a name."""
    if "*" in name:
        pattern = re.compile("(^|/)" + re.escape(name).replace(r"\*", "[^/]*") + "$")
        return any(pattern.search(p) for p in PATHS)
    if name.split("/")[0] in TOP and "/" in name:
        return name in PATHS or name + "/" in PATHS
    return any(p == name or p.endswith("/" + name) for p in PATHS)


def named_paths(text: str) -> set[str]:
    """The file and folder names in a page's code spans."""
    out = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        for word in span.split():
            word = word.strip("(),;:'\"")
            if (
                PATH_LIKE.fullmatch(word)
                and (FILE_LIKE.search(word) or word.endswith("/"))
                and not PLACEHOLDER.search(word)
            ):
                out.add(word)
    return out


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_path_a_page_names_exists(page: Path) -> None:
    missing = sorted(n for n in named_paths(page.read_text()) if n not in NOT_IN_TREE and not exists(n))
    assert not missing, f"{page.relative_to(ROOT)} names what the project does not hold: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_link_resolves(page: Path) -> None:
    broken = sorted(
        t for t in LINK.findall(page.read_text()) if not t.startswith("http") and not (page.parent / t).exists()
    )
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


HELP_ALL = """
import contextlib, io, json, runpy, sys
out = {}
for mod in sys.argv[1:]:
    sys.argv, buf = [mod, "--help"], io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            runpy.run_module(mod, run_name="__main__", alter_sys=True)
        out[mod] = "ran without printing its help and exiting"
    except SystemExit as e:
        ok = e.code in (0, None) and "usage:" in buf.getvalue()
        out[mod] = "" if ok else f"exit {e.code}: {buf.getvalue()[-300:]}"
    except BaseException as e:
        out[mod] = repr(e)
print(json.dumps(out))
"""


def test_every_command_the_docs_give_answers_help() -> None:
    modules = sorted({m for page in PAGES for m in MODULE.findall(page.read_text())} - NOT_OURS)
    assert "properties.run.verify" in modules and "mutants.run" in modules, modules
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", HELP_ALL, *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    failed = {m: why for m, why in json.loads(done.stdout.strip().splitlines()[-1]).items() if why}
    assert not failed, f"commands in the docs that do not answer --help: {failed}"
