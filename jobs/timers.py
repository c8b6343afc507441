"""Timers: functions that run every few minutes, from cron or from django-q2's scheduler,
declared once for both, in an app's ``tasks`` module beside its job types:

    @jobs.periodic("sweep", every=300)
    def sweep_emails() -> str: ...

``manage.py sweep`` runs every function of the ``sweep`` timer. Each function runs under a
lock named after it (a PostgreSQL advisory lock, MariaDB's GET_LOCK), so two runs at the
same moment (two cron hosts, cron and django-q2) never do the same work twice: the second
one skips it. The lock is held on a session of its own (see ``_StepLocks``); on PostgreSQL
by a transaction, so it works the same through a pooler in transaction mode.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from jobs import sql

logger = logging.getLogger("jobs.timers")


@dataclass(frozen=True)
class TimerStep:
    timer: str
    name: str
    every: int  # seconds
    func: Callable[[], object]


_steps: dict[str, list[TimerStep]] = {}


def periodic[Step: Callable[[], object]](timer: str, *, every: int) -> Callable[[Step], Step]:
    """Add the decorated function to ``timer``, which runs every ``every`` seconds."""

    def register(func: Step) -> Step:
        name = f"{func.__module__}.{func.__qualname__}"
        steps = _steps.setdefault(timer, [])
        if not any(step.name == name for step in steps):
            steps.append(TimerStep(timer, name, every, func))
        return func

    return register


def timers() -> dict[str, list[TimerStep]]:
    return {name: list(steps) for name, steps in _steps.items()}


def interval(timer: str) -> int:
    return min(step.every for step in _steps[timer])


def run_timer(timer: str) -> dict[str, object]:
    """Run every step of ``timer``; returns each step's result (or "skipped")."""
    if timer not in _steps:
        raise KeyError(f"Unknown timer {timer!r}; known timers: {', '.join(sorted(_steps)) or 'none'}.")
    results: dict[str, object] = {}
    with _StepLocks() as locks:
        for step in _steps[timer]:
            with locks.hold(step.name) as acquired:
                if not acquired:
                    results[step.name] = "skipped: already running elsewhere"
                    continue
                try:
                    results[step.name] = step.func()
                except Exception as exc:  # one failing step must not stop the others
                    logger.exception("Timer step %s failed.", step.name)
                    results[step.name] = f"failed: {exc}"
    return results


class _StepLocks:
    """Each step's lock: advisory on PostgreSQL, GET_LOCK on MariaDB; elsewhere a no-op.

    The lock is transaction-level, held by an open transaction on a session of its own
    while the step does its work on the default connection. A session-level lock would
    outlive the step in the server session behind a transaction pooler (and be released by
    whoever ran there next, or never); a transaction around the step's own work would make
    every write of the step wait for its end. The lock session takes no snapshot it keeps
    (READ COMMITTED, no writes), so its open transaction holds back no vacuum; if the
    process dies, the session ends and the lock with it.
    """

    def __init__(self) -> None:
        self._session: BaseDatabaseWrapper | None = None

    def __enter__(self) -> _StepLocks:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    @contextmanager
    def hold(self, name: str) -> Iterator[bool]:
        if connection.vendor == "mysql":
            yield from self._hold_named_lock(name)
            return
        if connection.vendor != "postgresql":
            yield True
            return
        session = self._open()
        session.set_autocommit(False)
        try:
            with session.cursor() as cursor:
                cursor.execute(sql.TRY_LOCK_TIMER_STEP, [zlib.crc32(f"jobs.timer:{name}".encode())])
                row = cursor.fetchone()
            yield bool(row and row[0])
        finally:
            session.rollback()  # ends the transaction: the lock goes with it
            session.set_autocommit(True)

    def _hold_named_lock(self, name: str) -> Iterator[bool]:
        """MariaDB and MySQL: GET_LOCK on a session of its own, released after the step."""
        session = self._open()
        key = zlib.crc32(name.encode())  # named with the database, see sql.MARIADB_TRY_LOCK_TIMER_STEP
        with session.cursor() as cursor:
            cursor.execute(sql.MARIADB_TRY_LOCK_TIMER_STEP, [key])
            row = cursor.fetchone()
        held = bool(row and row[0] == 1)
        try:
            yield held
        finally:
            if held:
                with session.cursor() as cursor:
                    cursor.execute(sql.MARIADB_UNLOCK_TIMER_STEP, [key])

    def _open(self) -> BaseDatabaseWrapper:
        if self._session is None:
            self._session = connections.create_connection(DEFAULT_DB_ALIAS)
        return self._session
