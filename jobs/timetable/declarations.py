"""What ``@periodic`` declares about a timer, merged over its steps, and the job type its
runs are.

A timer is a name with one or more steps; each step's ``@periodic`` may give the timer's
schedule, policies and job options. They must agree: two steps giving a timer different
cron expressions, time zones, policies or job options fail at import time, where they are
written. Of several intervals the shortest wins (a timer runs as often as its most
demanding step asks).

Pure, apart from ``job_type``/``declare_job_type``, which the app registry's ``ready``
calls once the models can load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from jobs.registry import JobType
from jobs.timetable.calendar import Calendar, in_utc

CATCH_UP = ("skip", "once", "all")
OVERLAP = ("skip", "queue")
DEFAULT_CATCH_UP = "once"
DEFAULT_OVERLAP = "skip"
# A timer's runs are jobs like any other: by default high priority, on the engine's default
# queue, with its default tries and backoff (``jobs.registry.JobType``), no timeout.
DEFAULT_QUEUE = JobType.queue
DEFAULT_PRIORITY = "high"
DEFAULT_ATTEMPTS = JobType.attempts
MAX_NAME_LENGTH = 100
TYPE_PREFIX = "timer."
# The options a step may give (``None``: not given).
OPTIONS = (
    "cron",
    "timezone",
    "catch_up",
    "overlap",
    "queue",
    "priority",
    "attempts",
    "backoff",
    "timeout",
    "atomic",
    "paused",
)


@dataclass(frozen=True)
class TimerSpec:
    """One timer as its code declares it."""

    name: str
    calendar: Calendar
    catch_up: str = DEFAULT_CATCH_UP
    overlap: str = DEFAULT_OVERLAP
    queue: str = DEFAULT_QUEUE
    priority: str = DEFAULT_PRIORITY
    attempts: int = DEFAULT_ATTEMPTS
    backoff: tuple[float, ...] | None = None
    timeout: float | None = None
    atomic: bool = False
    paused: bool = False  # installed paused: an operator resumes it

    @property
    def job_type(self) -> str:
        return job_type_name(self.name)


_declared: dict[str, list[dict[str, Any]]] = {}


def add(timer: str, every: int | None, options: Mapping[str, Any]) -> TimerSpec:
    """Record one step's declaration of ``timer``; returns the timer as now declared."""
    if not timer or len(timer) > MAX_NAME_LENGTH or any(char.isspace() or char == "@" for char in timer):
        raise ImproperlyConfigured(
            f"Timer name {timer!r}: 1 to {MAX_NAME_LENGTH} characters, without spaces or '@'."
        )
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise ImproperlyConfigured(f"Timer {timer!r}: unknown option(s) {', '.join(sorted(unknown))}.")
    given = {"every": every, **{key: value for key, value in options.items() if value is not None}}
    previous = _declared.get(timer, [])
    _declared[timer] = [*previous, given]
    try:
        return spec(timer)
    except ImproperlyConfigured:
        _declared[timer] = previous
        raise


def spec(timer: str) -> TimerSpec:
    """The timer as its steps declare it; KeyError for a timer nobody declares."""
    declarations = _declared[timer]
    merged: dict[str, Any] = {}
    for given in declarations:
        for key, value in given.items():
            if key == "every" or value is None:
                continue
            if key in merged and merged[key] != value:
                raise ImproperlyConfigured(
                    f"Timer {timer!r}: its steps declare {key}={merged[key]!r} and {key}={value!r}; "
                    "declare it once, or the same on every step."
                )
            merged[key] = value
    intervals = [given["every"] for given in declarations if given.get("every") is not None]
    try:
        calendar = Calendar(
            every=min(intervals) if intervals else None,
            cron=merged.pop("cron", ""),
            timezone=merged.pop("timezone", "UTC"),
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"Timer {timer!r}: {exc}.") from None
    _check_choice(timer, "catch_up", merged, CATCH_UP)
    _check_choice(timer, "overlap", merged, OVERLAP)
    if "backoff" in merged:
        merged["backoff"] = tuple(merged["backoff"])
    return TimerSpec(name=timer, calendar=calendar, **merged)


def _check_choice(timer: str, key: str, merged: Mapping[str, Any], choices: tuple[str, ...]) -> None:
    if key in merged and merged[key] not in choices:
        raise ImproperlyConfigured(
            f"Timer {timer!r}: {key}={merged[key]!r}; use one of {', '.join(map(repr, choices))}."
        )


def forget(timer: str) -> None:
    """Drop a timer's declarations (tests that declare timers of their own)."""
    _declared.pop(timer, None)


def declared() -> list[str]:
    return sorted(_declared)


def find(timer: str) -> TimerSpec | None:
    return spec(timer) if timer in _declared else None


# --- the job of a run -------------------------------------------------------------------------


def job_type_name(timer: str) -> str:
    """Each timer's runs are a job type of their own, so a type's limits, filter and
    failed list are the timer's: ``timer.sweep``."""
    return TYPE_PREFIX + timer


def slot_key(timer: str, slot: datetime) -> str:
    """The run's dedupe key: ``timer:sweep@2026-12-01T15:05:00Z`` (microseconds only for a
    manual slot, which is the moment it was asked for)."""
    return f"timer:{timer}@{slot_text(slot)}"


def slot_text(slot: datetime) -> str:
    moment = in_utc(slot)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def parse_slot(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def declare_job_type(timer: TimerSpec, handler: Callable[..., Any]) -> None:
    """Register (or update) the job type of ``timer``'s runs."""
    from jobs import registry
    from jobs.registry import DEFAULT_BACKOFF

    registry.register(
        registry.JobType(
            name=timer.job_type,
            func=handler,
            queue=timer.queue,
            attempts=timer.attempts,
            backoff=timer.backoff or DEFAULT_BACKOFF,
            timeout=timer.timeout,
            priority=timer.priority,
            atomic=timer.atomic,
        )
    )
