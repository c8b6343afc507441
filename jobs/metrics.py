"""The fleet's scaling signals, measured from the database in one place for every exporter.

``measure()`` reads, per queue:

- due jobs: queued with ``run_at`` now or earlier (a job waiting out a retry's backoff is
  not due);
- the age of the oldest due job: seconds since it became due (its ``run_at``), 0 when
  none is due. This is the queue time that queue-time autoscalers and alarms watch;
- running jobs;
- jobs that failed for good (status ``failed``) within ``JOBS_METRICS_WINDOW`` seconds;
- live workers: registry rows seen within ``JOBS_WORKER_LEASE`` and not stopped, and of
  those, the ones that serve the queue;
- unserved jobs: a queue's due jobs when no live worker serves it (``jobs.coverage``): they
  would wait forever, and an alarm fires on them.

Backlog per task = due jobs ÷ live workers (at least 1, so an empty fleet reports the
whole backlog and scaling out from zero works). Reported overall and per queue (divided by
the live workers that serve that queue, so a service running only ``--queue ai:2`` can
scale on its own queue). Every queue with a registered job type is reported, even at 0,
because target tracking only scales in on data points it receives.

Two exporters read the same ``Figures``: ``manage.py sweep`` puts them to CloudWatch when
``JOBS_CLOUDWATCH_NAMESPACE`` is set (otherwise only logs them), and ``jobs.prometheus``
serves them at scrape time.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Min
from django.utils import timezone

from jobs import registry
from jobs.conf import jobs_settings
from jobs.drivers import driver
from jobs.models import Job, Queue, Status, Worker

logger = logging.getLogger("jobs.metrics")

# CloudWatch metric names (namespace JOBS_CLOUDWATCH_NAMESPACE, dimension "Queue").
BACKLOG_PER_TASK = "BacklogPerTask"
QUEUED_JOBS = "QueuedJobs"
LIVE_WORKERS = "LiveWorkers"
OLDEST_DUE_JOB_AGE = "OldestDueJobAge"
RUNNING_JOBS = "RunningJobs"
FAILED_JOBS = "FailedJobs"
UNSERVED_JOBS = "UnservedJobs"

# Failed rows stay until an operator retries or dismisses them, so after a bad deploy the
# failed list can hold far more rows than any window's failures. The count of recent
# failures looks at the newest this many failed rows only, which keeps a scrape's cost
# fixed; a window with more failures than this reports this many.
FAILED_SCAN_LIMIT = 10_000

# A scrape or a sweep gives up rather than queue behind a slow statement.
STATEMENT_TIMEOUT_MS = 5_000


@dataclass(frozen=True)
class Figures:
    """One measurement of every queue, as both exporters report it."""

    queued: dict[str, int]  # due queued jobs by queue
    live_workers: int
    measured_at: datetime
    serving: dict[str, int] = field(default_factory=dict)  # live workers by queue they serve
    oldest_due: dict[str, datetime] = field(default_factory=dict)  # run_at of the oldest due job
    running: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)  # failed for good within the window
    failed_window: float = 300.0  # seconds
    paused: frozenset[str] = frozenset()  # queues an operator paused (jobs.flow.queues)

    @property
    def queues(self) -> list[str]:
        return sorted(self.queued)

    @property
    def tasks(self) -> int:
        """The divisor: live workers, at least 1 (no fleet still has a backlog to report)."""
        return max(1, self.live_workers)

    @property
    def total(self) -> int:
        return sum(self.queued.values())

    @property
    def per_task(self) -> float:
        return self.total / self.tasks

    def per_task_of(self, queue: str) -> float:
        return self.queued.get(queue, 0) / max(1, self.serving.get(queue, self.live_workers))

    def oldest_due_age(self, queue: str | None = None) -> float:
        """Seconds the oldest due job (of ``queue``, or of any queue) has waited; 0 if none."""
        if queue is None:
            due = list(self.oldest_due.values())
        else:
            due = [self.oldest_due[queue]] if queue in self.oldest_due else []
        if not due:
            return 0.0
        return max(0.0, (self.measured_at - min(due)).total_seconds())

    @property
    def total_running(self) -> int:
        return sum(self.running.values())

    @property
    def total_failed(self) -> int:
        return sum(self.failed.values())

    def unserved(self, queue: str) -> int:
        """The queue's due jobs if no live worker serves it, else 0: jobs nobody will take.
        A paused queue's jobs wait on purpose: 0."""
        if queue in self.paused:
            return 0
        return self.queued.get(queue, 0) if self.serving.get(queue, 0) == 0 else 0

    @property
    def total_unserved(self) -> int:
        return sum(self.unserved(queue) for queue in self.queues)


# Its earlier name, for callers written against it.
Backlog = Figures


def live_worker_queues(now: datetime | None = None) -> list[set[str] | None]:
    """The queues of each worker that renewed its row within the lease and has not stopped.

    A worker records its lanes as ``"default,ai:2"`` labels; None means "could not tell",
    counted as serving every queue.
    """
    cutoff = (now or timezone.now()) - timedelta(seconds=jobs_settings.WORKER_LEASE)
    rows = Worker.objects.filter(stopped_at__isnull=True, last_seen__gte=cutoff).values_list(
        "queues", flat=True
    )
    return [_served(labels) for labels in rows]


def _served(labels: object) -> set[str] | None:
    if not isinstance(labels, list):
        return None
    queues = {
        queue.strip()
        for label in map(str, labels)
        for queue in (label.rpartition(":")[0] if ":" in label else label).split(",")
        if queue.strip()
    }
    return queues or None


def measure(now: datetime | None = None, *, failures: bool = True) -> Figures:
    """Every figure of every queue, read in one snapshot (five short statements);
    ``failures=False`` leaves out the two that count recent failures (they stay 0)."""
    window = float(jobs_settings.METRICS_WINDOW)
    with _snapshot():
        now = now or timezone.now()
        queues = registry.queues()
        # Served by the indexes of queued jobs (``Driver.due``): finished rows and jobs due
        # later cost nothing.
        due_rows = (
            Job.objects.filter(driver().due(now))
            .values("queue")
            .annotate(count=Count("id"), oldest=Min("run_at"))
            .order_by()
        )
        due = {row["queue"]: row for row in due_rows}
        # Served by the running index (status = running): as many rows as the fleet has slots.
        running_rows = (
            Job.objects.filter(status=Status.RUNNING).values("queue").annotate(count=Count("id")).order_by()
        )
        running = {row["queue"]: row["count"] for row in running_rows}
        # The newest FAILED_SCAN_LIMIT failed rows, and of those the ones that failed within
        # the window. The first statement walks the rare-status index (status, id) back to
        # the id of the last row to look at; the second reads the failed rows from that id
        # on, through a partial index on failed rows. Two statements, so the planner sees
        # that id and plans the range with it.
        failed: dict[str, int] = {}
        if failures:
            failed_jobs = Job.objects.filter(status=Status.FAILED)
            boundary = list(
                failed_jobs.order_by("-id").values_list("id", flat=True)[FAILED_SCAN_LIMIT - 1 :][:1]
            )
            if boundary:
                failed_jobs = failed_jobs.filter(id__gte=boundary[0])
            failed_rows = (
                failed_jobs.filter(finished_at__gte=now - timedelta(seconds=window))
                .values("queue")
                .annotate(count=Count("id"))
                .order_by()
            )
            failed = {row["queue"]: row["count"] for row in failed_rows}
        workers = live_worker_queues(now)
        paused = frozenset(Queue.objects.filter(paused=True).values_list("queue", flat=True))

    all_queues = sorted({*queues, *due, *running, *failed})
    return Figures(
        queued={queue: due[queue]["count"] if queue in due else 0 for queue in all_queues},
        live_workers=len(workers),
        measured_at=now,
        serving={
            queue: sum(1 for served in workers if served is None or queue in served) for queue in all_queues
        },
        oldest_due={queue: row["oldest"] for queue, row in due.items()},
        running={queue: running.get(queue, 0) for queue in all_queues},
        failed={queue: failed.get(queue, 0) for queue in all_queues},
        failed_window=window,
        paused=paused,
    )


@contextmanager
def _snapshot() -> Iterator[None]:
    """One read-only REPEATABLE READ transaction with a statement timeout.

    One snapshot, so a job that moves from queued to running between two statements is
    counted once, not twice or never. Only when this opens the transaction: inside a
    caller's transaction the isolation level is fixed, and a timeout would outlive us.
    """
    if connection.in_atomic_block:
        yield
        return
    with driver().metrics_snapshot(STATEMENT_TIMEOUT_MS):
        yield


def metric_data(figures: Figures) -> list[dict[str, Any]]:
    """The PutMetricData entries for one measurement: overall (no dimensions) and per queue."""
    at = figures.measured_at

    def datum(name: str, value: float, unit: str, queue: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"MetricName": name, "Timestamp": at, "Value": float(value), "Unit": unit}
        if queue is not None:
            entry["Dimensions"] = [{"Name": "Queue", "Value": queue}]
        return entry

    data = [
        datum(BACKLOG_PER_TASK, figures.per_task, "Count"),
        datum(QUEUED_JOBS, figures.total, "Count"),
        datum(LIVE_WORKERS, figures.live_workers, "Count"),
        datum(OLDEST_DUE_JOB_AGE, figures.oldest_due_age(), "Seconds"),
        datum(RUNNING_JOBS, figures.total_running, "Count"),
        datum(FAILED_JOBS, figures.total_failed, "Count"),
        datum(UNSERVED_JOBS, figures.total_unserved, "Count"),
    ]
    for queue in figures.queues:
        data.append(datum(BACKLOG_PER_TASK, figures.per_task_of(queue), "Count", queue))
        data.append(datum(QUEUED_JOBS, figures.queued[queue], "Count", queue))
        data.append(datum(OLDEST_DUE_JOB_AGE, figures.oldest_due_age(queue), "Seconds", queue))
        data.append(datum(RUNNING_JOBS, figures.running.get(queue, 0), "Count", queue))
        data.append(datum(FAILED_JOBS, figures.failed.get(queue, 0), "Count", queue))
        data.append(datum(UNSERVED_JOBS, figures.unserved(queue), "Count", queue))
    return data


def cloudwatch_client() -> Any:
    import boto3

    return boto3.client(
        "cloudwatch",
        region_name=jobs_settings.AWS_REGION,
        endpoint_url=jobs_settings.AWS_ENDPOINT_URL or None,
    )


def publish(
    figures: Figures, namespace: str, client: Any = None, extra: list[dict[str, Any]] | None = None
) -> None:
    """``extra``: more entries of the same sweep (the timers' ``OverdueTimers``)."""
    client = client or cloudwatch_client()
    data = metric_data(figures) + (extra or [])
    # PutMetricData takes at most 1000 entries per call; a few queues never come close,
    # but chunk anyway so adding queues cannot break the call.
    for start in range(0, len(data), 1000):
        client.put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])


def report_backlog(now: datetime | None = None) -> str:
    """Measure, then send to CloudWatch (or only log when no namespace is configured)."""
    from jobs.timetable import health

    figures = measure(now)
    timers = health.timer_states()
    by_queue = ", ".join(f"{queue}={count}" for queue, count in sorted(figures.queued.items()))
    line = (
        f"backlog per task {figures.per_task:.2f} ({figures.total} due, {figures.live_workers} live workers; "
        f"{by_queue}); oldest due {figures.oldest_due_age():.0f} s, {figures.total_running} running, "
        f"{figures.total_failed} failed in {figures.failed_window:.0f} s; "
        f"{len(health.overdue(timers))} overdue timers"
    )
    namespace = jobs_settings.CLOUDWATCH_NAMESPACE
    if namespace:
        publish(figures, namespace, extra=health.metric_data(timers, figures.measured_at))
        line += f", sent to CloudWatch {namespace}"
    logger.info("Backlog: %s", line)
    return line
