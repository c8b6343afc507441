"""The backlog-per-task metric that ECS target tracking scales the worker fleet on.

Backlog per task = jobs queued and due now ÷ live workers (registry rows seen within
``JOBS_WORKER_LEASE`` and not stopped; at least 1, so an empty fleet reports the whole
backlog and scaling out from zero works). Reported overall (no dimensions) and per queue
(dimension ``Queue``; divided by the live workers that serve that queue, so a service
running only ``--queue ai:2`` can scale on its own queue). Every queue with a registered
job type is reported, even at 0, because target tracking only scales in on data points it
receives.

Sent to CloudWatch when ``JOBS_CLOUDWATCH_NAMESPACE`` is set; otherwise only logged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from jobs import registry
from jobs.models import Job, Status, Worker

logger = logging.getLogger("jobs.metrics")

BACKLOG_PER_TASK = "BacklogPerTask"
QUEUED_JOBS = "QueuedJobs"
LIVE_WORKERS = "LiveWorkers"


@dataclass(frozen=True)
class Backlog:
    queued: dict[str, int]  # due queued jobs by queue
    live_workers: int
    measured_at: datetime
    serving: dict[str, int] = field(default_factory=dict)  # live workers by queue they serve

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


def live_worker_queues(now: datetime | None = None) -> list[set[str] | None]:
    """The queues of each worker that renewed its row within the lease and has not stopped.

    A worker records its lanes as ``"default,ai:2"`` labels; None means "could not tell",
    counted as serving every queue.
    """
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.JOBS_WORKER_LEASE)
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


def measure(now: datetime | None = None) -> Backlog:
    now = now or timezone.now()
    # Served by the claim index (status = queued, by queue and run_at).
    rows = (
        Job.objects.filter(status=Status.QUEUED, run_at__lte=now)
        .values("queue")
        .annotate(count=Count("id"))
        .order_by()
    )
    queued = dict.fromkeys(registry.queues(), 0)
    queued.update({row["queue"]: row["count"] for row in rows})
    workers = live_worker_queues(now)
    serving = {queue: sum(1 for served in workers if served is None or queue in served) for queue in queued}
    return Backlog(queued=queued, live_workers=len(workers), measured_at=now, serving=serving)


def metric_data(backlog: Backlog) -> list[dict[str, Any]]:
    """The PutMetricData entries for one measurement."""
    at = backlog.measured_at

    def datum(name: str, value: float, unit: str, queue: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"MetricName": name, "Timestamp": at, "Value": float(value), "Unit": unit}
        if queue is not None:
            entry["Dimensions"] = [{"Name": "Queue", "Value": queue}]
        return entry

    data = [
        datum(BACKLOG_PER_TASK, backlog.per_task, "Count"),
        datum(QUEUED_JOBS, backlog.total, "Count"),
        datum(LIVE_WORKERS, backlog.live_workers, "Count"),
    ]
    for queue in sorted(backlog.queued):
        data.append(datum(BACKLOG_PER_TASK, backlog.per_task_of(queue), "Count", queue))
        data.append(datum(QUEUED_JOBS, backlog.queued[queue], "Count", queue))
    return data


def cloudwatch_client():
    import boto3

    return boto3.client(
        "cloudwatch", region_name=settings.AWS_REGION, endpoint_url=settings.AWS_ENDPOINT_URL or None
    )


def publish(backlog: Backlog, namespace: str, client: Any = None) -> None:
    client = client or cloudwatch_client()
    data = metric_data(backlog)
    # PutMetricData takes at most 1000 entries per call; a few queues never come close,
    # but chunk anyway so adding queues cannot break the call.
    for start in range(0, len(data), 1000):
        client.put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])


def report_backlog(now: datetime | None = None) -> str:
    """Measure, then send to CloudWatch (or only log when no namespace is configured)."""
    backlog = measure(now)
    by_queue = ", ".join(f"{queue}={count}" for queue, count in sorted(backlog.queued.items()))
    line = f"backlog per task {backlog.per_task:.2f} ({backlog.total} due, {backlog.live_workers} live workers; {by_queue})"
    namespace = settings.JOBS_CLOUDWATCH_NAMESPACE
    if namespace:
        publish(backlog, namespace)
        line += f", sent to CloudWatch {namespace}"
    logger.info("Backlog: %s", line)
    return line
