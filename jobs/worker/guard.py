"""The database guard: how the supervisor lives through a database outage.

Every database call of the supervisor goes through ``DatabaseGuard.call``. When the
database cannot be reached the call returns None instead of raising, the connection is
dropped, and further calls are skipped for a backoff (doubling from 0.25 s up to 5 s), so
the supervisor goes on running the jobs it holds and keeps their results in memory. At
start-up ``start_up`` retries until the worker is registered. A lock conflict (a deadlock,
a lock wait timed out: the driver says which errors are) is no outage: the call returns
None as well, and the next turn tries again at once, on the same connection.

It also keeps the rule for reaping: another worker's job is judged abandoned only once
this worker has had the database for a full lease (``may_reap``); and it sets up how the
supervisor's session commits (``commit_asynchronously``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import InterfaceError, OperationalError, connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from jobs.drivers import for_connection

logger = logging.getLogger("jobs.worker")

OUTAGE_ERRORS = (OperationalError, InterfaceError)

BACKOFF_FIRST = 0.25  # seconds without database calls after the first failed one
BACKOFF_MAX = 5.0  # ... doubling on each further failure, up to this
START_UP_FIRST = 0.5  # seconds between tries to register at start-up, doubling
START_UP_MAX = 30.0

P = ParamSpec("P")
T = TypeVar("T")


class DatabaseGuard:
    def __init__(
        self,
        lease: float,
        *,
        on_outage: Callable[[], None] = lambda: None,
        close_connection: Callable[[], None] | None = None,
        is_conflict: Callable[[BaseException], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lease = lease  # how long another worker's heartbeat may stay silent (JOBS_WORKER_LEASE)
        self._on_outage = on_outage  # e.g. drop the LISTEN connection too
        self._close_connection = close_connection or close_django_connection
        self._is_conflict = is_conflict or is_lock_conflict
        self._clock = clock
        self._backoff = 0.0  # 0 while the database answers
        self._retry_at = 0.0  # no database call before this
        self._reap_from = 0.0  # no reaping before this

    @property
    def retry_at(self) -> float:
        """No database call is made before this moment (past while the database answers)."""
        return self._retry_at

    def available(self, now: float) -> bool:
        """May the supervisor try the database at ``now``?"""
        return now >= self._retry_at

    def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        """Run one database call; None if it was skipped or the database is unreachable."""
        if self._clock() < self._retry_at:
            return None
        try:
            result = fn(*args, **kwargs)
        except OUTAGE_ERRORS as exc:
            if self._is_conflict(exc):
                # Rolled back by the database, which is there: no backoff, no reconnect, and
                # the lease this worker has had the database for goes on.
                logger.info(
                    "Database call rolled back by a lock conflict (%s); trying again.", first_line(exc)
                )
                return None
            self._backoff = min(max(self._backoff * 2, BACKOFF_FIRST), BACKOFF_MAX)
            self._retry_at = self._clock() + self._backoff
            logger.warning("Database unreachable (%s); retrying in %.2fs.", first_line(exc), self._backoff)
            self._close_connection()
            self._on_outage()
            return None
        if self._backoff:
            logger.warning("Database reachable again.")
            self._backoff = 0.0
            self._lease_starts()
        return result

    def start_up(
        self, fn: Callable[[], T], *, wait: Callable[[float], object], stopping: Callable[[], bool]
    ) -> T | None:
        """Call ``fn`` until the database answers; None if ``stopping()`` turns true first.

        ``wait(seconds)`` sleeps between tries and may return early (on a stop signal)."""
        delay = START_UP_FIRST
        while not stopping():
            try:
                result = fn()
            except OUTAGE_ERRORS as exc:
                logger.warning(
                    "Database unreachable at start-up (%s); retrying in %.1fs.", first_line(exc), delay
                )
                self._close_connection()
                wait(delay)
                delay = min(delay * 2, START_UP_MAX)
                continue
            self._lease_starts()
            return result
        return None

    def may_reap(self, now: float) -> bool:
        """May this worker judge other workers dead at ``now``?

        Only once it has had the database for a full lease: after an outage (or at a start
        that may follow one) every heartbeat is old, and the workers still reconnecting are
        alive, their jobs still running."""
        return now >= self._reap_from

    def _lease_starts(self) -> None:
        self._reap_from = self._clock() + self.lease


def is_lock_conflict(error: BaseException) -> bool:
    return for_connection(connection).is_conflict(error)


def close_django_connection() -> None:
    try:
        connection.close()
    except Exception:  # noqa: BLE001 - closing a broken connection may raise
        connection.connection = None


def commit_asynchronously() -> None:
    """From now on, every new session of this process's default database commits without
    waiting for the WAL flush (see ``jobs.drivers.postgres.SUPERVISOR_ASYNC_COMMIT`` for why that is safe).
    Only for the supervisor: its children keep synchronous commits for the handlers' writes."""
    connection_created.connect(_set_async_commit, dispatch_uid="jobs.worker.async_commit")


def _set_async_commit(sender: object, connection: BaseDatabaseWrapper, **kwargs: object) -> None:
    if connection.alias == "default":
        for_connection(connection).prepare_supervisor_session(connection)


def first_line(exc: BaseException) -> str:
    """An exception's first line, for a one-line log message."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
