"""The verbs every database does the same way, through Django's ORM.

The drivers start from these: SQLite keeps them all, MariaDB and PostgreSQL replace the
ones their own SQL does in fewer statements. Any statement a driver runs itself goes
through ``execute`` (or a cursor from ``cursor``): Django's cursor, so the connection's
execute wrappers, ``CaptureQueriesContext`` and DEBUG's query log see it like any ORM
query.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import reduce
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.models import (
    Case,
    Count,
    DateTimeField,
    Exists,
    F,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Now
from django.db.models.lookups import GreaterThan
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs.drivers.protocol import (
    Batch,
    Candidate,
    ClaimedJob,
    Done,
    FlowTransaction,
    GateSave,
    Leased,
    Locks,
    Promoted,
    RollupRow,
    Running,
    SparedPlan,
    StepRow,
    Subscription,
    Taken,
    TaskRow,
    TaskTryRow,
    TryFields,
)
from jobs.flow.rates import with_pending
from jobs.models import FlowGate, Job, JobAttempt, Status, Worker, WorkflowEdge, WorkflowStep

#: A job without limit keys: claimed without flow control (``jobs.flow``).
UNKEYED = Q(concurrency_key__isnull=True, rate_key__isnull=True)


def _stores(**keys: str | None) -> Q:
    """Rows storing these limit keys (None: none)."""
    found = Q()
    for name, key in keys.items():
        found &= Q(**{f"{name}__isnull": True}) if key is None else Q(**{name: key})
    return found


STEP = WorkflowStep.Status
#: Rows a bulk insert of steps or edges writes per statement.
INSERT_BATCH = 2_000

# --- workflows: statements every database runs alike ---

# The steps downstream of some steps, however far: a recursive walk of the edges from
# them (``jobs_workflow_edge``'s primary key, upstream first, serves each level). Standard
# SQL, the same on PostgreSQL, MariaDB and SQLite. It reads only the edges, so MariaDB may
# update the steps it names in the same statement. ``{seeds}`` is a list of placeholders.
_BELOW = """
WITH RECURSIVE below(id) AS (
    SELECT downstream_id FROM jobs_workflow_edge WHERE upstream_id IN ({seeds})
    UNION
    SELECT e.downstream_id FROM jobs_workflow_edge AS e JOIN below ON e.upstream_id = below.id
)
SELECT id FROM below
"""
# A failed step's waiting steps, cancelled with a message that names it (or the steps below
# a retried one put back to waiting, ``RESTORE_BELOW``). Locks the steps it changes, by
# primary key, until the caller's transaction ends; the caller holds the workflow's row.
CANCEL_BELOW = f"""
UPDATE jobs_workflow_step SET status = %s, message = %s, finished_at = %s
 WHERE status = %s AND id IN ({_BELOW})
"""
RESTORE_BELOW = f"""
UPDATE jobs_workflow_step SET status = %s, message = '', finished_at = NULL
 WHERE status = %s AND id IN ({_BELOW})
"""


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else (end - start).total_seconds()


def _moment(value: Any) -> datetime:
    """A moment read by a raw statement: aware, in UTC (SQLite hands back text)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)


def placeholders(values: Sequence[object]) -> str:
    """``%s, %s, …``, one per value, for an ``IN (…)`` list."""
    return ", ".join(["%s"] * len(values))


def claimed_row_fields(worker: str, at: datetime | None = None) -> dict[str, Any]:
    """What a claim writes on a job it takes: one more attempt, running for ``worker``
    since ``at`` (the database's now, unless a flow-controlled claim read its clock)."""
    started: Any = Now() if at is None else at
    return {
        "status": Status.RUNNING,
        "due_later": False,  # a test's inline run may take a job before its time
        "attempts": F("attempts") + 1,
        "locked_by": worker,
        "started_at": started,
        "heartbeat_at": started,
        "finished_at": None,
        "progress": None,
        "progress_message": "",
    }


def micros(moment: datetime) -> int:
    """A moment as whole microseconds since the epoch (the flow windows' clock)."""
    return round(moment.timestamp() * 1_000_000)


def moment(micros_since_epoch: int) -> datetime:
    return datetime.fromtimestamp(micros_since_epoch / 1_000_000, tz=UTC)


def stored_moment(micros_since_epoch: int) -> datetime:
    """A stored time read as microseconds since the epoch, as Django would read the column:
    aware in UTC, or naive in the current time zone without USE_TZ."""
    at = moment(micros_since_epoch)
    return at if settings.USE_TZ else timezone.make_naive(at)


def try_row(job_id: int, queue: str, fields: TryFields) -> TaskTryRow:
    """A task's try row from its fields as the PostgreSQL statements give them (times as
    µs since the epoch; ``ClaimedJob.try_fields``)."""
    priority, run_at, created_at, started_at, tried = fields
    return TaskTryRow(
        job_id, queue, priority, stored_moment(run_at), stored_moment(created_at),
        None if started_at is None else stored_moment(started_at), tried,
    )  # fmt: skip


class _StepByStep:
    """A round of a flow-controlled claim, a statement per step, in the driver's atomic
    block (``OrmDriver.flow_transaction``); a driver overrides the steps it does its own way
    (``flow_candidates``, ``flow_running``, ``flow_mark_claimed``, ``flow_save_gates``)."""

    takes = False  # ``take`` is a database's own statement: none here

    def __init__(self, driver: OrmDriver) -> None:
        self.driver = driver

    def take(
        self,
        worker: str,
        queues: Sequence[str],
        limit: int,
        full_keys: Sequence[str],
        waiting_keys: Sequence[str],
        *,
        keyed_only: bool,
        first: Locks,
    ) -> Taken:
        raise NotImplementedError("take is offered by the drivers whose flow_transaction says takes")

    def end(self) -> None:
        raise NotImplementedError("a round step by step ends with its atomic block")

    def candidates(
        self,
        queues: Sequence[str],
        limit: int,
        full_keys: Sequence[str],
        waiting_keys: Sequence[str],
        *,
        keyed_only: bool = False,
        first: Locks | None = None,
    ) -> tuple[list[Candidate], dict[str, str], Running | None]:
        recent, running = self.lock_and_count(*first) if first is not None else ({}, None)
        found = self.driver.flow_candidates(queues, limit, full_keys, waiting_keys, keyed_only=keyed_only)
        return found, recent, running

    def lock_and_count(
        self, gates: Sequence[str], keys: Sequence[str], queues: Sequence[str]
    ) -> tuple[dict[str, str], Running]:
        # In key order: two claims wanting the same gates queue up rather than deadlock.
        locked = (
            self.driver.gates()
            .select_for_update()
            .filter(key__in=gates)
            .order_by("key")
            .values_list("key", "recent", "spare_pending_at", "spare_pending", "leases")
        )
        recent = {key: with_pending(text, at, pending, leases) for key, text, at, pending, leases in locked}
        return recent, self.driver.flow_running(keys, queues)

    def finish(
        self,
        worker: str,
        ids: Sequence[int],
        at: datetime | None,
        rekeyed: Mapping[int, tuple[str | None, str | None]],
        gates: Mapping[str, GateSave],
    ) -> list[ClaimedJob]:
        claimed = self.driver.flow_mark_claimed(worker, ids, at, rekeyed) if ids else []
        if gates:
            self.driver.flow_save_gates(gates)
        return claimed  # the atomic block commits as it ends


class OrmDriver:
    """The portable driver: correct on any database Django supports, in more statements
    than a database's own SQL needs."""

    vendor = ""
    listens = False

    def __init__(self, alias: str = DEFAULT_DB_ALIAS) -> None:
        self.alias = alias

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.alias}>"

    @property
    def connection(self) -> BaseDatabaseWrapper:
        return connections[self.alias]

    def is_conflict(self, error: BaseException) -> bool:
        return False  # not known on a database without a driver of its own: an outage

    def jobs(self) -> QuerySet[Job]:
        return Job.objects.using(self.alias)

    # --- statements: the one way a driver runs its own SQL ---

    def cursor(self) -> CursorWrapper:
        """A cursor of Django's, through the connection's execute-wrapper chain."""
        return self.connection.cursor()

    def execute(
        self, statement: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[tuple[Any, ...]]:
        """Run one statement; its rows (none for a statement that returns none)."""
        with self.cursor() as cursor:
            cursor.execute(statement, params)
            return cursor.fetchall() if cursor.description is not None else []

    # --- sessions ---

    def prepare_session(self, connection: BaseDatabaseWrapper) -> None:
        pass

    def prepare_supervisor_session(self, connection: BaseDatabaseWrapper) -> None:
        pass

    def session_mismatch(self) -> tuple[str, str] | None:
        return None

    def upkeep_off(self) -> str | None:
        return None

    # --- enqueue ---

    def insert_one(self, fields: Mapping[str, Any], payload_text: str) -> Job | None:
        if fields["dedupe_key"] is None:
            return self.jobs().create(**fields)
        try:
            with transaction.atomic(using=self.alias):  # a savepoint when the caller has a transaction
                return self.jobs().create(**fields)
        except IntegrityError:
            return None

    def insert_many(self, batch: Batch) -> int:
        now = timezone.now()
        rows = [
            Job(
                type=batch.type,
                queue=batch.queue,
                priority=batch.priority,
                payload=json.loads(text),
                dedupe_key=key,
                max_attempts=batch.max_attempts,
                run_at=batch.run_at or now,
                concurrency_key=concurrency_key,
                rate_key=rate_key,
                traceparent=batch.traceparent,
                due_later=batch.due_later,
            )
            for text, key, concurrency_key, rate_key in zip(
                batch.payloads, batch.dedupe_keys, batch.concurrency_keys(), batch.rate_keys(), strict=True
            )
        ]
        # bulk_create does not say how many rows a conflict skipped: count around it.
        before = self.jobs().count()
        self.jobs().bulk_create(rows, ignore_conflicts=True)
        return self.jobs().count() - before

    # --- claim and finish ---

    def claim(
        self,
        worker: str,
        queues: Sequence[str],
        limit: int,
        *,
        unkeyed: bool = False,
        with_rows: Sequence[str] = (),  # their tries read their rows (``task_try_rows``)
        leased: Leased | None = None,
    ) -> list[ClaimedJob]:
        # Select, mark and re-read in one transaction; the row locks (where the database
        # takes them) last until its end.
        with transaction.atomic(using=self.alias):
            due = self.jobs().filter(
                status=Status.QUEUED, due_later=False, queue__in=queues, run_at__lte=Now()
            )
            if unkeyed:
                due = due.filter(UNKEYED)
            if leased is not None:
                due = due.filter(
                    Q(type=leased.type)
                    & _stores(concurrency_key=leased.concurrency_key, rate_key=leased.rate_key)
                    & Q(GreaterThan(Value(leased.until, output_field=DateTimeField()), Now()))
                )
            ids = list(
                due.select_for_update(skip_locked=True)
                .order_by("priority", "run_at", "id")
                .values_list("id", flat=True)[:limit]
            )
            if not ids:
                return []
            self.jobs().filter(id__in=ids).update(**claimed_row_fields(worker))
            claimed = self.jobs().filter(id__in=ids).order_by("priority", "run_at", "id")
            return [_claimed_job(job) for job in claimed]

    def promote_due(self, limit: int) -> Promoted:
        waiting = self.jobs().filter(status=Status.QUEUED, due_later=True)
        with transaction.atomic(using=self.alias):
            rows = list(
                waiting.select_for_update(skip_locked=True)
                .filter(run_at__lte=Now())
                .order_by("run_at")
                .values_list("id", "queue")[:limit]
            )
            if rows:
                self.jobs().filter(id__in=[job_id for job_id, _ in rows]).update(due_later=False)
        # Read after the promotion committed: zero or less when one is due already. The
        # embedded database's clock is this host's.
        following = waiting.aggregate(at=Min("run_at"))["at"]
        next_due_in = None if following is None else (following - timezone.now()).total_seconds()
        return Promoted(len(rows), sorted({queue for _, queue in rows}), next_due_in)

    def complete_many(
        self, worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None
    ) -> list[Done]:
        applied = []
        with transaction.atomic(using=self.alias):
            for index, (job_id, attempt) in enumerate(done):
                stored = {} if results is None else {"result": json.loads(results[index])}
                if self.set_state_if_running(
                    worker,
                    job_id,
                    attempt,
                    status=Status.SUCCEEDED,
                    finished_at=Now(),
                    progress=100,
                    error="",
                    **stored,
                ):
                    applied.append(job_id)
        return self.done(applied)

    def done(self, job_ids: Sequence[int]) -> list[Done]:
        """The jobs just marked succeeded, as ``complete_many`` returns them (one read)."""
        if not job_ids:
            return []
        rows = (
            self.jobs()
            .filter(pk__in=job_ids)
            .values_list("id", "queue", "type", "run_at", "started_at", "finished_at")
        )
        return [
            Done(job_id, queue, type_name, _seconds(run_at, started_at), _seconds(started_at, finished_at))
            for job_id, queue, type_name, run_at, started_at, finished_at in rows
        ]

    # The rollup's upsert (``add_to_rollup``), as PostgreSQL and SQLite (3.24+) write it.
    ADD_TO_ROLLUP = """
INSERT INTO jobs_rollup (span, minute, queue, type, outcome, measure, bucket, tries)
VALUES {values}
    ON CONFLICT (span, queue, type, minute, outcome, measure, bucket)
    DO UPDATE SET tries = jobs_rollup.tries + excluded.tries
"""

    def add_to_rollup(self, rows: Sequence[RollupRow]) -> None:
        if not rows:
            return
        values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows))
        params = [self._rollup_value(value) for row in rows for value in row]
        with self.cursor() as cursor:
            cursor.execute(self.ADD_TO_ROLLUP.format(values=values), params)

    # The charts' figures (``rollup_figures``), in SQL every supported database speaks
    # (window functions: PostgreSQL, MariaDB 10.2+, SQLite 3.25+), in one statement: per
    # interval and measure, the buckets of the queue's (or the fleet's) rows of every type
    # (type "", see ``jobs.rollup``) summed over the outcomes; the first
    # bucket whose running total reaches each fraction; and the tries of each outcome. A
    # few hundred rows come back, not the thousands of buckets they are read from.
    ROLLUP_FIGURES = """
SELECT minute, measure, total,
       MIN(CASE WHEN below >= %s * total THEN bucket END),
       MIN(CASE WHEN below >= %s * total THEN bucket END),
       MAX(first), MAX(second), MAX(third)
  FROM (SELECT minute, measure, bucket,
               SUM(n) OVER (PARTITION BY minute, measure ORDER BY bucket) AS below,
               SUM(n) OVER (PARTITION BY minute, measure) AS total,
               SUM(n1) OVER (PARTITION BY minute, measure) AS first,
               SUM(n2) OVER (PARTITION BY minute, measure) AS second,
               SUM(n3) OVER (PARTITION BY minute, measure) AS third
          FROM (SELECT minute, measure, bucket, SUM(tries) AS n,
                       SUM(CASE WHEN outcome = %s THEN tries ELSE 0 END) AS n1,
                       SUM(CASE WHEN outcome = %s THEN tries ELSE 0 END) AS n2,
                       SUM(CASE WHEN outcome = %s THEN tries ELSE 0 END) AS n3
                  FROM jobs_rollup
                 WHERE span = %s AND minute >= %s AND queue = %s AND type = %s
                 GROUP BY minute, measure, bucket) AS summed) AS running
 GROUP BY minute, measure, total
"""

    def rollup_figures(
        self,
        span: int,
        since: datetime,
        queue: str,
        fractions: tuple[float, float],
        outcomes: tuple[str, str, str],
    ) -> list[tuple[datetime, str, int, int, int, tuple[int, int, int]]]:
        params: list[Any] = [*fractions, *outcomes, span, self._rollup_value(since), queue, ""]
        return [
            (_moment(minute), measure, int(total), int(low), int(high), (int(one), int(two), int(three)))
            for minute, measure, total, low, high, one, two, three in self.execute(
                self.ROLLUP_FIGURES, params
            )
        ]

    def _rollup_value(self, value: Any) -> Any:
        # A moment as the connection stores it (UTC, aware or naive as the backend wants).
        if isinstance(value, datetime):
            return self.connection.ops.adapt_datetimefield_value(value)
        return value

    def _fenced(self, worker: str, job_id: int, attempt: int) -> QuerySet[Job]:
        return self.jobs().filter(id=job_id, attempts=attempt, locked_by=worker, status=Status.RUNNING)

    def set_state_if_running(self, worker: str, job_id: int, attempt: int, **changes: Any) -> bool:
        # One UPDATE whose WHERE is the fence; its row count is the answer. It locks the one
        # row, through the primary key, until the caller's transaction ends.
        return bool(self._fenced(worker, job_id, attempt).update(**changes))

    def lock_if_running(self, worker: str, job_id: int, attempt: int) -> Job | None:
        return self._fenced(worker, job_id, attempt).select_for_update().first()

    # --- flow control ---

    def gates(self) -> QuerySet[FlowGate]:
        return FlowGate.objects.using(self.alias)

    @contextmanager
    def flow_transaction(self) -> Iterator[FlowTransaction]:
        # One atomic block: the steps below, each a statement (or a few) of its own.
        with transaction.atomic(using=self.alias):
            yield _StepByStep(self)

    def flow_candidates(
        self,
        queues: Sequence[str],
        limit: int,
        full_keys: Sequence[str],
        waiting_keys: Sequence[str],
        *,
        keyed_only: bool = False,
    ) -> list[Candidate]:
        due = (
            self.jobs()
            .select_for_update(skip_locked=True)
            .filter(status=Status.QUEUED, due_later=False, queue__in=queues, run_at__lte=Now())
        )
        if keyed_only:
            due = due.filter(~UNKEYED)
        if full_keys:
            due = due.exclude(concurrency_key__in=full_keys)
        if waiting_keys:
            due = due.exclude(rate_key__in=waiting_keys)
        rows = due.order_by("priority", "run_at", "id").values_list(
            "id", "type", "queue", "concurrency_key", "rate_key"
        )[:limit]
        return [Candidate(*row) for row in rows]

    def flow_add_gates(self, keys: Sequence[str]) -> None:
        with transaction.atomic(using=self.alias):
            self.gates().bulk_create([FlowGate(key=key) for key in keys], ignore_conflicts=True)

    def flow_running(self, keys: Sequence[str], queues: Sequence[str]) -> Running:
        """The clock and the running jobs of each key and queue (``lock_and_count``'s count)."""
        running = self.jobs().filter(status=Status.RUNNING)
        by_key: dict[str, int] = {}
        by_queue: dict[str, int] = {}
        if keys:
            counted = (
                running.filter(concurrency_key__in=keys)
                .values("concurrency_key")
                .annotate(n=Count("id"))
                .order_by()
                .values_list("concurrency_key", "n")
            )
            by_key = {key: n for key, n in counted if key is not None}
        if queues:
            by_queue = dict(
                running.filter(queue__in=queues)
                .values("queue")
                .annotate(n=Count("id"))
                .order_by()
                .values_list("queue", "n")
            )
        return Running(micros(timezone.now()), by_key, by_queue)

    def flow_mark_claimed(
        self,
        worker: str,
        ids: Sequence[int],
        at: datetime | None,
        rekeyed: Mapping[int, tuple[str | None, str | None]],
    ) -> list[ClaimedJob]:
        """``finish``'s update: the locked jobs ``ids`` running, in that order."""
        for job_id, (concurrency_key, rate_key) in rekeyed.items():
            self.jobs().filter(id=job_id).update(concurrency_key=concurrency_key, rate_key=rate_key)
        self.jobs().filter(id__in=ids).update(**claimed_row_fields(worker, at))
        order = {job_id: position for position, job_id in enumerate(ids)}
        claimed = sorted(self.jobs().filter(id__in=ids), key=lambda job: order[job.id])
        return [_claimed_job(job) for job in claimed]

    def flow_save_gates(self, gates: Mapping[str, GateSave]) -> None:
        for key, saved in gates.items():
            fields = {
                name: value
                for name, value in saved._asdict().items()
                if name != "leases" or value is not None
            }
            self.gates().filter(key=key).update(**fields, spare_pending_at=None, spare_pending=None)

    def flow_take_spared(self, plan: SparedPlan) -> list[ClaimedJob] | None:
        return None  # the portable round always counts

    def flow_prune_gates(self, keep: Callable[[str, str], bool], batch_size: int) -> int:
        pruned = 0
        after = ""
        while True:
            # Each batch is its own short transaction, skipping the gates a claim holds.
            with transaction.atomic(using=self.alias):
                rows = list(
                    self.gates()
                    .select_for_update(skip_locked=True)
                    .filter(key__gt=after)
                    .order_by("key")
                    .values_list("key", "recent", "spare_pending_at", "spare_pending")[:batch_size]
                )
                if not rows:
                    return pruned
                gone = [
                    key
                    for key, recent, at, pending in rows
                    if not keep(key, with_pending(recent, at, pending))
                ]
                if gone:
                    self.gates().filter(key__in=gone).delete()
                pruned += len(gone)
            after = rows[-1][0]

    # --- workflows ---

    def insert_steps(self, workflow_id: int, rows: Sequence[StepRow], added_by: int | None) -> list[int]:
        steps = [
            WorkflowStep(
                workflow_id=workflow_id,
                position=row.position,
                name=row.name,
                type=row.type,
                queue=row.queue,
                priority=row.priority,
                payload=json.loads(row.payload),
                dedupe_key=row.dedupe_key,
                concurrency_key=row.concurrency_key,
                rate_key=row.rate_key,
                max_attempts=row.max_attempts,
                delay=row.delay,
                results_as=row.results_as,
                status=row.status,
                pending=row.pending,
                depth=row.depth,
                added_by=added_by,
            )
            for row in rows
        ]
        # The primary keys come back from the insert (RETURNING) on every supported database.
        WorkflowStep.objects.using(self.alias).bulk_create(steps, batch_size=INSERT_BATCH)
        return [step.pk for step in steps]

    def insert_edges(self, pairs: Sequence[tuple[int, int]]) -> None:
        WorkflowEdge.objects.using(self.alias).bulk_create(
            [WorkflowEdge(upstream_id=up, downstream_id=down) for up, down in pairs], batch_size=INSERT_BATCH
        )

    def release_workflow(self, workflow_id: int) -> int:
        return self._insert_step_jobs(
            WorkflowStep.objects.using(self.alias).filter(workflow_id=workflow_id, status=STEP.RELEASED)
        )

    def release_steps(self, step_ids: Sequence[int]) -> int:
        return self._insert_step_jobs(
            WorkflowStep.objects.using(self.alias).filter(pk__in=list(step_ids), status=STEP.RELEASED)
        )

    def release_successors(self, step_id: int) -> int:
        steps = WorkflowStep.objects.using(self.alias)
        below = WorkflowEdge.objects.using(self.alias).filter(upstream_id=step_id).values("downstream_id")
        # The status before the count: MariaDB assigns from left to right, so each
        # assignment here reads the count as it was, on every database. A cancelled step
        # (below a failed one) is counted down too, for the day its upstream is retried.
        steps.filter(pk__in=below).update(
            status=Case(When(pending=1, status=STEP.WAITING, then=Value(STEP.RELEASED)), default=F("status")),
            pending=F("pending") - 1,
        )
        return self._insert_step_jobs(steps.filter(pk__in=below, status=STEP.RELEASED, pending=0))

    def _insert_step_jobs(self, steps: QuerySet[WorkflowStep]) -> int:
        """Each step's job, skipping those that have one and those whose dedupe key an
        active job holds (the unique indexes refuse them)."""
        rows = list(
            steps.exclude(Exists(self.jobs().filter(step_id=OuterRef("pk"))))
            .order_by("id")
            .values(
                "id",
                "type",
                "queue",
                "priority",
                "payload",
                "dedupe_key",
                "concurrency_key",
                "rate_key",
                "max_attempts",
                "delay",
                "workflow__traceparent",  # its workflow's trace context (``jobs.tracing``)
            )
        )
        if not rows:
            return 0
        now = timezone.now()
        jobs = [
            Job(
                type=row["type"],
                queue=row["queue"],
                priority=row["priority"],
                payload=row["payload"],
                dedupe_key=row["dedupe_key"],
                concurrency_key=row["concurrency_key"],
                rate_key=row["rate_key"],
                max_attempts=row["max_attempts"],
                run_at=now + timedelta(seconds=row["delay"] or 0),
                due_later=bool(row["delay"]),  # waits for a promotion (``promote_due``)
                step_id=row["id"],
                traceparent=row["workflow__traceparent"],
            )
            for row in rows
        ]
        self.jobs().bulk_create(jobs, ignore_conflicts=True)
        return self.jobs().filter(step_id__in=[row["id"] for row in rows]).count()

    def cancel_below(self, step_ids: Sequence[int], message: str) -> int:
        if not step_ids:
            return 0
        statement = CANCEL_BELOW.format(seeds=placeholders(step_ids))
        with self.cursor() as cursor:
            now = self.connection.ops.adapt_datetimefield_value(timezone.now())  # as the ORM writes it
            cursor.execute(statement, [STEP.CANCELLED, message, now, STEP.WAITING, *step_ids])
            return cursor.rowcount

    def restore_below(self, step_id: int) -> int:
        statement = RESTORE_BELOW.format(seeds="%s")
        with self.cursor() as cursor:
            cursor.execute(statement, [STEP.WAITING, STEP.CANCELLED, step_id])
            return cursor.rowcount

    # --- recovery and housekeeping ---

    def reap(self, heartbeat_before: datetime, seen_before: datetime, limit: int) -> list[Job]:
        dead_workers = Worker.objects.using(self.alias).filter(last_seen__lt=seen_before).values("name")
        silent = Q(heartbeat_at__lt=heartbeat_before) | Q(locked_by__in=dead_workers)
        return self._lock_running(self.jobs().filter(silent), limit)

    def take_back(self, worker: str, limit: int) -> list[Job]:
        return self._lock_running(self.jobs().filter(locked_by=worker), limit)

    def _lock_running(self, rows: QuerySet[Job], limit: int) -> list[Job]:
        # SKIP LOCKED: two reapers at once split the rows instead of waiting on each other.
        return list(
            rows.filter(status=Status.RUNNING).select_for_update(skip_locked=True).order_by("id")[:limit]
        )

    def prune(self, finished_before: datetime, dismissed_before: datetime, batch_size: int) -> int:
        total = 0
        while True:
            # Each batch is its own short transaction so pruning never holds many locks.
            ids = list(
                self.jobs()
                .filter(
                    Q(status__in=(Status.SUCCEEDED, Status.CANCELLED), finished_at__lt=finished_before)
                    | Q(status=Status.FAILED, dismissed_at__lt=dismissed_before)
                )
                .order_by("id")  # oldest first, along the primary key
                .values_list("id", flat=True)[:batch_size]
            )
            if not ids:
                return total
            deleted, _ = self.jobs().filter(id__in=ids).delete()
            total += deleted

    # --- wake-up ---

    def notify(self, queues: Sequence[str]) -> None:
        pass  # workers poll

    def listen(self, connection: BaseDatabaseWrapper) -> Subscription:
        raise NotImplementedError(
            f"{self.vendor or 'this database'} has no notices to listen for; workers poll"
        )

    # --- timers ---

    @contextmanager
    def try_lock_steps(self, session: BaseDatabaseWrapper, names: Sequence[str]) -> Iterator[bool]:
        yield True  # one host (an embedded database): nothing runs a step beside it

    # --- reads ---

    def task_rows(self, job_ids: Sequence[int]) -> list[TaskRow]:
        # One statement: whether a job has failed tries is a subquery of the row's read (an
        # index probe of jobs_attempt's job_id), not a second statement on jobs_attempt.
        rows = (
            self.jobs()
            .filter(pk__in=job_ids)
            .annotate(tried=Exists(JobAttempt.objects.using(self.alias).filter(job_id=OuterRef("pk"))))
        )
        return [
            TaskRow(
                job.pk,
                job.type,
                job.queue,
                job.priority,
                job.status,
                json.dumps(job.payload),
                job.run_at,
                job.created_at,
                job.started_at,
                job.finished_at,
                job.locked_by,
                None if job.result is None else json.dumps(job.result),
                job.tried,
            )
            for job in rows
        ]

    def task_try_rows(self, job_ids: Sequence[int]) -> list[TaskTryRow]:
        rows = (
            self.jobs()
            .filter(pk__in=job_ids)
            .annotate(tried=Exists(JobAttempt.objects.using(self.alias).filter(job_id=OuterRef("pk"))))
            .values_list("pk", "queue", "priority", "run_at", "created_at", "started_at", "tried")
        )
        return [TaskTryRow(*row) for row in rows]

    def newest_of_keys(self, dedupe_keys: Sequence[str], types: Sequence[str]) -> Q:
        # A subquery per key, each one step backwards into ``jobs_dedupe_key`` (dedupe_key, id).
        return reduce(
            operator.or_,
            (
                Q(
                    pk=Subquery(
                        self.jobs().filter(type__in=types, dedupe_key=key).order_by("-id").values("id")[:1]
                    )
                )
                for key in dedupe_keys
            ),
        )

    def due(self, now: datetime) -> Q:
        return Q(status=Status.QUEUED, run_at__lte=now)

    def failed(self) -> Q:
        return Q(status=Status.FAILED)

    def estimate_rows(self, status: str) -> int:
        return 0

    @contextmanager
    def metrics_snapshot(self, timeout_ms: int) -> Iterator[None]:
        yield


def _claimed_job(job: Job) -> ClaimedJob:
    """A row the ORM just marked running, as the worker takes it."""
    return ClaimedJob(
        job.id, job.type, json.dumps(job.payload), job.attempts, job.max_attempts, job.queue, job.step_id
    )
