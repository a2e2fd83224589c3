"""The example database the nightly job writes and developers' runs read.

One host: a directory (`.hypothesis/nightly` by default). Several hosts: the same directory on each
host multiplexed with one Redis server (`redis://host:port/db`), so that every host replays what any
host found and keeps a local copy. Developers read it through `ReadOnlyDatabase`: their runs replay
the nightly's failures but never save to it or delete from it (a failure that does not reproduce on
a developer's branch stays for the nightly to judge).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

REDIS_SCHEMES = ("redis", "rediss", "unix")


def is_redis_url(spec: str | None) -> bool:
    """True when `spec` names a Redis server rather than a directory."""
    return bool(spec) and urlsplit(str(spec)).scheme in REDIS_SCHEMES


def connect_redis(url: str) -> Any:
    """A Redis client for `url` (no connection is made until first use). Needs the `redis`
    package, which the `redis` extra of this project installs."""
    try:
        import redis
    except ImportError:
        raise RuntimeError(
            f"example database {redact(url)}: a Redis database needs the redis package (pip install -e '.[redis]')"
        ) from None
    return redis.Redis.from_url(url)


def redis_database(url: str, connect: Callable[[str], Any] = connect_redis) -> ExampleDatabase:
    from hypothesis.extra.redis import RedisExampleDatabase

    return RedisExampleDatabase(connect(url))


def nightly_database(
    spec: str | None, directory: Path, connect: Callable[[str], Any] = connect_redis
) -> ExampleDatabase:
    """What the nightly profile reads and writes: the directory `spec` names (or `directory` when
    `spec` is empty), or for a Redis URL `directory` and the Redis server together."""
    if not is_redis_url(spec):
        return DirectoryBasedExampleDatabase(Path(spec) if spec else directory)
    return MultiplexedDatabase(DirectoryBasedExampleDatabase(directory), redis_database(str(spec), connect))


def developer_database(own: Path, nightly: ExampleDatabase) -> ExampleDatabase:
    """A developer's runs: their own directory, read and written, and the nightly database read-only."""
    return MultiplexedDatabase(DirectoryBasedExampleDatabase(own), ReadOnlyDatabase(nightly))


def redact(url: str) -> str:
    """`url` without its password, for logs and reports."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def describe(spec: str | None, directory: Path) -> str:
    """One line naming where the nightly database lives."""
    if is_redis_url(spec):
        return f"{redact(str(spec))} (Redis, shared) + directory {directory}"
    return f"directory {Path(spec) if spec else directory}"
