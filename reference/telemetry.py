"""Logging for the step: a `logging` logger, once-per-key telemetry, and a capture the properties read."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

LOGGER_NAME = "metrale.scheduler"
log = logging.getLogger(LOGGER_NAME)


@dataclass(slots=True)
class Telemetry:
    """Per-process stats. `once(key)` is true the first time a key is seen, false after."""

    seen: set[str] = field(default_factory=set)

    def once(self, key: str) -> bool:
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


@dataclass(slots=True, frozen=True)
class LogRecord:
    """One captured log line: level name (DEBUG, INFO, WARNING, ERROR) and formatted message."""

    level: str
    message: str


class LogCapture(logging.Handler):
    """Collects every record of the scheduler logger while installed (a context manager)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[LogRecord] = []
        self._old_level = logging.NOTSET
        self._old_propagate = True

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(LogRecord(record.levelname, record.getMessage()))

    def __enter__(self) -> LogCapture:
        self._old_level = log.level
        self._old_propagate = log.propagate
        log.setLevel(logging.DEBUG)
        log.propagate = False
        log.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        log.removeHandler(self)
        log.setLevel(self._old_level)
        log.propagate = self._old_propagate
