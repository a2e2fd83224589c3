"""The nightly example database: a directory, or a directory with a Redis server shared by several
hosts; developers read it without writing to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase, MultiplexedDatabase

from properties.run.databases import describe, developer_database, is_redis_url, nightly_database, redact

fakeredis = pytest.importorskip("fakeredis", reason="an optional dependency (the dev extra)")

KEY, VALUE = b"test key", b"an example"


def shared_server() -> object:
    server = fakeredis.FakeServer()
    return lambda url: fakeredis.FakeRedis(server=server)


def test_a_path_or_nothing_is_a_directory_database(tmp_path: Path) -> None:
    assert nightly_database(None, tmp_path) == DirectoryBasedExampleDatabase(tmp_path)
    assert nightly_database(str(tmp_path / "x"), tmp_path) == DirectoryBasedExampleDatabase(tmp_path / "x")
    assert not is_redis_url(str(tmp_path)) and is_redis_url("redis://h:6379/0") and is_redis_url("rediss://h/1")


def test_hosts_share_examples_through_redis_and_keep_a_local_copy(tmp_path: Path) -> None:
    connect = shared_server()
    host_a = nightly_database("redis://nightly:6379/0", tmp_path / "a", connect)
    host_b = nightly_database("redis://nightly:6379/0", tmp_path / "b", connect)
    assert isinstance(host_a, MultiplexedDatabase)
    host_a.save(KEY, VALUE)
    assert list(host_b.fetch(KEY)) == [VALUE], "host b replays what host a found"
    assert list(DirectoryBasedExampleDatabase(tmp_path / "a").fetch(KEY)) == [VALUE], "host a keeps a local copy"


def test_developers_replay_the_nightly_database_but_never_change_it(tmp_path: Path) -> None:
    connect = shared_server()
    nightly = nightly_database("redis://nightly:6379/0", tmp_path / "nightly", connect)
    nightly.save(KEY, VALUE)
    dev = developer_database(tmp_path / "dev", nightly_database("redis://nightly:6379/0", tmp_path / "mine", connect))
    assert VALUE in list(dev.fetch(KEY))
    dev.delete(KEY, VALUE)
    dev.save(KEY, b"a developer's own example")
    assert list(nightly.fetch(KEY)) == [VALUE], "the nightly database is unchanged"
    assert list(DirectoryBasedExampleDatabase(tmp_path / "dev").fetch(KEY)) == [b"a developer's own example"]


def test_a_directory_nightly_database_is_read_only_for_developers(tmp_path: Path) -> None:
    nightly = nightly_database(None, tmp_path / "nightly")
    nightly.save(KEY, VALUE)
    dev = developer_database(tmp_path / "dev", nightly)
    dev.delete(KEY, VALUE)
    assert list(nightly.fetch(KEY)) == [VALUE]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@host:6379/0", "redis://:***@host:6379/0"),
        ("redis://user:pw@host/2", "redis://user:***@host/2"),
        ("redis://host:6379/0", "redis://host:6379/0"),
    ],
)
def test_reports_never_show_a_password(url: str, shown: str) -> None:
    assert redact(url) == shown
    assert "s3cret" not in describe(url, Path("d")) and shown in describe(url, Path("d"))
