"""The only code that changes a job's status: one function per verb.

enqueue, enqueue_many, enqueue_task, claim, claim_job, complete, complete_in_transaction, fail,
reschedule, release, heartbeat, set_progress, cancel, cancel_if_queued, retry, dismiss, reap,
recover_worker, prune; and task_rows, the read django.tasks tasks' results are built from.
The worker calls these; it never writes SQL itself.

Every fenced verb (complete, complete_in_transaction, fail, reschedule, release,
set_progress) applies only while the job is still running under the same worker and
attempt, so a late result of a job that the reaper took back is dropped, never applied twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import psycopg
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from jobs import registry, retries, sql, validation
from jobs.conf import jobs_settings
from jobs.errors import FencedOff, InvalidJobOption, InvalidPayload, InvalidTransition
from jobs.models import ACTIVE, Job, JobAttempt, Status, Worker

logger = logging.getLogger("jobs.store")

REQUEUED_BY_ADMIN = "Requeued by an administrator."
REQUEUED_AFTER_RESTART = "Requeued after a worker restart."
BUDGET_EXHAUSTED = "Worker died and the retry budget is exhausted."
REQUEUED_AT_SHUTDOWN = "Stopped at worker shutdown and requeued."
CANCELLED = "Cancelled."
DISMISSED = "Dismissed by an administrator."


class ClaimedJob(NamedTuple):
    """A claimed job as the worker needs it: no model instance in the hot loop."""

    id: int
    type: str
    payload: str  # JSON text, parsed by the child process that runs it
    attempt: int
    max_attempts: int
    queue: str  # the row's, which a lane's fair share counts by


@dataclass(frozen=True)
class Failure:
    """What went wrong in one try."""

    error_class: str
    message: str
    traceback: str = ""
    retryable: bool = True

    @property
    def text(self) -> str:
        return f"{self.error_class}: {self.message}" if self.message else self.error_class


def _on_postgres() -> bool:
    return connection.vendor == "postgresql"


def _on_mariadb() -> bool:
    return connection.vendor == "mysql"  # MariaDB, or MySQL 8


def _placeholders(values: Sequence[object]) -> str:
    return ", ".join(["%s"] * len(values))


def _run_prepared(statement: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run a hot-path statement as a server-side prepared statement.

    Django's cursors bind parameters on the client and never prepare (for the sake of
    connection poolers); the claim and the acknowledgement run thousands of times a second,
    so they skip parsing and planning. ``JOBS_PREPARED_STATEMENTS=false`` turns this off
    for a pooler that cannot keep prepared statements.
    """
    connection.ensure_connection()
    raw = connection.connection
    with connection.wrap_database_errors:
        if not jobs_settings.PREPARED_STATEMENTS:
            with raw.cursor() as cursor:
                cursor.execute(statement, params)
                return cursor.fetchall()
        if raw.prepare_threshold is None:
            raw.prepare_threshold = 2**31 - 1  # prepare only what asks for it explicitly
        with psycopg.Cursor(raw) as cursor:
            cursor.execute(statement, params, prepare=True)
            return cursor.fetchall()


def notify(queues: Iterable[str]) -> None:
    """Wake idle workers of these queues (at commit). Enqueue does it by trigger."""
    if not _on_postgres():
        return
    with connection.cursor() as cursor:
        for queue in sorted(set(queues)):
            cursor.execute(sql.NOTIFY, [sql.CHANNEL, queue])


# --- enqueue ------------------------------------------------------------------------------


def enqueue(
    type_name: str,
    payload: dict[str, Any] | None = None,
    *,
    priority: str | None = None,
    run_at: datetime | None = None,
    dedupe_key: str | None = None,
) -> Job:
    """Add a job in the caller's transaction (commit makes it visible, rollback drops it).

    With a dedupe key (derived from the payload when the type declares one, else the
    caller's ``dedupe_key``), a queued or running job of the same type and key is returned
    instead of adding a second one; the database's partial unique index decides races.

    Everything is checked before the first statement (``jobs.validation``): a refused
    payload or option raises ``InvalidPayload`` or ``InvalidJobOption`` and leaves the
    caller's transaction as it was.
    """
    job_type = registry.get(type_name)
    payload = {} if payload is None else payload
    payload_text = validation.payload_text(payload)
    dedupe_key = _dedupe_key(job_type, payload, validation.dedupe_key(dedupe_key))
    run_at = validation.run_at(run_at)
    fields: dict[str, Any] = {
        "type": job_type.name,
        "queue": job_type.queue,
        "priority": validation.priority(priority if priority is not None else job_type.priority),
        "payload": payload,
        "max_attempts": job_type.attempts,
        "dedupe_key": dedupe_key,
    }
    if run_at is not None:
        fields["run_at"] = run_at
    # A concurrent twin may commit between our insert and our lookup, or finish between
    # the lookup and a new insert: a few rounds settle it.
    for _ in range(5):
        job = _insert_one(fields, payload_text)
        if job is not None:
            return job
        existing = Job.objects.filter(type=job_type.name, dedupe_key=dedupe_key, status__in=ACTIVE).first()
        if existing is not None:
            return existing
    raise IntegrityError(f"Could not enqueue {type_name} with dedupe key {dedupe_key!r}.")


def enqueue_task(
    type_name: str,
    payload: dict[str, Any],
    *,
    queue: str,
    priority: int,
    max_attempts: int,
    run_at: datetime | None = None,
) -> Job:
    """Add a django.tasks task (``jobs.backends``) in the caller's transaction, as
    ``enqueue`` adds a job: its type is the task's module path, its queue and priority (on
    the stored scale, see ``Priority``) the task's own; tasks have no dedupe key."""
    fields: dict[str, Any] = {
        "type": type_name,
        "queue": queue,
        "priority": priority,
        "payload": payload,
        "max_attempts": max_attempts,
        "dedupe_key": None,
    }
    run_at = validation.run_at(run_at)
    if run_at is not None:
        fields["run_at"] = run_at
    job = _insert_one(fields, validation.payload_text(payload))
    assert job is not None, "only a dedupe key can make an insert a no-op"
    return job


def _dedupe_key(job_type: registry.JobType, payload: dict[str, Any], given: str | None = None) -> str | None:
    """The key an enqueue stores; one made from the payload must fit its column too."""
    key = job_type.dedupe_key(payload, given)
    if job_type.dedupe is None:
        return key
    return validation.dedupe_key(key, error=InvalidPayload)


def _insert_one(fields: dict[str, Any], payload_text: str) -> Job | None:
    """Insert one job; None when an active job already holds its dedupe key."""
    if _on_postgres():
        # One prepared statement and one round trip: enqueue is on every producer's path.
        rows = _run_prepared(
            sql.INSERT_ONE,
            {**fields, "payload": payload_text, "run_at": fields.get("run_at")},
        )
        if not rows:
            return None
        job_id, run_at, created_at = rows[0]
        job = Job(
            id=job_id,
            run_at=run_at,
            created_at=created_at,
            **{k: v for k, v in fields.items() if k != "run_at"},
        )
        job._state.adding = False
        job._state.db = connection.alias
        return job
    if fields["dedupe_key"] is None:
        return Job.objects.create(**fields)
    try:
        with transaction.atomic():  # a savepoint when the caller has a transaction
            return Job.objects.create(**fields)
    except IntegrityError:
        return None


def enqueue_many(
    type_name: str,
    payloads: Iterable[dict[str, Any]],
    *,
    priority: str | None = None,
    run_at: datetime | None = None,
    dedupe_keys: Sequence[str | None] | None = None,
    batch_size: int = 10_000,
) -> int:
    """Add many jobs of one type in a few statements; returns how many were added.

    Rows whose dedupe key is already active (or repeats an earlier row's) are skipped. The
    keys are derived from the payloads when the type declares its key; ``dedupe_keys``
    (one per payload) serves types that do not.
    """
    job_type = registry.get(type_name)
    if job_type.dedupe is not None and dedupe_keys is not None:
        raise InvalidJobOption(
            f"Job type {type_name!r} derives its dedupe keys from the payloads; do not pass them."
        )
    # Every payload and option is checked before the first batch is written.
    texts: list[str] = []
    keys: list[str | None] = []
    for payload in payloads:
        texts.append(validation.payload_text(payload))
        keys.append(_dedupe_key(job_type, payload))
    if dedupe_keys is not None:
        keys = [validation.dedupe_key(key) for key in dedupe_keys]
        if len(keys) != len(texts):
            raise InvalidJobOption("dedupe_keys must have one entry per payload.")
    run_at = validation.run_at(run_at)
    priority_number = validation.priority(priority if priority is not None else job_type.priority)
    added = 0
    for start in range(0, len(texts), batch_size):
        chunk, chunk_keys = texts[start : start + batch_size], keys[start : start + batch_size]
        if _on_postgres():
            with connection.cursor() as cursor:
                cursor.execute(
                    sql.INSERT_MANY,
                    {
                        "type": job_type.name,
                        "queue": job_type.queue,
                        "priority": priority_number,
                        "run_at": run_at,
                        "max_attempts": job_type.attempts,
                        "payloads": chunk,
                        "dedupe_keys": chunk_keys,
                    },
                )
                added += cursor.rowcount
        elif _on_mariadb():
            now = timezone.now()
            with connection.cursor() as cursor:
                cursor.executemany(
                    sql.MARIADB_INSERT_MANY,
                    [
                        (job_type.name, job_type.queue, priority_number, text, key, run_at or now,
                         job_type.attempts, now, *sql.MARIADB_INSERT_MANY_CONSTANTS)
                        for text, key in zip(chunk, chunk_keys, strict=True)
                    ],
                )  # fmt: skip
                added += cursor.rowcount
        else:
            rows = [
                Job(
                    type=job_type.name,
                    queue=job_type.queue,
                    priority=priority_number,
                    payload=json.loads(text),
                    dedupe_key=key,
                    max_attempts=job_type.attempts,
                    run_at=run_at or timezone.now(),
                )
                for text, key in zip(chunk, chunk_keys, strict=True)
            ]
            before = Job.objects.count()
            Job.objects.bulk_create(rows, ignore_conflicts=True)
            added += Job.objects.count() - before
    return added


# --- claim and finish ---------------------------------------------------------------------


def claim(worker: str, queues: Sequence[str], limit: int) -> list[ClaimedJob]:
    """Take up to ``limit`` due jobs of ``queues`` for ``worker``, in claim order."""
    if limit <= 0 or not queues:
        return []
    if _on_postgres():
        if len(queues) == 1:
            rows = _run_prepared(sql.CLAIM_ONE_QUEUE, {"worker": worker, "queue": queues[0], "limit": limit})
        else:
            rows = _run_prepared(sql.CLAIM_QUEUES, {"worker": worker, "queues": list(queues), "limit": limit})
        return [ClaimedJob(*row) for row in rows]
    if _on_mariadb():
        return _claim_mariadb(worker, queues, limit)
    # Portable path (SQLite): the IMMEDIATE transaction serialises claimers, so the
    # select-then-update pair cannot hand one job to two workers.
    with transaction.atomic():
        ids = list(
            Job.objects.select_for_update(skip_locked=True)
            .filter(status=Status.QUEUED, queue__in=queues, run_at__lte=Now())
            .order_by("priority", "run_at", "id")
            .values_list("id", flat=True)[:limit]
        )
        if not ids:
            return []
        Job.objects.filter(id__in=ids).update(
            status=Status.RUNNING,
            attempts=F("attempts") + 1,
            locked_by=worker,
            started_at=Now(),
            heartbeat_at=Now(),
            finished_at=None,
            progress=None,
            progress_message="",
        )
        claimed = Job.objects.filter(id__in=ids).order_by("priority", "run_at", "id")
        return [
            ClaimedJob(job.id, job.type, json.dumps(job.payload), job.attempts, job.max_attempts, job.queue)
            for job in claimed
        ]


def claim_job(worker: str, job_id: int) -> ClaimedJob | None:
    """Take one queued job by id for ``worker``, whatever its ``run_at`` (``jobs.testing``
    runs a test's job inline this way); None when it is not queued. The row lock keeps a
    worker's claim from taking it at the same moment."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id, status=Status.QUEUED).first()
        if job is None:
            return None
        Job.objects.filter(pk=job_id).update(
            status=Status.RUNNING,
            attempts=F("attempts") + 1,
            locked_by=worker,
            started_at=Now(),
            heartbeat_at=Now(),
            finished_at=None,
            progress=None,
            progress_message="",
        )
    return ClaimedJob(
        job.pk, job.type, json.dumps(job.payload), job.attempts + 1, job.max_attempts, job.queue
    )


def _claim_mariadb(worker: str, queues: Sequence[str], limit: int) -> list[ClaimedJob]:
    """The claim on MariaDB: three statements in one short transaction (``jobs.sql``)."""
    with transaction.atomic(), connection.cursor() as cursor:
        if len(queues) == 1:
            cursor.execute(sql.MARIADB_CLAIM_ONE_QUEUE, [queues[0], limit])
        else:
            cursor.execute(sql.MARIADB_CLAIM_QUEUES.format(queues=_placeholders(queues)), [*queues, limit])
        ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            return []
        cursor.execute(sql.MARIADB_MARK_CLAIMED.format(ids=_placeholders(ids)), [worker, *ids])
        cursor.execute(sql.MARIADB_CLAIMED_ROWS.format(ids=_placeholders(ids)), ids)
        return [ClaimedJob(*row) for row in cursor.fetchall()]


def task_rows(job_ids: Sequence[int]) -> dict[int, tuple[Job, bool]]:
    """django.tasks tasks' rows (the fields their results need), each with whether it has
    failed tries, by id; ids without a row are left out. A worker reads them before every
    try of a task, so on PostgreSQL it is one prepared statement for a whole batch."""
    if not job_ids:
        return {}
    if not _on_postgres():
        tried = set(JobAttempt.objects.filter(job_id__in=job_ids).values_list("job_id", flat=True))
        return {job.pk: (job, job.pk in tried) for job in Job.objects.filter(pk__in=job_ids)}
    found = {}
    for (id_, type_, queue, priority, status, payload, run_at, created_at, started_at, finished_at,
         locked_by, result, tried) in _run_prepared(sql.TASK_ROWS, {"ids": list(job_ids)}):  # fmt: skip
        job = Job(
            id=id_,
            type=type_,
            queue=queue,
            priority=priority,
            status=status,
            payload=json.loads(payload),
            run_at=run_at,
            created_at=created_at,
            started_at=started_at,
            finished_at=finished_at,
            locked_by=locked_by,
            result=None if result is None else json.loads(result),
        )
        job._state.adding = False
        job._state.db = connection.alias
        found[id_] = (job, tried)
    return found


def complete(worker: str, done: Sequence[tuple[int, int]], results: Sequence[str] | None = None) -> list[int]:
    """Mark ``(job id, attempt)`` pairs succeeded; returns the ids that applied.

    ``results``, one per pair, is what each job returned as JSON text (django.tasks tasks
    do; see ``jobs.backends``), stored with it. Ids missing from the result were no longer
    running under this worker and attempt: their late result is dropped and logged.
    """
    if not done:
        return []
    ids = [job_id for job_id, _ in done]
    if _on_postgres():
        params: dict[str, Any] = {"ids": ids, "attempts": [attempt for _, attempt in done], "worker": worker}
        if results is None:
            rows = _run_prepared(sql.COMPLETE, params)
        else:
            rows = _run_prepared(sql.COMPLETE_WITH_RESULTS, {**params, "results": list(results)})
        applied = [row[0] for row in rows]
    elif _on_mariadb() and results is None:
        applied = _complete_mariadb(worker, done)
    else:
        applied = []
        with transaction.atomic():
            for index, (job_id, attempt) in enumerate(done):
                stored = {} if results is None else {"result": json.loads(results[index])}
                if _fenced(worker, job_id, attempt).update(
                    status=Status.SUCCEEDED, finished_at=Now(), progress=100, error="", **stored
                ):
                    applied.append(job_id)
    if len(applied) != len(done):
        dropped = sorted(set(ids) - set(applied))
        logger.warning("Dropped late results of jobs %s: no longer running under %s.", dropped, worker)
    return applied


def _complete_mariadb(worker: str, done: Sequence[tuple[int, int]]) -> list[int]:
    """The acknowledgement on MariaDB: two statements in one short transaction, whatever
    the batch's size (lock the rows still ours, mark those whose attempt matches)."""
    ids = [job_id for job_id, _ in done]
    attempt_of = dict(done)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql.MARIADB_LOCK_RUNNING.format(ids=_placeholders(ids)), [*ids, worker])
        applied = [job_id for job_id, attempts in cursor.fetchall() if attempt_of[job_id] == attempts]
        if applied:
            cursor.execute(sql.MARIADB_COMPLETE.format(ids=_placeholders(applied)), applied)
    return applied


def complete_in_transaction(worker: str, job_id: int, attempt: int) -> None:
    """Mark one job succeeded inside the caller's open transaction: the last statement of an
    atomic job's handler transaction (``@job(atomic=True)``), so the handler's writes and
    the job's completion commit together or not at all.

    Fenced like ``complete``: it applies only while the job is still running under this
    worker and attempt. When it no longer is (the reaper took it back, and another try may
    have run it already), it raises ``FencedOff`` and the caller's transaction must roll
    back, the handler's writes with it.
    """
    if not connection.in_atomic_block:
        raise TransactionManagementError("complete_in_transaction() runs inside the handler's transaction.")
    # One UPDATE whose WHERE is the fence; its row count (1 or 0) is the answer, so the same
    # ORM statement serves PostgreSQL, SQLite and MariaDB (which has no UPDATE … RETURNING).
    # It locks the one job row, through the primary key, until the handler's transaction
    # commits a moment later; the worker's heartbeat of that row waits that long.
    applied = _fenced(worker, job_id, attempt).update(
        status=Status.SUCCEEDED, finished_at=Now(), progress=100, error=""
    )
    if not applied:
        raise FencedOff(f"Job #{job_id} try {attempt} is no longer running under {worker}.")


def _fenced(worker: str, job_id: int, attempt: int):
    return Job.objects.filter(id=job_id, attempts=attempt, locked_by=worker, status=Status.RUNNING)


def fail(worker: str, job_id: int, attempt: int, failure: Failure) -> str | None:
    """Record a failed try; the job is queued again after its backoff, or fails for good.

    Returns the job's new status, or None when the result was fenced off.
    """
    with transaction.atomic():
        # Locks the one job row until the attempt is recorded.
        job = _fenced(worker, job_id, attempt).select_for_update().first()
        if job is None:
            logger.warning("Dropped late failure of job %s try %s: no longer ours.", job_id, attempt)
            return None
        now = timezone.now()
        job.error = failure.text
        if retries.retried(job.attempts, job.max_attempts, retryable=failure.retryable):
            job.status = Status.QUEUED
            job.run_at = now + retries.backoff(job.type, job.attempts)
            job.heartbeat_at = None
        else:
            job.status = Status.FAILED
            job.finished_at = now
        job.save(update_fields=["status", "error", "run_at", "heartbeat_at", "finished_at"])
        _record_attempt(job, worker, failure)
    return job.status


def _record_attempt(job: Job, worker: str, failure: Failure, outcome: str | None = None) -> None:
    """The audit log's row of this try (numbered across an operator's retries)."""
    JobAttempt.objects.create(
        job=job,
        type=job.type,
        attempt=job.earlier_attempts + job.attempts,
        worker=worker,
        started_at=job.started_at,
        error_class=failure.error_class[:200],
        error=failure.message,
        traceback=failure.traceback,
        outcome=outcome or job.status,
    )


POSTPONED = "postponed"  # the outcome of a try that asked to run later (audit log)


def reschedule(worker: str, job_id: int, attempt: int, at: datetime, reason: str) -> bool:
    """Put a job that raised ``RetryLater`` back in the queue for ``at``: not a failure,
    so its attempt is given back and its error kept as it was; ``reason`` becomes its
    message. Recorded in the audit log with the outcome "postponed". False when the
    result was fenced off.

    ``at`` is capped at ``JOBS_MAX_RETRY_LATER_SECONDS`` from now, whoever asked: a host's
    "retry in 3e9 seconds" must not park a job (and hold its dedupe key) for a century."""
    at = min(at, timezone.now() + timedelta(seconds=jobs_settings.MAX_RETRY_LATER_SECONDS))
    with transaction.atomic():
        # Locks the one job row until it is queued again and the try is recorded.
        job = _fenced(worker, job_id, attempt).select_for_update().first()
        if job is None:
            logger.warning("Dropped late reschedule of job %s try %s: no longer ours.", job_id, attempt)
            return False
        _record_attempt(job, worker, Failure("jobs.RetryLater", reason), outcome=POSTPONED)
        job.status = Status.QUEUED
        job.attempts -= 1
        job.run_at = at
        job.locked_by = None
        job.started_at = job.heartbeat_at = None
        job.progress = None
        job.progress_message = ""
        job.message = reason[:200]
        job.save(
            update_fields=[
                "status",
                "attempts",
                "run_at",
                "locked_by",
                "started_at",
                "heartbeat_at",
                "progress",
                "progress_message",
                "message",
            ]
        )
        if at <= timezone.now():
            notify([job.queue])
    return True


def release(worker: str, items: Sequence[tuple[int, int]], message: str = "") -> int:
    """Put jobs of a stopping worker back at once, without using up an attempt."""
    if not items:
        return 0
    released = 0
    queues: set[str] = set()
    with transaction.atomic():
        for job_id, attempt in items:
            rows = _fenced(worker, job_id, attempt)
            queue = rows.values_list("queue", flat=True).first()
            if queue and rows.update(
                status=Status.QUEUED,
                attempts=F("attempts") - 1,
                locked_by=None,
                started_at=None,
                heartbeat_at=None,
                run_at=Now(),
                progress=None,
                progress_message="",
                message=message,
            ):
                released += 1
                queues.add(queue)
        notify(queues)
    return released


def heartbeat(worker: str, job_ids: Iterable[int] | None = None) -> int:
    """Keep this worker's registry row and running jobs alive; returns jobs touched.

    The worker names the jobs it holds: a job it no longer knows (say its acknowledgement
    was lost in a database crash) then goes silent and is reaped, instead of being kept
    "running" forever.
    """
    running = Job.objects.filter(status=Status.RUNNING, locked_by=worker)
    if job_ids is not None:
        running = running.filter(id__in=list(job_ids))
    touched = running.update(heartbeat_at=Now())
    Worker.objects.filter(name=worker).update(last_seen=Now())
    return touched


def set_progress(worker: str, job_id: int, attempt: int, percent: int, message: str) -> bool:
    return bool(
        _fenced(worker, job_id, attempt).update(
            progress=percent, progress_message=message[:500], heartbeat_at=Now()
        )
    )


# --- operator actions ---------------------------------------------------------------------


def cancel(job: Job | int) -> Job:
    """Cancel a queued job. A running one has to be waited out."""
    job_id = job.pk if isinstance(job, Job) else job
    with transaction.atomic():
        row = Job.objects.select_for_update().get(pk=job_id)
        if row.status != Status.QUEUED:
            raise InvalidTransition(f"Only a queued job can be cancelled; job #{row.pk} is {row.status}.")
        _mark_cancelled(row)
    return row


def cancel_if_queued(type_name: str, dedupe_key: str) -> Job | None:
    """Cancel the queued job of this type and key, if there is one; returns it.

    A running job is left alone (it has to be waited out) and None is returned, as when
    there is no job. A worker claiming the job at the same moment wins or loses on the row
    lock: the claim skips a row locked here, and a row it claimed first is no longer queued
    when this lock is granted.
    """
    with transaction.atomic():
        # Locks the one queued row of the key (the jobs_dedupe_active index finds it).
        row = (
            Job.objects.select_for_update()
            .filter(type=type_name, dedupe_key=dedupe_key, status=Status.QUEUED)
            .first()
        )
        if row is None:
            return None
        _mark_cancelled(row)
    return row


def _mark_cancelled(row: Job) -> None:
    row.status = Status.CANCELLED
    row.finished_at = timezone.now()
    row.message = CANCELLED
    row.save(update_fields=["status", "finished_at", "message"])


def retry(job: Job | int) -> Job:
    """Give a failed job a full new budget: attempts reset to zero, error cleared. The
    tries it used are added to ``earlier_attempts``, so the audit log keeps counting."""
    job_id = job.pk if isinstance(job, Job) else job
    try:
        with transaction.atomic():
            row = Job.objects.select_for_update().get(pk=job_id)
            if row.status != Status.FAILED:
                raise InvalidTransition(f"Only a failed job can be retried; job #{row.pk} is {row.status}.")
            row.status = Status.QUEUED
            row.earlier_attempts += row.attempts
            row.attempts = 0
            row.error = ""
            row.message = REQUEUED_BY_ADMIN
            row.run_at = timezone.now()
            row.started_at = row.finished_at = row.heartbeat_at = row.dismissed_at = None
            row.locked_by = None
            row.progress = None
            row.progress_message = ""
            with transaction.atomic():
                row.save()
            notify([row.queue])
    except IntegrityError:
        raise InvalidTransition(
            f"Job #{job_id} cannot be retried: another {row.type} job with dedupe key "
            f"{row.dedupe_key!r} is already queued or running."
        ) from None
    return row


def dismiss(job: Job | int) -> Job:
    """Take a failed job off its queue's failed list: an operator has seen it and will not
    retry it. It stays failed, with its error and tries, and is pruned once it has been
    dismissed for ``JOBS_KEEP_FINISHED_DAYS``."""
    job_id = job.pk if isinstance(job, Job) else job
    with transaction.atomic():
        row = Job.objects.select_for_update().get(pk=job_id)  # the one row, until dismissed
        if row.status != Status.FAILED:
            raise InvalidTransition(f"Only a failed job can be dismissed; job #{row.pk} is {row.status}.")
        if row.dismissed_at is not None:
            raise InvalidTransition(f"Job #{row.pk} is already dismissed.")
        row.dismissed_at = timezone.now()
        row.message = DISMISSED
        row.save(update_fields=["dismissed_at", "message"])
    return row


# --- recovery and housekeeping ------------------------------------------------------------


@dataclass(frozen=True)
class ReapResult:
    requeued: int = 0
    failed: int = 0


def reap(now: datetime | None = None) -> ReapResult:
    """Take back running jobs whose worker went silent: each counts as a failed try and
    returns after its type's backoff (or fails, with no attempt left).

    A job is silent when its heartbeat is older than ``JOBS_REAP_AFTER``, or when the
    worker holding it stopped updating its registry row for ``JOBS_WORKER_LEASE`` (so the
    jobs a dead worker had prefetched come back as soon as it is known dead).
    """
    now = now or timezone.now()
    dead_workers = Worker.objects.filter(
        last_seen__lt=now - timedelta(seconds=jobs_settings.WORKER_LEASE)
    ).values("name")
    silent = Q(heartbeat_at__lt=now - timedelta(seconds=jobs_settings.REAP_AFTER)) | Q(
        locked_by__in=dead_workers
    )
    return _take_back(Job.objects.filter(silent, status=Status.RUNNING))


def recover_worker(name: str) -> ReapResult:
    """On start: jobs still marked running under this worker's name cannot be running."""
    return _take_back(Job.objects.filter(status=Status.RUNNING, locked_by=name))


def _take_back(running) -> ReapResult:
    requeued = failed = 0
    queues: set[str] = set()
    with transaction.atomic():
        # SKIP LOCKED: two reapers at once split the rows instead of waiting on each other.
        jobs = list(running.select_for_update(skip_locked=True).order_by("id")[:1000])
        now = timezone.now()
        for job in jobs:
            worker = job.locked_by or ""
            lost = Failure("WorkerLost", f"Worker {worker} stopped answering.", retryable=True)
            if not retries.retried(job.attempts, job.max_attempts):
                job.status, job.finished_at = Status.FAILED, now
                job.error = job.message = BUDGET_EXHAUSTED
                failed += 1
            else:
                # After the type's backoff, as after any failed try: a job that kills its
                # worker must not go straight on to kill the next one.
                job.status, job.run_at = Status.QUEUED, now + retries.backoff(job.type, job.attempts)
                job.message = REQUEUED_AFTER_RESTART
                job.locked_by = None
                requeued += 1
                queues.add(job.queue)
            job.heartbeat_at = None
            job.save(
                update_fields=[
                    "status",
                    "finished_at",
                    "error",
                    "message",
                    "run_at",
                    "locked_by",
                    "heartbeat_at",
                ]
            )
            _record_attempt(job, worker, lost)
        notify(queues)
    if requeued or failed:
        logger.warning(
            "Reaper took back %d jobs (%d requeued, %d failed).", requeued + failed, requeued, failed
        )
    return ReapResult(requeued, failed)


def prune(older_than: timedelta | None = None, batch_size: int | None = None) -> int:
    """Delete finished jobs older than the retention, in batches; returns how many.

    Succeeded and cancelled jobs count from when they finished. A failed job stays, however
    old, until it is retried or dismissed; a dismissed one counts from its dismissal."""
    if older_than is None:
        older_than = timedelta(days=jobs_settings.KEEP_FINISHED_DAYS)
    batch_size = batch_size or jobs_settings.PRUNE_BATCH
    cutoff = timezone.now() - older_than
    total = 0
    while True:
        # Each batch is its own short transaction so pruning never holds many locks.
        ids = list(
            Job.objects.filter(
                Q(status__in=(Status.SUCCEEDED, Status.CANCELLED), finished_at__lt=cutoff)
                | Q(status=Status.FAILED, dismissed_at__lt=cutoff)
            )
            .order_by("id")  # oldest first, along the primary key
            .values_list("id", flat=True)[:batch_size]
        )
        if not ids:
            break
        deleted, _ = Job.objects.filter(id__in=ids).delete()
        total += deleted
    Worker.objects.filter(stopped_at__lt=cutoff).delete()
    return total


# --- worker registry ----------------------------------------------------------------------


def register_worker(name: str, host: str, pid: int, queues: list[str]) -> ReapResult:
    """Add or renew this worker's row, then requeue what it left running last time.

    Refuses a name that a live worker (seen within the lease) is using.
    """
    lease = timedelta(seconds=jobs_settings.WORKER_LEASE)
    with transaction.atomic():
        existing = Worker.objects.select_for_update().filter(name=name).first()
        if (
            existing
            and existing.stopped_at is None
            and existing.last_seen > timezone.now() - lease
            and (existing.host, existing.pid) != (host, pid)
        ):
            raise InvalidTransition(
                f"A live worker already runs under the name {name!r} "
                f"(pid {existing.pid} on {existing.host}); choose another --name."
            )
        Worker.objects.update_or_create(
            name=name,
            defaults={
                "host": host,
                "pid": pid,
                "queues": queues,
                "started_at": timezone.now(),
                "last_seen": timezone.now(),
                "stopped_at": None,
            },
        )
    return recover_worker(name)


def unregister_worker(name: str) -> None:
    Worker.objects.filter(name=name).update(stopped_at=Now(), last_seen=Now())
