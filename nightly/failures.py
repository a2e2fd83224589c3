"""What a failed test's report says, cut down to what a person needs: the property's own report
(`properties.report`: the shrunk mix, the first differences, the behaviours involved) or the error,
the command that replays it, and Hypothesis's `@reproduce_failure` line."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINES = 40
REPLAY_PREFIX = "replay: "
REPLAY_COMMAND = "python -m properties.replay "
HYPOTHESIS_TRAILERS = ("Failing test case:", "Falsifying example:", "Falsifying explicit example:")
_REPRODUCE = re.compile(r"@reproduce_failure\([^)]*\)")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failure|Exit)\b:? ?")


@dataclass(slots=True, frozen=True)
class FailureText:
    """`replay`: the arguments of the replay command (the spec file, then any `--impl`)."""

    text: str
    replay: str | None
    reproduce: str | None


def error_lines(longrepr: str) -> list[str]:
    """The `E` lines of a pytest failure report without their prefix: the exception and its notes."""
    out = []
    for line in longrepr.splitlines():
        if line.startswith("E") and line[1:8].strip() == "":
            out.append(line[8:])
    return out


def parse_failure(longrepr: str) -> FailureText:
    """The readable part of a failure report. A property's report runs from the exception line to
    its `replay:` line; any other failure keeps its error lines up to Hypothesis's restatement of
    the failing example (at most `MAX_LINES`). A crash report (no `E` lines) is kept whole."""
    lines = error_lines(longrepr)
    reproduce = next((m.group(0) for s in lines if (m := _REPRODUCE.search(s))), None)
    if not lines:
        return FailureText("\n".join(longrepr.strip().splitlines()[-MAX_LINES:]), None, reproduce)
    replay_at = next((i for i, s in enumerate(lines) if s.strip().startswith(REPLAY_PREFIX)), None)
    if replay_at is not None:
        body = lines[: replay_at + 1]
        replay = body[-1].strip().removeprefix(REPLAY_PREFIX).removeprefix(REPLAY_COMMAND)
        body = [_EXCEPTION_LINE.sub("", body[0], count=1)] + [s.removeprefix("  ") for s in body[1:-1]]
        return FailureText("\n".join(body).rstrip(), replay, reproduce)
    end = next((i for i, s in enumerate(lines) if s.startswith(HYPOTHESIS_TRAILERS)), len(lines))
    return FailureText("\n".join(lines[: min(end, MAX_LINES)]).rstrip(), None, reproduce)
