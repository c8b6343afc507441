"""Timers: functions that run every few minutes, from cron or from django-q2's scheduler,
declared once for both, in an app's ``tasks`` module beside its job types:

    @jobs.periodic("sweep", every=300)
    def sweep_emails() -> str: ...

``manage.py sweep`` runs every function of the ``sweep`` timer. Each function runs under a
PostgreSQL advisory lock named after it, so two runs at the same moment (two cron hosts,
cron and django-q2) never do the same work twice: the second one skips it.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection

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
    for step in _steps[timer]:
        with _exclusive(step.name) as acquired:
            if not acquired:
                results[step.name] = "skipped: already running elsewhere"
                continue
            try:
                results[step.name] = step.func()
            except Exception as exc:  # one failing step must not stop the others
                logger.exception("Timer step %s failed.", step.name)
                results[step.name] = f"failed: {exc}"
    return results


class _exclusive:
    """A session-level advisory lock on PostgreSQL; elsewhere a no-op (one process)."""

    def __init__(self, name: str) -> None:
        self.key = zlib.crc32(f"jobs.timer:{name}".encode())
        self.acquired = False

    def __enter__(self) -> bool:
        if connection.vendor != "postgresql":
            self.acquired = True
            return True
        with connection.cursor() as cursor:
            cursor.execute(sql.TRY_LOCK_TIMER_STEP, [self.key])
            row = cursor.fetchone()
            self.acquired = bool(row and row[0])
        return self.acquired

    def __exit__(self, *exc_info: object) -> None:
        if self.acquired and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(sql.UNLOCK_TIMER_STEP, [self.key])
