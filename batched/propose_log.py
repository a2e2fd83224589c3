"""B25: how a failed batched propose is logged."""

from __future__ import annotations

from reference.errors import format_chain
from reference.telemetry import log

META_STRIDE_TEXT = "exceeds meta stride"


def log_propose_batched_err(prefix: str, e: BaseException) -> None:
    """Debug, every time, when the whole error chain mentions the meta-stride overflow (B26);
    error otherwise."""
    msg = format_chain(e)
    if META_STRIDE_TEXT in msg:
        log.debug(f"{prefix}: {msg}")
    else:
        log.error(f"{prefix}: {msg}")
