"""The benchmarks' own databases on the local PostgreSQL, through psycopg alone."""

from __future__ import annotations

import os
from collections.abc import Sequence

import psycopg

SERVER = os.environ.get("BENCH_PG_SERVER", "postgresql://postgres@127.0.0.1:5432")


def peer_database(name: str) -> str:
    """A peer's database name, with BENCH_DATABASE_SUFFIX appended: two checkouts measuring
    on one server at once keep to their own databases."""
    return name + os.environ.get("BENCH_DATABASE_SUFFIX", "")


def dsn(database: str, application_name: str | None = None) -> str:
    url = f"{SERVER}/{database}"
    return f"{url}?application_name={application_name}" if application_name else url


def recreate_database(name: str) -> None:
    """Drop and create ``name`` (only ever one of the benchmark's own databases)."""
    with psycopg.connect(dsn("postgres"), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def ensure_database(name: str) -> None:
    with psycopg.connect(dsn("postgres"), autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


class Database:
    """An autocommit connection for polling a system's job tables."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.connection = psycopg.connect(dsn(name, "bench-harness"), autocommit=True)

    def scalar(self, query: str, params: Sequence | None = None):
        return self.connection.execute(query, params or []).fetchone()[0]

    def execute(self, query: str, params: Sequence | None = None) -> None:
        self.connection.execute(query, params or [])

    def listeners(self) -> int:
        return self.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND query ILIKE 'LISTEN %%'",
            [self.name],
        )

    def sessions(self, application_name: str) -> int:
        return self.scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
            [self.name, application_name],
        )

    def close(self) -> None:
        self.connection.close()
