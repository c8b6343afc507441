"""The queues' limits and pause: what ``JOBS_QUEUES`` sets, what an operator set (a row per
queue in ``jobs_queue``, ``Queue``), and the verbs that change the rows.

    JOBS_QUEUES = {"ai": {"concurrency": 4, "rate": "100/m"}}

An operator's limits, once set (the "Background jobs" page, ``manage.py jobs_queue``,
``jobs.set_queue_limits``), replace the settings' for that queue until they are reset;
pausing is the operator's alone. Workers read the rows at most once per poll interval
(``Controls``), so a change takes effect on every worker within one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from jobs.conf import jobs_settings
from jobs.flow.limits import concurrency_number
from jobs.flow.rates import Rate

SETTINGS = "settings"  # JOBS_QUEUES
OPERATOR = "operator"  # the queue's row, set from the page, the command or the API
QUEUE_OPTIONS = ("concurrency", "rate")
#: The queue column's length (``Job.queue``).
QUEUE_NAME_LENGTH = 50


@dataclass(frozen=True)
class QueueLimits:
    """One queue's limits in force, where they come from, and whether it is paused."""

    queue: str
    concurrency: int | None = None
    rate: Rate | None = None
    paused: bool = False
    source: str = ""  # SETTINGS, OPERATOR, or "" when there are none

    @property
    def limited(self) -> bool:
        return self.concurrency is not None or self.rate is not None

    def describe(self) -> str:
        said = []
        if self.concurrency is not None:
            said.append(f"at most {self.concurrency:,} running")
        if self.rate is not None:
            said.append(f"{self.rate.describe()} starts")
        return ", ".join(said) or "no limits"


def check_queue_name(queue: object) -> str:
    """A queue name a worker's ``--queue NAME:SLOTS`` can name and the column holds."""
    if (
        not isinstance(queue, str)
        or not queue
        or len(queue) > QUEUE_NAME_LENGTH
        or set(queue) & set(":, \t\n")
    ):
        raise ValueError(
            f"{queue!r} is not a queue name (1 to {QUEUE_NAME_LENGTH} characters, without ':', ',' or spaces)."
        )
    return queue


def parse_limits(given: object, where: str) -> tuple[int | None, Rate | None]:
    """One queue's ``{"concurrency": N, "rate": "N/m"}``; ``ImproperlyConfigured`` otherwise."""
    if not isinstance(given, Mapping):
        raise ImproperlyConfigured(f"{where} must be a dict with 'concurrency' and/or 'rate'.")
    unknown = sorted(set(given) - set(QUEUE_OPTIONS))
    if unknown:
        raise ImproperlyConfigured(
            f"{where}: unknown option {', '.join(map(repr, unknown))}; use {QUEUE_OPTIONS}."
        )
    concurrency = concurrency_number(given.get("concurrency"), f"{where}['concurrency']")
    rate = given.get("rate")
    return concurrency, (Rate.declared(rate, f"{where}['rate']") if rate is not None else None)


def settings_limits() -> dict[str, tuple[int | None, Rate | None]]:
    """``JOBS_QUEUES``, parsed (``jobs.checks`` reports a bad one at start-up)."""
    configured = jobs_settings.QUEUES
    found = {}
    for queue, given in configured.items():
        try:
            check_queue_name(queue)
        except ValueError as exc:
            raise ImproperlyConfigured(f"JOBS_QUEUES: {exc}") from None
        found[queue] = parse_limits(given, f"JOBS_QUEUES[{queue!r}]")
    return found


def settings_problem() -> str | None:
    """What is wrong with ``JOBS_QUEUES``, or None (for the system check)."""
    try:
        settings_limits()
    except ImproperlyConfigured as exc:
        return str(exc)
    return None


def in_force(
    rows: Iterable[Any], configured: Mapping[str, tuple[int | None, Rate | None]]
) -> dict[str, QueueLimits]:
    """Each queue's limits in force from the operators' rows and the settings' limits."""
    found: dict[str, QueueLimits] = {}
    for queue, (concurrency, rate) in configured.items():
        if concurrency is not None or rate is not None:
            found[queue] = QueueLimits(queue, concurrency, rate, source=SETTINGS)
    for row in rows:
        base = found.get(row.queue, QueueLimits(row.queue))
        if row.limits_set:
            rate = Rate.parse(row.rate) if row.rate else None
            base = QueueLimits(row.queue, row.concurrency, rate, source=OPERATOR)
        found[row.queue] = QueueLimits(base.queue, base.concurrency, base.rate, row.paused, base.source)
    return found


def current() -> dict[str, QueueLimits]:
    """Every queue with limits or a row, read now."""
    from jobs.models import Queue

    return in_force(Queue.objects.all(), settings_limits())


class Controls:
    """A process's view of the queues' limits and pauses, read at most once per
    ``max_age`` seconds (a worker's poll interval)."""

    def __init__(self, max_age: float, read: Callable[[], dict[str, QueueLimits]] = current) -> None:
        self.max_age = max_age
        self._read = read
        self._queues: dict[str, QueueLimits] = {}
        self._read_at: float | None = None

    def refresh(self, now: float | None = None, *, force: bool = False) -> bool:
        """Read the rows again when they are older than ``max_age``; whether it did."""
        now = time.monotonic() if now is None else now
        if not force and self._read_at is not None and now - self._read_at < self.max_age:
            return False
        self._queues = self._read()
        self._read_at = now
        return True

    def get(self, queue: str) -> QueueLimits | None:
        return self._queues.get(queue)

    def paused(self, queue: str) -> bool:
        found = self._queues.get(queue)
        return found is not None and found.paused

    def limited(self, queue: str) -> bool:
        found = self._queues.get(queue)
        return found is not None and found.limited

    @property
    def queues(self) -> dict[str, QueueLimits]:
        return dict(self._queues)


# --- the verbs --------------------------------------------------------------------------------


def _row(queue: str) -> Any:
    """The queue's row, locked until the caller's transaction ends (created when missing)."""
    from jobs.models import Queue

    check_queue_name(queue)
    Queue.objects.bulk_create([Queue(queue=queue)], ignore_conflicts=True)
    return Queue.objects.select_for_update().get(queue=queue)


def pause(queue: str) -> Any:
    """Start nothing new from ``queue`` (its running jobs finish; enqueue still works)."""
    with transaction.atomic():
        row = _row(queue)
        if not row.paused:
            row.paused = True
            row.changed_at = timezone.now()
            row.save(update_fields=["paused", "changed_at"])
    return row


def resume(queue: str) -> Any:
    with transaction.atomic():
        row = _row(queue)
        if row.paused:
            row.paused = False
            row.changed_at = timezone.now()
            row.save(update_fields=["paused", "changed_at"])
    return row


def set_limits(queue: str, *, concurrency: int | None, rate: str | Rate | None) -> Any:
    """The operator's limits for ``queue`` (None: no such limit), in place of the settings'."""
    number = _checked(lambda: concurrency_number(concurrency, "concurrency"))
    parsed = Rate.parse(rate, where="rate") if rate not in (None, "") else None
    with transaction.atomic():
        row = _row(queue)
        row.limits_set = True
        row.concurrency = number
        row.rate = str(parsed) if parsed else ""
        row.changed_at = timezone.now()
        row.save(update_fields=["limits_set", "concurrency", "rate", "changed_at"])
    return row


def reset_limits(queue: str) -> Any:
    """Back to the settings' limits (``JOBS_QUEUES``), or none."""
    with transaction.atomic():
        row = _row(queue)
        row.limits_set = False
        row.concurrency = None
        row.rate = ""
        row.changed_at = timezone.now()
        row.save(update_fields=["limits_set", "concurrency", "rate", "changed_at"])
    return row


def _checked(read: Callable[[], int | None]) -> int | None:
    try:
        return read()
    except ImproperlyConfigured as exc:
        raise ValueError(str(exc)) from None
