"""The docs are the tree's current truth: every file or folder `README.md` and `docs/*.md` name in
code spans exists in the project, every relative link resolves, every `python -m MODULE` they
give answers `--help` and none is a module's old name, and every measured figure they state names
the command that produced it (or says it was measured by hand, and how). A file renamed, a page
deleted, a command retired or a figure left without its command fails here, naming the page and
what it names."""

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


# Every measured figure names the command that produced it. The heuristic, kept simple and fast:
# - a page is cut into sections at its headings (outside fenced code), a section into blocks: a
#   fenced code block, a table (consecutive lines starting with `|`), or a paragraph (consecutive
#   other non-blank lines; a `<!-- ... -->` marker line ends a block);
# - a figure is, outside code spans, a number with a unit of time, memory or share (`s`, `ms`, `µs`,
#   `min`, `h`, `GiB`, `MiB`, `GB`, `MB`, `%`), a ratio (`6.6x`) or a count of a whole (`102/102`);
#   in a paragraph a `%` does not count, since there it is as often a design's share (one world in
#   eight, a 1 % budget) as a measurement;
# - a command is a code span, or a line of a fenced code block, that starts with `python -m`,
#   `python3 -m`, `.ci/run`, `bash `, `pytest` or `.venv/bin/`, or a note `(measured by hand: ...)`
#   for a figure no command reproduces;
# - every block that holds a figure has a command of its own section inside it or within
#   `NEAR_LINES` lines before or after it; a table with a `command` column has one in every row
#   that holds a figure (each row was measured by a command of its own).
# Strings of a page that read as figures and are none are listed in NOT_FIGURES, each with why.
NEAR_LINES = 12
_NUMBER = r"(?<![\w.,/])\d+(?:[.,]\d+)*"
_UNITS = r"\s?(?:s|ms|µs|us|min|h|GiB|MiB|GB|MB{pct})(?![\w/(])"
_RATIO = r"|" + _NUMBER + r"x(?![\w(])|" + _NUMBER + r"/\d+(?![\w./])"
TABLE_FIGURE = re.compile(_NUMBER + _UNITS.format(pct="|%") + _RATIO)
PROSE_FIGURE = re.compile(_NUMBER + _UNITS.format(pct="") + _RATIO)
COMMAND = re.compile(r"^(?:python3? -m |\.ci/run|bash |pytest|\.venv/bin/)")
BY_HAND = re.compile(r"\(measured\s+by\s+hand:\s[^)]+\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
SEPARATOR = re.compile(r"^\|[\s:|-]+\|$")
NOT_FIGURES = {
    ("nightly.md", "256 MiB"): "the size past which an observability file keeps failing cases only, a setting",
    ("samplers.md", "1/4"): "the grid of the FlashInfer test's rows, a setting",
    ("samplers.md", "1/2"): "a token's probability near one half, in an argument",
}


def _commands(line: str, in_code: bool) -> bool:
    """Whether one row or code line gives a command."""
    if in_code:
        return bool(COMMAND.match(line.strip()))
    return any(COMMAND.match(s.strip("`")) for s in CODE_SPAN.findall(line)) or bool(BY_HAND.search(line))


def _command_lines(kind: str, first: int, lines: list[str]) -> list[int]:
    """The line numbers where a block gives a command; a paragraph's code span may wrap a line."""
    if kind != "text":
        return [first + i for i, line in enumerate(lines) if _commands(line, kind == "code")]
    text = "\n".join(lines)
    spans = [m for m in re.finditer(r"`([^`]+)`", text) if COMMAND.match(" ".join(m.group(1).split()))]
    notes = list(BY_HAND.finditer(text))
    return [first + text.count("\n", 0, m.start()) for m in spans + notes]


def _blocks(text: str) -> list[list[tuple[str, int, list[str]]]]:
    """The page's sections, each a list of blocks (kind, first line number, lines)."""
    sections: list[list[tuple[str, int, list[str]]]] = [[]]
    kind, first, lines = "", 0, []

    def end() -> None:
        nonlocal kind, lines
        if lines:
            sections[-1].append((kind, first, lines))
        kind, lines = "", []

    fence = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if fence:
                fence = False
                end()
            else:
                end()
                fence, kind, first = True, "code", n + 1
            continue
        if fence:
            lines.append(line)
            continue
        if re.match(r"#{1,6} ", line):
            end()
            sections.append([])
            continue
        if not line.strip() or line.startswith("<!--"):
            end()
            continue
        now = "table" if line.startswith("|") else "text"
        if now != kind:
            end()
            kind, first = now, n
        lines.append(line)
    end()
    return sections


def figures(line: str, table: bool, page: str = "") -> list[str]:
    """The figures of one line (its code spans already blanked), less the page's NOT_FIGURES."""
    return [f for f in (TABLE_FIGURE if table else PROSE_FIGURE).findall(line) if (page, f) not in NOT_FIGURES]


def _blank_code_spans(lines: list[str]) -> list[str]:
    """The block's lines with every code span, a wrapped one too, blanked (line count kept)."""
    text = re.sub(r"`[^`]+`", lambda m: "\n" * m.group().count("\n"), "\n".join(lines))
    return text.split("\n")


def figures_without_a_command(text: str, page: str = "") -> list[str]:
    """Each block of `text` that holds a figure with no command near it, as 'line N: figures'."""
    out = []
    for section in _blocks(text):
        commands = [n for block in section for n in _command_lines(*block)]
        for kind, first, lines in section:
            if kind == "code":
                continue
            table = kind == "table"
            rows = [(first + i, line) for i, line in enumerate(_blank_code_spans(lines)) if not SEPARATOR.match(line)]
            found = [(n, f) for n, line in rows for f in figures(line, table, page)]
            if not found:
                continue
            last = first + len(lines) - 1
            if not any(first - NEAR_LINES <= c <= last + NEAR_LINES for c in commands):
                out.append(f"line {found[0][0]}: {', '.join(f for _, f in found[:4])}")
            header = [c.strip().lower() for c in lines[0].strip("|").split("|")] if table else []
            if any(c.startswith("command") for c in header):
                for i, line in enumerate(lines[2:], 2):
                    if figures(CODE_SPAN.sub("", line), True, page) and not _commands(line, False):
                        out.append(f"line {first + i}: a row of a table with a command column names none")
    return out


def test_a_table_of_figures_without_its_command_is_found() -> None:
    """The heuristic itself: a table of timings with no command fails, one with its command passes,
    and so does a figure measured by hand that says so; a command must be in the figure's section."""
    table = "| run | time |\n|---|---:|\n| one | 4.2 s |\n| two | 98 % |\n"
    assert figures_without_a_command(f"# Page\n\n## Timings\n\n{table}") == ["line 7: 4.2 s, 98 %"]
    assert figures_without_a_command(f"## Timings\n\n{table}\n`python -m mutants.run --max-n 8`\n") == []
    assert figures_without_a_command(f"## Timings\n\n{table}" + "\n" * NEAR_LINES + "\n`.ci/run`\n") != []
    assert figures_without_a_command("## Run\n\nIt took 12 s and 3/3 passed (measured by hand: a stopwatch).\n") == []
    assert figures_without_a_command("## Run\n\nIt took 12 s (`python -m\nnightly --minutes 1`).\n") == []
    assert figures_without_a_command("## Run\n\nIt took 12 s.\n\n## Next\n\n`python -m nightly`\n") == ["line 3: 12 s"]
    assert figures_without_a_command("## Design\n\nOne world in eight, about 7 % of them, `--budget-s 570`.\n") == []
    rows = "| what | figure | command |\n|---|---|---|\n| a | 5 s | `.ci/run` |\n| b | 6 s | - |\n"
    assert figures_without_a_command(f"## All\n\n{rows}") == [
        "line 6: a row of a table with a command column names none"
    ]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_figure_names_the_command_that_measured_it(page: Path) -> None:
    missing = figures_without_a_command(page.read_text(), page.name)
    assert not missing, (
        f"{page.relative_to(ROOT)} holds measured figures with no command (a `python -m ...` code span or "
        f"block within {NEAR_LINES} lines in the same section, or '(measured by hand: ...)'): {missing}"
    )


def test_no_page_names_a_module_that_moved() -> None:
    """A command or module a page names is at its new place (`properties/moved.py`), not the old
    name that still works for one release with a warning."""
    from properties.moved import MOVED

    old = re.compile(
        r"(?<![\w.])(" + "|".join(re.escape(m) for m in sorted(MOVED, key=len, reverse=True)) + r")(?!\w|\.\w)"
    )
    named = sorted(
        f"{page.relative_to(ROOT)}: {m} (now {MOVED[m]})" for page in PAGES for m in old.findall(page.read_text())
    )
    assert not named, f"pages that name a moved module by its old name: {named}"
