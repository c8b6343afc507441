"""Our workers as a fleet runs them: ``manage.py runworker`` processes whose queries go
through a PgBouncer of the benchmark's own in transaction mode, LISTEN over a direct
connection; and what they cost PostgreSQL (sessions, backend CPU) and the pooler.

Needs Django set up first (``bench.lib.project.setup``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from django.db import connection

from bench.lib.processes import Pool, process_cpu_seconds
from bench.lib.project import ROOT
from tests.support.pgbouncer import PgBouncer


def direct_url(application_name: str = "") -> str:
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return f"{url}?application_name={application_name}" if application_name else url


def pooled_environment(bouncer: PgBouncer | None, *, listen: bool = True, name: str = "") -> dict[str, str]:
    """A worker's environment: queries through ``bouncer`` (or straight to PostgreSQL when
    None), LISTEN direct (or polling), sessions tagged ``application_name=name``."""
    suffix = f"?application_name={name}" if name else ""
    env = {**os.environ, "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    if bouncer is None:
        env["DATABASE_URL"] = direct_url(name)
        return env
    env.update(
        {
            "DATABASE_URL": bouncer.url(connection.settings_dict["NAME"]) + suffix,
            "JOBS_DATABASE_POOL_MODE": "transaction",
        }
    )
    if listen:
        env["JOBS_LISTEN_DATABASE_URL"] = direct_url(name)
    return env


def start_worker(env: dict[str, str], *args: str, log: Path | None = None) -> Pool:
    """One ``runworker`` (a task); its output goes to ``log`` when given."""
    stdout = open(log, "a") if log else None  # noqa: SIM115 - the worker holds it until it exits
    return Pool([[sys.executable, "manage.py", "runworker", *args]], ROOT, env, stdout=stdout)


def scalar(query: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchone()[0]


def sessions(application_name: str) -> dict[str, int]:
    """This database's sessions tagged ``application_name``, by what they do: ``listen``
    (the wake-up connection) and ``other`` (supervisor and children)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT query LIKE 'LISTEN %%', count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = %s GROUP BY 1",
            [application_name],
        )
        rows = dict(cursor.fetchall())
    return {"listen": rows.get(True, 0), "other": rows.get(False, 0)}


def backend_pids() -> list[int]:
    """Every PostgreSQL backend of this database but the harness's own: the pooler's server
    sessions and the direct ones (listeners, or every session without a pooler)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return [row[0] for row in cursor.fetchall()]


class CpuMeter:
    """CPU seconds that PostgreSQL's backends for this database, and the pooler, spend
    between ``start()`` and ``stop()``. Backends that appear meanwhile count from their
    start; the harness's own session is left out. Background processes (WAL writer,
    checkpointer, autovacuum) serve every database of the server and are not counted."""

    def __init__(self, bouncer: PgBouncer | None) -> None:
        self.bouncer = bouncer
        self._before: dict[int, float] = {}
        self._pooler_before = 0.0
        self.database = 0.0
        self.pooler = 0.0

    def _backends(self) -> dict[int, float]:
        return {pid: process_cpu_seconds(pid) for pid in backend_pids()}

    def _pooler(self) -> float:
        return process_cpu_seconds(self.bouncer.process.pid) if self.bouncer else 0.0

    def start(self) -> None:
        self._before = self._backends()
        self._pooler_before = self._pooler()

    def stop(self) -> None:
        after = self._backends()
        self.database = sum(cpu - self._before.get(pid, 0.0) for pid, cpu in after.items())
        self.pooler = self._pooler() - self._pooler_before
