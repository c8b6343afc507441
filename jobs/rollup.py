"""The rollup of finished tries: what the charts and the Prometheus histograms read, at a
cost that does not grow with the jobs table.

As tries finish, the supervisor's writes add them up (``record``) per span of minutes (1
and 15), queue, type and outcome (succeeded, failed, retried), in memory, and write them in
one upsert at most once a second (``flush``; elsewhere, one upsert per call): never a
statement per job. Each try counts three times: under its queue and type, under its queue
with the type ``ALL``, and under ``ALL`` for both, so a chart of a queue or of the whole
fleet reads its own few rows, however many types and queues there are. Each
(measure, bucket) is one row holding a count, where the measures are the wait (due to
started) and the run (started to finished) and the buckets a fixed log-scale histogram:

    bucket 0        under 1 ms
    bucket b ≥ 1    [2^((b-1)/4), 2^(b/4)) ms: four buckets an octave, up to 2^(119/4) ms
                    (about 98 hours) in bucket 119; anything longer counts there too.

Buckets add up across workers, minutes, queues and types, so any percentile of any group
is read from summed counts; an estimate is the bucket's geometric middle, at most 2^(1/8)
- 1 ≈ 9 % off the true value (under 1 ms: reported as 0.5 ms). Only buckets that hold
a try have a row, so a minute of one type whose runs take about the same time is a few
rows however many jobs it ran.

The queue depth (due and running jobs per queue) cannot be added up as jobs finish: one
worker of the fleet samples it a minute (``sample_depth``, the first to book the minute's
marker row), counting due jobs up to ``DEPTH_CAP`` per queue.

Both tables are pruned on their own retention (``JOBS_ROLLUP_KEEP_DAYS``) by ``prune``,
which ``jobs.store.prune`` calls.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from jobs import registry
from jobs.conf import jobs_settings
from jobs.drivers import driver
from jobs.drivers.protocol import RollupRow
from jobs.models import Job, QueueDepth, Rollup, Status

logger = logging.getLogger("jobs.rollup")

SUCCEEDED, FAILED, RETRIED = "succeeded", "failed", "retried"
OUTCOMES = (SUCCEEDED, FAILED, RETRIED)
WAIT, RUN = "w", "r"
SPANS = (1, 15)  # minutes
BUCKETS_PER_OCTAVE = 4
LAST_BUCKET = 119
DEPTH_MARKER = ""  # the queue of the row that books a minute's depth sample
ALL = ""  # the queue and the type of the rows that sum every queue, or every type


def upper_bound(index: int) -> float:
    """A bucket's upper bound, in seconds (a Prometheus histogram's ``le``)."""
    return 2 ** (index / BUCKETS_PER_OCTAVE) / 1000


# Each bucket's lower bound: bucket 0 is under a millisecond, bucket i from upper_bound(i - 1)
# up to upper_bound(i), the last one has no upper bound. A supervisor buckets two durations
# of every try it acknowledges, so the bucket is found by bisection, not by a logarithm.
_LOWER_BOUNDS = tuple(upper_bound(index) for index in range(LAST_BUCKET))


def bucket(seconds: float | None) -> int:
    """The histogram bucket of a duration."""
    return 0 if seconds is None else bisect.bisect_right(_LOWER_BOUNDS, seconds)


def bucket_value(index: int) -> float:
    """A bucket's estimate, in seconds: its geometric middle."""
    if index <= 0:
        return 0.0005
    return 2 ** ((index - 0.5) / BUCKETS_PER_OCTAVE) / 1000


def span_start(moment: datetime, span: int) -> datetime:
    moment = moment.replace(second=0, microsecond=0)
    return moment.replace(minute=moment.minute - moment.minute % span)


# --- writing ---------------------------------------------------------------------------


class Finished(NamedTuple):
    """One finished try, as the rollup counts it (a tuple: a supervisor makes one for every
    try it acknowledges)."""

    queue: str
    type: str
    outcome: str
    waited: float | None
    ran: float | None

    def with_outcome(self, outcome: str) -> Finished:
        return self._replace(outcome=outcome)


Key = tuple[int, datetime, str, str, str, str, int]


def counts(tries: Iterable[Finished], now: datetime | None = None) -> Counter[Key]:
    """The tries counted per rollup row (span, start, queue, type, outcome, measure, bucket)."""
    now = now or timezone.now()
    starts = {span: span_start(now, span) for span in SPANS}
    # First by what tells tries apart (a batch's tries mostly share it), then spread over the
    # spans and measures once per distinct kind: a few operations a try on the hot path.
    kinds = Counter(
        (each.queue, each.type, each.outcome, bucket(each.waited), bucket(each.ran)) for each in tries
    )
    counted: Counter[Key] = Counter()
    for (queue, type_name, outcome, wait_bucket, run_bucket), count in kinds.items():
        for group in ((queue, type_name), (queue, ALL), (ALL, ALL)):
            for span, start in starts.items():
                counted[(span, start, *group, outcome, WAIT, wait_bucket)] += count
                counted[(span, start, *group, outcome, RUN, run_bucket)] += count
    return counted


def rows(tries: Iterable[Finished], now: datetime | None = None) -> list[RollupRow]:
    """The upsert's rows for these tries: counted per key, sorted (every writer locks rows
    in the same order, so two writers never deadlock on them)."""
    return _sorted(counts(tries, now))


def _sorted(counted: Counter[Key]) -> list[RollupRow]:
    """In the primary key's order (span, queue, type, minute, …): the order its rows lock in."""
    ordered = sorted(
        counted.items(), key=lambda item: (item[0][0], item[0][2], item[0][3], item[0][1], *item[0][4:])
    )
    return [(*key, count) for key, count in ordered]


#: A worker's supervisor adds its tries up in memory and writes them at most this often:
#: at a thousand jobs a second, one upsert a second rather than one per acknowledgement
#: batch, and a row of the rollup updated that much less often (each update leaves a row
#: version behind until vacuum).
FLUSH_SECONDS = 1.0


class _Pending:
    """The tries a supervisor counted and has not written yet (``buffer``)."""

    def __init__(self) -> None:
        self.counted: Counter[Key] = Counter()
        self.due = 0.0


_pending: _Pending | None = None


def buffer() -> None:
    """From now on, in this process, ``record`` adds up in memory and ``flush`` writes (a
    worker's supervisor: ``jobs.worker.supervisor``)."""
    global _pending
    _pending = _Pending()


def pending() -> bool:
    return _pending is not None and bool(_pending.counted)


def record(tries: Sequence[Finished]) -> None:
    """Add finished tries to the rollup: one statement, or (in a supervisor, ``buffer``) a
    count in memory that ``flush`` writes. A failure to write loses these figures only
    (logged): it never fails the acknowledgement that came before it."""
    if not tries:
        return
    if _pending is not None:
        _pending.counted.update(counts(tries))
        return
    _write(rows(tries))


def flush(*, force: bool = False) -> None:
    """Write what a supervisor counted, once ``FLUSH_SECONDS`` passed since the last write
    (``force``: now, the worker is stopping). On an outage the counts stay for the next try."""
    if _pending is None or not _pending.counted:
        return
    now = time.monotonic()
    if not force and now < _pending.due:
        return
    _write(_sorted(_pending.counted))
    _pending.counted.clear()
    _pending.due = now + FLUSH_SECONDS


def _write(upsert: list[RollupRow]) -> None:
    try:
        if connection.in_atomic_block:
            with transaction.atomic():  # a savepoint: an error must not break the caller's
                driver().add_to_rollup(upsert)
        else:
            driver().add_to_rollup(upsert)  # autocommit: one round trip
    except IntegrityError:  # a column's bound: a figure is not worth a failed write
        logger.warning("Could not add %d rows to the rollup.", len(upsert), exc_info=True)


#: A queue's due jobs are counted up to this many a sample (an index-only read of the claim
#: index's first entries): the supervisor that samples must not stall on a huge backlog.
DEPTH_CAP = 100_000


def sample_depth(now: datetime | None = None) -> bool:
    """Sample every queue's depth for this minute, unless another worker of the fleet
    already booked the minute; whether this call did. One short read a minute per worker,
    and the counts (due jobs up to ``DEPTH_CAP`` per queue, running jobs) once a minute per
    fleet."""
    now = now or timezone.now()
    minute = span_start(now, 1)
    if QueueDepth.objects.filter(minute=minute, queue=DEPTH_MARKER).exists():
        return False  # another worker samples this minute
    try:
        with transaction.atomic():
            QueueDepth.objects.create(minute=minute, queue=DEPTH_MARKER)
    except IntegrityError:
        return False  # it booked the minute a moment ago
    running = dict(
        Job.objects.filter(status=Status.RUNNING).values_list("queue").annotate(n=Count("id")).order_by()
    )
    queues = sorted({*registry.queues(), *running})
    due_now = driver().due(now)  # read so that jobs due later cost nothing
    due = {queue: Job.objects.filter(due_now, queue=queue)[:DEPTH_CAP].count() for queue in queues}
    QueueDepth.objects.bulk_create(
        [
            QueueDepth(minute=minute, queue=queue, due=due[queue], running=running.get(queue, 0))
            for queue in queues
        ],
        ignore_conflicts=True,
    )
    return True


def prune(now: datetime | None = None) -> int:
    """Delete rollup rows and depth samples older than ``JOBS_ROLLUP_KEEP_DAYS``."""
    cutoff = (now or timezone.now()) - timedelta(days=jobs_settings.ROLLUP_KEEP_DAYS)
    deleted = Rollup.objects.filter(minute__lt=cutoff).delete()[0]  # a range of jobs_rollup_minute
    depth, _ = QueueDepth.objects.filter(minute__lt=cutoff).delete()
    return deleted + depth


# --- reading ---------------------------------------------------------------------------


@dataclass
class Histogram:
    """Summed bucket counts of one measure."""

    counts: Counter[int] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def add(self, index: int, count: int) -> None:
        self.counts[index] += count

    def up_to(self, index: int) -> int:
        """Tries in buckets up to ``index`` (a cumulative histogram bucket's count)."""
        return sum(count for each, count in self.counts.items() if each <= index)

    def estimated_sum(self) -> float:
        return sum(bucket_value(index) * count for index, count in self.counts.items())

    def percentile(self, fraction: float) -> float | None:
        """The estimate (seconds) below which ``fraction`` of the tries fell; None if none."""
        total = self.total
        if not total:
            return None
        rank = fraction * total
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return bucket_value(index)
        return bucket_value(max(self.counts))


@dataclass
class Point:
    """One interval of a chart: tries finished by outcome, the wait's and the run's p50 and
    p95 (seconds; None without tries), and the depth."""

    start: datetime
    outcomes: Counter[str] = field(default_factory=Counter)
    wait: tuple[float | None, float | None] = (None, None)
    run: tuple[float | None, float | None] = (None, None)
    tries: int = 0
    due: int | None = None
    running: int | None = None


@dataclass(frozen=True)
class Window:
    """A chart's range: ``points`` intervals of ``span`` minutes up to now."""

    name: str
    span: int
    points: int

    def starts(self, now: datetime) -> list[datetime]:
        last = span_start(now, self.span)
        return [last - timedelta(minutes=self.span * back) for back in range(self.points - 1, -1, -1)]


HOUR = Window("hour", 1, 60)
DAY = Window("day", 15, 96)
WINDOWS = {window.name: window for window in (HOUR, DAY)}
FRACTIONS = (0.5, 0.95)


def series(window: Window, queue: str | None = None, now: datetime | None = None) -> list[Point]:
    """The chart's points: one read of the rollup's range (span, minute) and one of the depth
    samples, each grouped in the database into a few hundred rows, whatever the size of the
    jobs table (the percentiles and the outcomes: ``Driver.rollup_figures``)."""
    now = now or timezone.now()
    starts = window.starts(now)
    points = {start: Point(start) for start in starts}
    depth = QueueDepth.objects.filter(minute__gte=starts[0]).exclude(queue=DEPTH_MARKER)
    if queue is not None:
        depth = depth.filter(queue=queue)
    figures = driver().rollup_figures(window.span, starts[0], queue or ALL, FRACTIONS, OUTCOMES)
    for minute, measure, total, low, high, outcomes in figures:
        point = points.get(minute)
        if point is None:
            continue
        estimates = (bucket_value(low), bucket_value(high))
        if measure == RUN:
            point.run, point.tries = estimates, total
            point.outcomes.update(
                {name: count for name, count in zip(OUTCOMES, outcomes, strict=True) if count}
            )
        else:
            point.wait = estimates
    # The depth of an interval of 15 minutes is its last sample's.
    sampled = depth.values_list("minute").annotate(due=Sum("due"), running=Sum("running")).order_by("minute")
    for minute, due, running in sampled:
        point = points.get(span_start(_aware(minute), window.span))
        if point is not None:
            point.due, point.running = due, running
    return [points[start] for start in starts]


@dataclass
class Recent:
    """The tries finished since a moment: counts by (queue, outcome), histograms by
    (queue, measure)."""

    finished: Counter[tuple[str, str]] = field(default_factory=Counter)
    histograms: dict[tuple[str, str], Histogram] = field(default_factory=dict)


def recent(since: datetime) -> Recent:
    """The Prometheus figures: one grouped read of the minute rollup since ``since`` (the
    minute it falls in included)."""
    found = Recent()
    grouped = (
        Rollup.objects.filter(span=1, minute__gte=span_start(since, 1), type=ALL)
        .exclude(queue=ALL)
        .values_list("queue", "outcome", "measure", "bucket")
        .annotate(n=Sum("tries"))
        .order_by()
    )
    for queue, outcome, measure, index, count in grouped:
        found.histograms.setdefault((queue, measure), Histogram()).add(index, count)
        if measure == RUN:
            found.finished[queue, outcome] += count
    return found


def _aware(moment: datetime) -> datetime:
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)
