"""`Installed`: a recorder that a `with` block installs as the current one of its kind, in a context
variable, so that code deep in a run reaches it without passing it along."""

from __future__ import annotations

import contextvars
from typing import Any, ClassVar, Self


class Installed:
    """`with recorder:` sets the class's `CURRENT` context variable to `recorder` for the block and
    restores what it held before (so installs nest). A subclass names its own `CURRENT` and holds a
    `_token` field (None when not installed)."""

    __slots__ = ()
    CURRENT: ClassVar[contextvars.ContextVar[Any]]
    _token: contextvars.Token | None

    def __enter__(self) -> Self:
        self._token = self.CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        self.CURRENT.reset(self._token)
        self._token = None
