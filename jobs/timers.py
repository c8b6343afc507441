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

A run holds every step's lock (a PostgreSQL advisory lock, MariaDB's GET_LOCK, named
after the step) for its whole length, so two runs of one timer never overlap: a worker's
run that finds one held goes back to the queue for a moment, a command's waits. The locks
are held on a session of their own (see ``_StepLocks``); on PostgreSQL by a transaction,
so they work the same through a pooler in transaction mode.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.apps import apps
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from jobs.drivers import driver
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
    """Remove a timer, its steps and its runs' job type (tests that declare timers of their own)."""
    _steps.pop(timer, None)
    declarations.forget(timer)
    if apps.models_ready:
        from jobs import registry

        registry.remove(declarations.job_type_name(timer))


def run_timer(timer: str, force: bool = False) -> dict[str, object]:
    """The nearest slot of ``timer``, run here through the slot's key, as an outside
    scheduler asks (django-q2's schedules call this): each step's result, or one line
    saying the slot already ran. ``force`` runs a slot of its own anyway."""
    from jobs.timetable import outside

    return outside.run_nearest_slot(timer, force=force, runner="django-q2").results


def run_steps(timer: str, slot: datetime | None = None, *, wait: float = 0.0) -> dict[str, StepResult] | None:
    """Every step of ``timer``, here, in order, holding all their locks; each step's
    result (a failing step is logged and the others still run). None when another run
    holds one of the locks, still after ``wait`` seconds: runs of one timer never overlap,
    and a run that waits runs all of its steps afterwards rather than skipping some."""
    steps = _known(timer)
    names = [step.name for step in steps]
    deadline = time.monotonic() + wait
    with _StepLocks() as locks:
        while True:
            with locks.hold_all(names) as acquired:
                if acquired:
                    return {step.name: call_step(step, slot) for step in steps}
            if time.monotonic() >= deadline:
                return None
            time.sleep(LOCK_POLL)


#: How often a run waiting for another run's locks looks again (seconds).
LOCK_POLL = 0.1


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
    def hold_all(self, names: Sequence[str]) -> Iterator[bool]:
        """Every lock of ``names`` at once, or none (False) when one is held elsewhere."""
        with driver().try_lock_steps(self._open(), names) as held:
            yield held

    def _open(self) -> BaseDatabaseWrapper:
        if self._session is None:
            self._session = connections.create_connection(DEFAULT_DB_ALIAS)
        return self._session
