"""Errors with a context chain, like `anyhow::Error` and its alternate `{e:#}` form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ModelError(Exception):
    """A model operation failed. `context` wraps it with an outer message, newest first."""

    def __init__(self, message: str, *, cause: ModelError | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.cause = cause

    def context(self, message: str) -> ModelError:
        """A new error whose outermost message is `message` and whose cause is this one."""
        return ModelError(message, cause=self)

    def chain(self) -> list[str]:
        """Every message, outermost first."""
        out: list[str] = []
        e: ModelError | None = self
        while e is not None:
            out.append(e.message)
            e = e.cause
        return out

    def __str__(self) -> str:
        return self.message


def format_chain(e: BaseException) -> str:
    """The whole chain joined by ': ' (anyhow's `{e:#}`); plain exceptions give `str(e)`."""
    if isinstance(e, ModelError):
        return ": ".join(e.chain())
    return str(e) or type(e).__name__


def in_context(op: str, fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) with any ModelError wrapped in the context `op`."""
    try:
        return fn(*args)
    except ModelError as e:
        raise e.context(op) from None
