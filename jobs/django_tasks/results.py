"""A task's row as ``django.tasks`` sees it: a ``TaskResult``.

The job row holds the task's status, timestamps, arguments (the payload) and return value;
its failed tries (``JobAttempt``, the engine's audit trail) are the result's errors and,
with the try running or finished now, its workers: one entry per try, so
``TaskResult.attempts`` counts every try, including tries made before an operator's Retry
(the page's ``n/max`` counts the current budget only).

Statuses: queued → READY (also while a retry waits), running → RUNNING, succeeded →
SUCCESSFUL, failed → FAILED, cancelled → FAILED (``django.tasks`` has no cancelled status;
its errors end with ``jobs.errors.TaskCancelled``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.tasks import Task, TaskResult, TaskResultStatus
from django.tasks.base import TaskError
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist

from jobs import registry
from jobs.django_tasks import rows, types
from jobs.drivers.orm import try_row
from jobs.drivers.protocol import TaskRow, TaskTryRow
from jobs.errors import UnknownJobType
from jobs.models import Job, JobAttempt, Status

if TYPE_CHECKING:  # a web process's get_result need not import the worker's messages
    from jobs.worker.messages import JobFields

STATUSES = {
    Status.QUEUED: TaskResultStatus.READY,
    Status.RUNNING: TaskResultStatus.RUNNING,
    Status.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    Status.FAILED: TaskResultStatus.FAILED,
    Status.CANCELLED: TaskResultStatus.FAILED,
}

# The failures the engine records without an exception of its own (the worker's process
# died, the job ran too long, the reaper took it back), as importable classes.
ENGINE_FAILURES = {
    "WorkerCrashed": "jobs.errors.WorkerCrashed",
    "JobTimeout": "jobs.errors.JobTimeout",
    "WorkerLost": "jobs.errors.WorkerLost",
}
CANCELLED = TaskError(
    exception_class_path="jobs.errors.TaskCancelled", traceback="jobs.errors.TaskCancelled: Cancelled."
)


def enqueued(task: Task, job: Job) -> TaskResult:
    """The result of a task just added as ``job``: ready, nothing run yet."""
    return TaskResult(
        task=task,
        id=str(job.pk),
        status=TaskResultStatus.READY,
        enqueued_at=job.created_at,
        started_at=None,
        finished_at=None,
        last_attempted_at=None,
        args=job.payload["args"],
        kwargs=job.payload["kwargs"],
        backend=task.backend,
        errors=[],
        worker_ids=[],
    )


# Rows read ahead for the tries of the tasks of the batch a worker's child is about to run:
# by id.
_prefetched: dict[int, TaskTryRow] = {}


def prefetch(jobs: list[JobFields]) -> None:
    """What the tries of these tasks need of their rows, for their ``of_try`` to take: as
    their claim brought it (``ClaimedJob.try_fields``), else read in one statement. A child
    does this before each batch, since every try needs its row. Nobody else changes a
    claimed task's row while the batch runs, so what is read here stays true."""
    _prefetched.clear()
    unread = []
    for job_id, _, _, _, _, queue, _, _, fields in jobs:
        if fields is None:
            unread.append(job_id)
        else:
            _prefetched[job_id] = try_row(job_id, queue, fields)
    if unread:
        _prefetched.update(rows.read_tries(unread))


def load(job_id: int, task: Task | None = None) -> TaskResult:
    """The task result of job ``job_id`` as stored now (``task``: its task, if already
    known). One statement, and a second one for the failed tries only when there are any."""
    row = rows.read([job_id]).get(job_id)
    if row is None:
        raise TaskResultDoesNotExist(f"No task result {job_id}: never enqueued, or pruned.")
    tries = list(JobAttempt.objects.filter(job_id=job_id).order_by("id")) if row.tried else []
    return build(row, tries, task if task is not None else _task_of(row))


def of_try(job_id: int, task: Task, worker: str, args: list[Any], kwargs: dict[str, Any]) -> TaskResult:
    """The result of ``task``'s try that ``worker`` is starting, as ``load`` would read it:
    a first try's from its claim (``args``, ``kwargs``, ``worker``) and the row read ahead
    for its batch; a task with failed tries (or whose row was not read ahead) through
    ``load``."""
    row = _prefetched.pop(job_id, None)
    if row is None or row.tried:
        return load(job_id, task)
    return TaskResult(
        task=_as_enqueued(task, row),
        id=str(job_id),
        status=TaskResultStatus.RUNNING,
        enqueued_at=row.created_at,
        started_at=row.started_at,
        finished_at=None,
        last_attempted_at=row.started_at,
        args=args,
        kwargs=kwargs,
        backend=task.backend,
        errors=[],
        worker_ids=[worker],
    )


def build(row: TaskRow, tries: list[JobAttempt], task: Task) -> TaskResult:
    starts = [attempt.started_at for attempt in tries if attempt.started_at]
    if row.started_at:
        starts.append(row.started_at)
    workers = [attempt.worker for attempt in tries]
    if row.status in (Status.RUNNING, Status.SUCCEEDED) and row.locked_by:
        workers.append(row.locked_by)  # the try running now, or the one that succeeded
    errors = [_error(attempt) for attempt in tries]
    payload = json.loads(row.payload)
    if row.status == Status.CANCELLED:
        errors.append(CANCELLED)
    result: TaskResult[Any, Any] = TaskResult(
        task=_as_enqueued(task, row),
        id=str(row.id),
        status=STATUSES[Status(row.status)],
        enqueued_at=row.created_at,
        started_at=min(starts, default=None),
        finished_at=row.finished_at,
        last_attempted_at=max(starts, default=None),
        args=payload.get("args", []),
        kwargs=payload.get("kwargs", {}),
        backend=task.backend,
        errors=errors,
        worker_ids=workers,
    )
    returned = None if row.result is None else json.loads(row.result)
    object.__setattr__(result, "_return_value", returned)  # how django.tasks' backends set it
    return result


def exception_class_path(error_class: str) -> str:
    """The importable path of a recorded error class (builtins are stored bare)."""
    if error_class in ENGINE_FAILURES:
        return ENGINE_FAILURES[error_class]
    return error_class if "." in error_class else f"builtins.{error_class}"


def _error(attempt: JobAttempt) -> TaskError:
    text = f"{attempt.error_class}: {attempt.error}" if attempt.error else attempt.error_class
    return TaskError(
        exception_class_path=exception_class_path(attempt.error_class),
        traceback=attempt.traceback or text,
    )


def _task_of(row: TaskRow) -> Task:
    if registry.declared(row.type):
        raise TaskResultDoesNotExist(f"#{row.id} is a {row.type} job, not a django.tasks task.")
    try:
        return types.import_task(row.type)
    except UnknownJobType as exc:
        raise TaskResultDoesNotExist(f"Task result {row.id}: {exc}") from exc


def _as_enqueued(task: Task, row: TaskRow | TaskTryRow) -> Task:
    """The task with the queue, priority and run_after its row was given."""
    changes: dict[str, Any] = {}
    if row.queue != task.queue_name:
        changes["queue_name"] = row.queue
    if -row.priority != task.priority:
        changes["priority"] = -row.priority
    if row.run_at > row.created_at:
        changes["run_after"] = row.run_at  # deferred, or waiting out a retry's backoff
    if not changes:
        return task
    try:
        return task.using(**changes)
    except InvalidTask:  # say the queue was since removed from QUEUES
        return task
