"""The test database: its URL for subprocesses, plain psycopg sessions outside Django's own
connection (another worker, an operator's shell), and a cheaper flush between tests."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection
from django.db.backends.base.operations import BaseDatabaseOperations


def on_mariadb() -> bool:
    """Whether this run's database is MariaDB (the suite runs on PostgreSQL and MariaDB)."""
    return settings.DATABASES["default"]["ENGINE"].endswith("mysql")


def plan_tables(node: object) -> list[dict]:
    """MariaDB: every table access of an EXPLAIN FORMAT=JSON plan, wherever it nests them."""
    if isinstance(node, dict):
        found = [node["table"]] if isinstance(node.get("table"), dict) else []
        return found + [table for value in node.values() for table in plan_tables(value)]
    if isinstance(node, list):
        return [table for value in node for table in plan_tables(value)]
    return []


@contextmanager
def other_collation() -> Iterator[tuple[str, str]]:
    """MariaDB: Django's session compares text in another collation than its own (the
    tables') while inside; yields (its own, the other)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@collation_connection")
        (own,) = cursor.fetchone()
        other = "utf8mb4_general_ci" if own != "utf8mb4_general_ci" else "utf8mb4_unicode_ci"
        cursor.execute(f"SET NAMES utf8mb4 COLLATE {other}")
        try:
            yield own, other
        finally:
            cursor.execute(f"SET NAMES utf8mb4 COLLATE {own}")


def database_url(port: int | None = None) -> str:
    """The test database's URL, for a subprocess; ``port``: through a proxy on this host."""
    db = settings.DATABASES["default"]
    scheme = "mysql" if on_mariadb() else "postgres"
    host = "127.0.0.1" if port else db["HOST"]
    return f"{scheme}://{db['USER']}@{host}:{port or db['PORT']}/{db['NAME']}"


class MariaDBSession:
    """A plain MariaDB session with psycopg's shape where the tests use it: ``execute``
    returns the cursor, ``commit``, ``rollback`` and ``close``, and ``with`` (commit or
    roll back, then close)."""

    def __init__(self, autocommit: bool) -> None:
        import MySQLdb  # only where the suite runs on MariaDB

        self._conn = MySQLdb.connect(**connection.get_connection_params())
        self._conn.autocommit(autocommit)

    def execute(self, statement: str, params: Any = None) -> Any:
        cursor = self._conn.cursor()
        cursor.execute(statement, params)
        return cursor

    def commit(self) -> None:
        self._conn.commit()

    def rollback(self) -> None:
        self._conn.rollback()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> MariaDBSession:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        # As psycopg's connection: commit unless the block raised, then close.
        try:
            if kind is None:
                self.commit()
            else:
                self.rollback()
        finally:
            self.close()


def raw_connection(autocommit: bool = True) -> Any:
    """A plain connection to the test database, outside Django's connection: psycopg's on
    PostgreSQL, a ``MariaDBSession`` on MariaDB."""
    if on_mariadb():
        return MariaDBSession(autocommit)
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return psycopg.connect(**params, autocommit=autocommit)


def flush_by_delete(truncate: Callable[..., list[str]]) -> Callable[..., list[str]]:
    """PostgreSQL's ``sql_flush`` (what a transactional test runs after itself), emptying
    the tables with DELETE instead of one TRUNCATE of every table.

    A TRUNCATE of the project's ~40 tables takes 0.7 s on a busy 2-core machine (new
    files for every table and index), a DELETE of the few rows a test leaves 0.05 s; with
    some 60 transactional tests that is most of ``make test-fast``. Django declares its
    foreign keys DEFERRABLE INITIALLY DEFERRED and runs the flush in one transaction, so
    the order of the deletes does not matter. A flush that resets sequences keeps TRUNCATE.
    """

    def sql_flush(
        ops: BaseDatabaseOperations,
        style: Any,
        tables: list[str],
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if reset_sequences:
            return truncate(ops, style, tables, reset_sequences=True, allow_cascade=allow_cascade)
        return [f"DELETE FROM {ops.quote_name(table)}" for table in tables]

    return sql_flush


# Sessions of the test database waiting for a lock another session holds (a row lock, a
# unique index entry not yet committed). On MariaDB the transactions come from InnoDB's
# monitor, written afresh at each call: information_schema.INNODB_TRX is a cache that is
# refreshed only after 0.1 s without readers, which a poll every 50 ms never leaves it.
_LOCK_WAITERS = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
)
_MARIADB_SESSIONS = "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE()"


def lock_waiters(observer: Any = None) -> int:
    """How many sessions of the test database wait for a lock, seen from ``observer`` (a
    ``raw_connection()``) or from Django's connection."""

    def run(statement: str) -> list[tuple[Any, ...]]:
        if observer is not None:
            return list(observer.execute(statement).fetchall())
        with connection.cursor() as cursor:
            cursor.execute(statement)
            return list(cursor.fetchall())

    if not on_mariadb():
        return run(_LOCK_WAITERS)[0][0]
    ours = {row[0] for row in run(_MARIADB_SESSIONS)}
    monitor = run("SHOW ENGINE INNODB STATUS")[0][2]
    waiting = {
        int(found.group(1))
        for transaction in monitor.split("\n---TRANSACTION ")
        if "\nLOCK WAIT " in transaction and (found := re.search(r"thread id (\d+)", transaction))
    }
    return len(waiting & ours)
