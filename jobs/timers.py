"""Timers: functions that run on a schedule, declared once in an app's ``tasks`` module
beside its job types:

    @jobs.periodic("sweep", every=300)
    def sweep_emails() -> str: ...

    @jobs.periodic("report", cron="0 7 * * 1-5", timezone="Europe/Berlin", catch_up="skip")
    def send_report(*, slot: datetime) -> str: ...

A timer is a name with one or more steps. Each is a schedule in the database
(``jobs.timetable``): ``runworker`` books every due slot once across the fleet and runs the
steps as a job of the timer's own type, and ``manage.py sweep`` (cron, EventBridge) or
django-q2 run the nearest slot through the same key (``run_timer``).

Each step runs under a lock named after it (a PostgreSQL advisory lock, MariaDB's
GET_LOCK), so two runs at the same moment never do the same work twice. The lock is held
on a session of its own (see ``_StepLocks``); on PostgreSQL by a transaction, so it works
the same through a pooler in transaction mode.
"""

from __future__ import annotations

import inspect
import logging
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.apps import apps
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from jobs import sql
from jobs.timetable import declarations

logger = logging.getLogger("jobs.timers")


@dataclass(frozen=True)
class TimerStep:
    timer: str
    name: str
    every: int | None  # seconds; None for a cron timer
    func: Callable[..., object]
    takes_slot: bool = False  # the function accepts ``slot=`` (the slot it runs for)

    def __call__(self, slot: datetime | None) -> object:
        if self.takes_slot:
            return self.func(slot=slot)
        return self.func()


_steps: dict[str, list[TimerStep]] = {}


def periodic[Step: Callable[..., object]](
    timer: str,
    *,
    every: int | None = None,
    cron: str | None = None,
    timezone: str | None = None,
    catch_up: str | None = None,
    overlap: str | None = None,
    queue: str | None = None,
    priority: str | None = None,
    attempts: int | None = None,
    backoff: Sequence[float] | None = None,
    timeout: float | None = None,
    atomic: bool | None = None,
    paused: bool | None = None,
) -> Callable[[Step], Step]:
    """Add the decorated function to ``timer``: every ``every`` seconds, or at the times of
    ``cron`` in ``timezone``. The policies (``catch_up``: "skip", "once" (default), "all";
    ``overlap``: "skip" (default), "queue") and the run's job options (``queue``,
    ``priority``, ``attempts``, ``backoff``, ``timeout``, ``atomic``) are the timer's:
    give them on one step, or the same on each. ``paused=True`` installs it paused. A step
    that takes a keyword ``slot`` is given the slot it runs for (an aware datetime)."""
    options = {
        "cron": cron,
        "timezone": timezone,
        "catch_up": catch_up,
        "overlap": overlap,
        "queue": queue,
        "priority": priority,
        "attempts": attempts,
        "backoff": tuple(backoff) if backoff is not None else None,
        "timeout": timeout,
        "atomic": atomic,
        "paused": paused,
    }

    def register(func: Step) -> Step:
        name = f"{func.__module__}.{func.__qualname__}"
        spec = declarations.add(timer, every, options)
        steps = _steps.setdefault(timer, [])
        if not any(step.name == name for step in steps):
            steps.append(TimerStep(timer, name, every, func, "slot" in inspect.signature(func).parameters))
        if apps.models_ready:  # else the app's ready() declares it, with every other timer
            from jobs.timetable import runs

            runs.declare(spec)
        return func

    return register


def timers() -> dict[str, list[TimerStep]]:
    return {name: list(steps) for name, steps in _steps.items()}


def interval(timer: str) -> int:
    """An interval timer's seconds (for django-q2's schedules)."""
    every = declarations.spec(timer).calendar.every
    if every is None:
        raise ValueError(f"Timer {timer!r} runs on a cron expression, not an interval.")
    return every


def forget(timer: str) -> None:
    """Remove a timer and its steps (tests that declare timers of their own)."""
    _steps.pop(timer, None)
    declarations.forget(timer)


def run_timer(timer: str, force: bool = False) -> dict[str, object]:
    """The nearest slot of ``timer``, run here through the slot's key, as an outside
    scheduler asks (django-q2's schedules call this): each step's result, or one line
    saying the slot already ran. ``force`` runs a slot of its own anyway."""
    from jobs.timetable import outside

    return outside.run_nearest_slot(timer, force=force, runner="django-q2").results


def run_steps(timer: str, slot: datetime | None = None) -> dict[str, object]:
    """Run every step of ``timer`` now, here, each under its lock; returns each step's
    result, "skipped" (its lock was held elsewhere) or "failed: …"."""
    return {name: result.text for name, result in run_each_step(timer, slot).items()}


def run_each_step(timer: str, slot: datetime | None = None) -> dict[str, StepResult]:
    """``run_steps``, with each step's error kept apart from its value."""
    steps = _known(timer)
    results: dict[str, StepResult] = {}
    with _StepLocks() as locks:
        for step in steps:
            with locks.hold(step.name) as acquired:
                results[step.name] = call_step(step, slot) if acquired else StepResult(SKIPPED)
    return results


SKIPPED = "skipped: already running elsewhere"


@dataclass(frozen=True)
class StepResult:
    value: object
    error: str = ""  # "RuntimeError: step broke" when it raised

    @property
    def text(self) -> object:
        return f"failed: {self.error.partition(': ')[2] or self.error}" if self.error else self.value


def call_step(step: TimerStep, slot: datetime | None) -> StepResult:
    """One step; a failing step is logged and reported, and must not stop the others."""
    try:
        return StepResult(step(slot))
    except Exception as exc:
        logger.exception("Timer step %s failed.", step.name)
        return StepResult(None, f"{type(exc).__name__}: {exc}")


@contextmanager
def holding_every_step(timer: str) -> Iterator[list[TimerStep] | None]:
    """The steps of ``timer`` with all their locks held, or None when another run holds
    one of them: a worker's run waits for the other instead of skipping its steps."""
    steps = _known(timer)
    with _StepLocks() as locks, locks.hold_all([step.name for step in steps]) as acquired:
        yield steps if acquired else None


def _known(timer: str) -> list[TimerStep]:
    if timer not in _steps:
        raise KeyError(f"Unknown timer {timer!r}; known timers: {', '.join(sorted(_steps)) or 'none'}.")
    return _steps[timer]


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
                cursor.execute(sql.TRY_LOCK_TIMER_STEP, [_advisory_key(name)])
                row = cursor.fetchone()
            yield bool(row and row[0])
        finally:
            session.rollback()  # ends the transaction: the lock goes with it
            session.set_autocommit(True)

    @contextmanager
    def hold_all(self, names: Sequence[str]) -> Iterator[bool]:
        """Every lock of ``names`` at once, or none (False) when one is held elsewhere."""
        if connection.vendor == "mysql":
            yield from self._hold_named_locks(names)
            return
        if connection.vendor != "postgresql":
            yield True
            return
        session = self._open()
        session.set_autocommit(False)
        try:
            held = True
            with session.cursor() as cursor:
                for name in names:
                    cursor.execute(sql.TRY_LOCK_TIMER_STEP, [_advisory_key(name)])
                    row = cursor.fetchone()
                    if not (row and row[0]):
                        held = False
                        break
            yield held
        finally:
            session.rollback()  # ends the transaction: every lock it took goes with it
            session.set_autocommit(True)

    def _hold_named_locks(self, names: Sequence[str]) -> Iterator[bool]:
        session = self._open()
        taken: list[int] = []
        try:
            with session.cursor() as cursor:
                for name in names:
                    key = zlib.crc32(name.encode())
                    cursor.execute(sql.MARIADB_TRY_LOCK_TIMER_STEP, [key])
                    row = cursor.fetchone()
                    if not (row and row[0] == 1):
                        break
                    taken.append(key)
            yield len(taken) == len(names)
        finally:
            with session.cursor() as cursor:
                for key in taken:
                    cursor.execute(sql.MARIADB_UNLOCK_TIMER_STEP, [key])

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


def _advisory_key(step: str) -> int:
    return zlib.crc32(f"jobs.timer:{step}".encode())
