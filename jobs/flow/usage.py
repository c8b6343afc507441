"""What the flow-control page shows: the limits in force per queue and per type, where each
comes from, the jobs running against each limit now, the starts in the current rate window,
and how many due jobs wait on a limit. Read now, in a handful of bounded statements: the
running rows (as many as the fleet has slots), the due jobs of full keys, the gates of the
rate keys in use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone

from jobs import registry
from jobs.drivers import driver
from jobs.drivers.orm import micros
from jobs.flow import leases
from jobs.flow.limits import TypeLimits, queue_key, type_key
from jobs.flow.queues import OPERATOR, QueueLimits, current, settings_limits
from jobs.flow.rates import Rate, Window, with_pending
from jobs.models import FlowGate, Job, Status

#: The rate keys of one type whose windows the page reads, at most.
KEYS_READ = 1000
#: Due jobs waiting on a type's limit are counted up to this many ("10,000 or more").
COUNTED_UP_TO = 10_000
CODE = "code"  # a type's limits: its @job declaration, or its task's OPTIONS


@dataclass
class QueueUsage:
    limits: QueueLimits
    configured: tuple[int | None, Rate | None]  # JOBS_QUEUES' limits, whether in force or not
    running: int = 0
    due: int = 0
    starts: int | None = None  # in the current window of its rate
    waiting: int = 0  # due jobs held back by a limit (the queue's, or their type's or key's)
    types: list[TypeUsage] = field(default_factory=list)
    last_change: str = ""  # the newest operator change (the admin's log), for the page

    @property
    def queue(self) -> str:
        return self.limits.queue

    @property
    def overridden(self) -> str:
        """The settings' limits an operator's replace, in words ("" when none)."""
        concurrency, rate = self.configured
        if self.limits.source != OPERATOR or (concurrency is None and rate is None):
            return ""
        return QueueLimits(self.queue, concurrency, rate).describe()


@dataclass
class TypeUsage:
    name: str
    queue: str
    limits: TypeLimits
    source: str = CODE
    running: int = 0  # of the type; per key: ``keys_running`` below
    keys_running: int = 0  # keys with a job running (a per-key limit)
    keys_full: int = 0  # keys at their limit
    busiest: list[tuple[str | None, int]] = field(default_factory=list)  # keys with the most running
    leased: int = 0  # jobs the leases in force hold of a type-wide limit (``jobs.flow.leases``)
    starts: int | None = None  # in the current window of a type-wide rate
    keys_rate_full: int = 0  # rate keys with no room now
    waiting: int = 0


@dataclass
class Snapshot:
    queues: list[QueueUsage]
    # django.tasks tasks with limits (from the backend's OPTIONS): a task's queue is named
    # where it is declared, so they are listed apart from the queues.
    tasks: list[TypeUsage]


def snapshot(queues: Iterable[str] = ()) -> Snapshot:
    """Every queue with a type, limits, a row or due jobs (and ``queues``), by name, and the
    limited tasks."""
    now = timezone.now()
    in_force = current()
    configured = settings_limits()
    due_by_queue = dict(
        Job.objects.filter(driver().due(now))
        .values("queue")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("queue", "n")
    )
    running_rows = list(
        Job.objects.filter(status=Status.RUNNING).values_list("queue", "type", "concurrency_key")
    )
    running_by_queue = Counter(queue for queue, _, _ in running_rows)
    names = sorted({*registry.queues(), *in_force, *due_by_queue, *running_by_queue, *queues})
    gates = _windows([queue_key(name) for name in names])
    result = []
    for name in names:
        limits = in_force.get(name, QueueLimits(name))
        usage = QueueUsage(
            limits,
            configured.get(name, (None, None)),
            running=running_by_queue[name],
            due=due_by_queue.get(name, 0),
        )
        if limits.rate is not None:
            usage.starts = gates.get(queue_key(name), Window()).used(micros(now), limits.rate)
        usage.types = [_type_usage(job_type, running_rows, now) for job_type in _limited_types(name)]
        if (limits.concurrency is not None and usage.running >= limits.concurrency) or (
            usage.starts is not None and limits.rate is not None and usage.starts >= limits.rate.count
        ):
            usage.waiting = usage.due  # the queue's own limit holds every due job
        else:
            usage.waiting = sum(found.waiting for found in usage.types)
        result.append(usage)
    tasks = [
        _type_usage(job_type, running_rows, now)
        for name in registry.names()
        if not registry.declared(name)
        and (job_type := registry.lookup_or_none(name)) is not None
        and job_type.limits is not None
    ]
    return Snapshot(result, tasks)


def _limited_types(queue: str) -> list[registry.JobType]:
    return [job_type for job_type in registry.all_types() if job_type.queue == queue and job_type.limits]


def _windows(keys: list[str]) -> dict[str, Window]:
    if not keys:
        return {}
    return {
        key: Window.load(with_pending(recent, at, pending, leases))
        for key, recent, at, pending, leases in FlowGate.objects.filter(key__in=keys).values_list(
            "key", "recent", "spare_pending_at", "spare_pending", "leases"
        )
    }


def _type_usage(
    job_type: registry.JobType, running_rows: list[tuple[str, str, str | None]], now: datetime
) -> TypeUsage:
    limits = job_type.limits
    assert limits is not None
    usage = TypeUsage(
        job_type.name, job_type.queue, limits, source=CODE if registry.declared(job_type.name) else "OPTIONS"
    )
    mine = [key for _, type_name, key in running_rows if type_name == job_type.name]
    usage.running = len(mine)
    due = Job.objects.filter(driver().due(now), type=job_type.name)
    held = Q(pk__in=[])
    if limits.concurrency_key is None and limits.rate_key is None:
        gate = _windows([type_key(job_type.name)]).get(type_key(job_type.name), Window())
        usage.leased = gate.leased(leases.in_force_since(micros(now)))
    if limits.concurrency is not None:
        if limits.concurrency_key is None:
            counted = sum(1 for _, _, key in running_rows if key == type_key(job_type.name))
            if counted + usage.leased >= limits.concurrency:
                held |= Q(pk__isnull=False)
        else:
            by_key = Counter(key for key in mine if key is not None)
            usage.keys_running = len(by_key)
            # Other types may share a key: count every running job of these keys.
            shared = Counter(key for _, _, key in running_rows if key in by_key)
            full = [key for key, count in shared.items() if count >= limits.concurrency]
            usage.keys_full = len(full)
            usage.busiest = shared.most_common(5)
            if full:
                held |= Q(concurrency_key__in=full)
    if limits.rate is not None:
        at = micros(now)
        if limits.rate_key is None:
            window = _windows([type_key(job_type.name)]).get(type_key(job_type.name), Window())
            usage.starts = window.used(at, limits.rate)
            if usage.starts >= limits.rate.count:
                held |= Q(pk__isnull=False)
        else:
            keys = [
                key
                for key in due.exclude(rate_key=None)
                .values_list("rate_key", flat=True)
                .distinct()[:KEYS_READ]
                if key is not None
            ]
            full = [key for key, window in _windows(keys).items() if window.room(at, limits.rate) == 0]
            usage.keys_rate_full = len(full)
            if full:
                held |= Q(rate_key__in=full)
    usage.waiting = due.filter(held)[:COUNTED_UP_TO].count()
    return usage
