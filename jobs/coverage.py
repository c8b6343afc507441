"""Which queues are served, and which have due jobs that no live worker will ever take.

A queue is served by a live worker (its registry row renewed within ``JOBS_WORKER_LEASE``,
not stopped) whose lanes name it: ``Worker.queues`` records lane labels such as
``"default,ingestion:2"``. The registry fixes each type's queue, so a queue with due jobs and
no such worker waits forever: a deploy that forgot ``--queue ai:1``, a service scaled to
zero. A queue an operator paused (``jobs.pause_queue``) is reported as paused, not as
unserved. The figures come from ``jobs.metrics.measure`` (one snapshot); the "Background jobs"
page, ``manage.py check`` (``jobs.checks``), ``manage.py sweep`` (``jobs.tasks``) and the
metrics (``UnservedJobs``, ``jobs_unserved_due``) all report what this module finds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from jobs import metrics
from jobs.durations import format_duration

logger = logging.getLogger("jobs.coverage")

HINT = (
    "Start a worker that serves it (manage.py runworker --queue {queue}:1, or runworker without "
    "--queue for every queue), or find out why its workers stopped renewing their registry row "
    "(Admin → Platform → Workers)."
)


@dataclass(frozen=True)
class QueueState:
    """One queue, as an operator reads it: due and running jobs, the oldest due job's wait,
    and the live workers serving it."""

    queue: str
    due: int
    running: int
    oldest_due_age: float  # seconds; 0 when nothing is due
    serving: int
    paused: bool = False  # an operator paused it: its due jobs wait on purpose

    @property
    def unserved(self) -> bool:
        """Due jobs, and no live worker to take them (a paused queue is not unserved: it
        is paused, and says so)."""
        return self.due > 0 and self.serving == 0 and not self.paused

    @property
    def oldest_due_wait(self) -> str:
        return format_duration(timedelta(seconds=self.oldest_due_age)) if self.due else "—"

    @property
    def warning(self) -> str:
        jobs = "job" if self.due == 1 else "jobs"
        return (
            f"No live worker serves the queue {self.queue!r}: {self.due:,} due {jobs}, "
            f"the oldest waiting {self.oldest_due_wait}."
        )

    @property
    def hint(self) -> str:
        return HINT.format(queue=self.queue)

    @property
    def paused_note(self) -> str:
        """What a paused queue's line says instead of a warning."""
        jobs = "job waits" if self.due == 1 else "jobs wait"
        return f"The queue {self.queue!r} is paused: {self.due:,} due {jobs} until it is resumed."


def queue_states(figures: metrics.Figures | None = None) -> list[QueueState]:
    """Every queue with a registered type or with jobs, by name; measured now unless given."""
    if figures is None:
        figures = metrics.measure(failures=False)
    return [
        QueueState(
            queue=queue,
            due=figures.queued.get(queue, 0),
            running=figures.running.get(queue, 0),
            oldest_due_age=figures.oldest_due_age(queue),
            serving=figures.serving.get(queue, 0),
            paused=queue in figures.paused,
        )
        for queue in figures.queues
    ]


def unserved(states: Iterable[QueueState]) -> list[QueueState]:
    return [state for state in states if state.unserved]


def report_unserved() -> str:
    """``sweep``'s step: a warning in the log for each queue nobody serves, and one line."""
    missing = unserved(queue_states())
    for state in missing:
        logger.warning("%s %s", state.warning, state.hint)
    if not missing:
        return "every queue with due jobs has a live worker"
    return "no live worker serves " + "; ".join(
        f"{state.queue} ({state.due:,} due, oldest waiting {state.oldest_due_wait})" for state in missing
    )
