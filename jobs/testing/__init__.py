"""Helpers for a project's tests: assert what was enqueued, run a job inline through the
worker's handler path, drain a queue in this process; a ``TestCase`` mixin and pytest
fixtures (``jobs.testing.fixtures``). See ``docs/testing.md``.

A test needs no worker process to know a job was enqueued, nor to see what its handler
does with it: ``run_job`` claims the row, runs its handler as a worker's child does (the
same code: errors, ``RetryLater``, atomic jobs) and records the outcome as the supervisor
would; ``run_claimed`` does so for a try the test claimed itself (one ending late). What
it cannot do inline is what needs a process: a type's timeout is not enforced, and a crash
would end the test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jobs.declare import JobFunction
    from jobs.drivers.protocol import ClaimedJob
    from jobs.models import Job

#: The worker name the rows of jobs run here carry (``locked_by``, each try's ``worker``).
WORKER = "jobs.testing"

#: How many jobs ``drain`` runs at most by default: a job that enqueues another of its kind
#: each time would otherwise never let the drain end.
DRAIN_LIMIT = 1000


def type_name(job_type: str | JobFunction | Any) -> str:
    """The stored type of a declaration (``@job``), a ``django.tasks`` task or a name."""
    if isinstance(job_type, str):
        return job_type
    if hasattr(job_type, "job_type"):  # a @job declaration
        return str(job_type.name)
    if hasattr(job_type, "module_path"):  # a django.tasks Task: its module path names it
        return str(job_type.module_path)
    raise TypeError(f"Not a job type: {job_type!r} (a name, a @job declaration or a @task).")


def enqueued(
    job_type: str | JobFunction | Any | None = None,
    *,
    payload: Mapping[str, Any] | None = None,
    queue: str | None = None,
) -> list[Job]:
    """The queued jobs (due or not) of ``job_type`` whose payload holds every item of
    ``payload``, in ``queue`` if given, oldest first."""
    from jobs.models import Job, Status

    rows = Job.objects.filter(status=Status.QUEUED).order_by("id")
    if job_type is not None:
        rows = rows.filter(type=type_name(job_type))
    if queue is not None:
        rows = rows.filter(queue=queue)
    return [job for job in rows if _holds(job.payload, payload or {})]


def assert_enqueued(
    job_type: str | JobFunction | Any,
    *,
    payload: Mapping[str, Any] | None = None,
    queue: str | None = None,
    count: int | None = None,
) -> list[Job]:
    """Fail unless a queued job of ``job_type`` holds ``payload`` (its items, not all of
    the payload), in ``queue`` if given; exactly ``count`` of them if given. Returns them."""
    found = enqueued(job_type, payload=payload, queue=queue)
    if (count is None and found) or (count is not None and len(found) == count):
        return found
    wanted = "at least one" if count is None else f"exactly {count}"
    raise AssertionError(
        f"Expected {wanted} queued {type_name(job_type)} job{_where(payload, queue)}, found "
        f"{len(found)}.\n{_listing(type_name(job_type))}"
    )


def assert_not_enqueued(
    job_type: str | JobFunction | Any,
    *,
    payload: Mapping[str, Any] | None = None,
    queue: str | None = None,
) -> None:
    """Fail if a queued job of ``job_type`` holds ``payload`` (in ``queue`` if given)."""
    found = enqueued(job_type, payload=payload, queue=queue)
    if found:
        raise AssertionError(
            f"Expected no queued {type_name(job_type)} job{_where(payload, queue)}, found "
            f"{len(found)}.\n{_listing(type_name(job_type))}"
        )


def run_job(job: Job | int) -> Job:
    """Run one queued job now (due or not) as a worker would, and return its row after.

    The handler runs as in a worker's child process, and its outcome is recorded as the
    supervisor records it: success (with a task's result), a failed try (retried by the
    type's backoff, or failed for good; the error and traceback on the row and its try), a
    ``RetryLater`` (queued for its time, no attempt used), an atomic job's writes committed
    with its completion or rolled back with its failure.
    """
    from jobs import store
    from jobs.errors import InvalidTransition
    from jobs.models import Job

    job_id = job if isinstance(job, int) else job.pk
    claimed = store.claim_job(WORKER, job_id)
    if claimed is None:
        status = Job.objects.filter(pk=job_id).values_list("status", flat=True).first()
        raise InvalidTransition(f"Job #{job_id} is not queued ({status or 'no such job'}): it cannot run.")
    _run_claimed(claimed)
    return Job.objects.get(pk=job_id)


def run_claimed(claimed: ClaimedJob, worker: str) -> Job:
    """Run a try that the test claimed itself (``jobs.store.claim(worker, ...)``) as
    ``worker``, and return the job's row after. Its outcome is recorded fenced by that
    worker and attempt, as a worker's would be: a try the reaper took back and another
    try already finished ends as a late try does (its result dropped, an atomic job's
    writes rolled back)."""
    from jobs.models import Job

    _run_claimed(claimed, worker)
    return Job.objects.get(pk=claimed.id)


def perform(job_type: str | JobFunction | Any, payload: Mapping[str, Any] | None = None) -> Job:
    """Enqueue a job of ``job_type`` and run it at once (``run_job``); returns its row.
    A ``django.tasks`` task is enqueued through its own ``enqueue``, then run the same way."""
    import jobs

    if hasattr(job_type, "module_path") and hasattr(job_type, "enqueue"):
        result = job_type.enqueue(**(payload or {}))
        return run_job(int(result.id))
    return run_job(jobs.enqueue(type_name(job_type), dict(payload or {})))


@dataclass
class Drained:
    """What ``drain`` ran: each job once per try, in the order they ran."""

    succeeded: list[Job] = field(default_factory=list)
    failed: list[Job] = field(default_factory=list)  # failed for good
    retried: list[Job] = field(default_factory=list)  # a failed try, queued again by backoff
    postponed: list[Job] = field(default_factory=list)  # raised RetryLater

    @property
    def ran(self) -> int:
        return len(self.succeeded) + len(self.failed) + len(self.retried) + len(self.postponed)


def drain(queue: str | Iterable[str] | None = None, *, limit: int = DRAIN_LIMIT) -> Drained:
    """Run the due jobs of ``queue`` (one name, several, or every queue holding queued
    jobs) in this process, in claim order, until none is due: jobs their handlers enqueue
    run too if due; a retry waiting out its backoff does not. Raises AssertionError when
    more than ``limit`` jobs would run (a job that keeps enqueuing itself)."""
    from jobs import store
    from jobs.models import Job, Status

    drained = Drained()
    while True:
        queues = _queues(queue)
        store.promote_due()  # as a worker does: jobs due later whose time has come
        claimed = store.claim(WORKER, queues, 1) if queues else []
        if not claimed:
            return drained
        if drained.ran >= limit:
            store.release(WORKER, [(claimed[0].id, claimed[0].attempt)], "Left by jobs.testing.drain.")
            raise AssertionError(
                f"drain ran {limit} jobs and more are due: does a job keep enqueuing itself?"
            )
        rescheduled = _run_claimed(claimed[0])
        row = Job.objects.get(pk=claimed[0].id)
        if rescheduled:
            drained.postponed.append(row)
        elif row.status == Status.SUCCEEDED:
            drained.succeeded.append(row)
        elif row.status == Status.FAILED:
            drained.failed.append(row)
        else:
            drained.retried.append(row)


def _run_claimed(claimed: ClaimedJob, worker: str = WORKER) -> bool:
    """Run a claimed job through the child's code and record its outcome as the
    supervisor does; True when it asked to run later."""
    from jobs import store
    from jobs.worker import child
    from jobs.worker.outcome import Kind

    # The latest report, written when the handler returns, as the supervisor writes a
    # job's last one when it ends: on its own, never inside an atomic job's transaction.
    reported: list[tuple[int, str]] = []

    def report(percent: int, message: str) -> None:
        reported[:] = [(percent, message)]

    outcome = child.run(
        claimed.id,
        claimed.type,
        claimed.payload,
        claimed.attempt,
        claimed.max_attempts,
        worker,
        report,
        claimed.step,
    )
    for percent, message in reported:  # fenced: a try already settled takes no report
        store.set_progress(worker, claimed.id, claimed.attempt, percent, message)
    done = [(claimed.id, claimed.attempt)]
    if outcome.kind is Kind.FAILED:
        assert outcome.failure is not None
        store.fail(worker, claimed.id, claimed.attempt, outcome.failure)
    elif outcome.kind is Kind.POSTPONED:
        assert outcome.at is not None
        store.reschedule(worker, claimed.id, claimed.attempt, outcome.at, outcome.reason)
        return True
    elif outcome.kind is Kind.SUCCEEDED:
        store.complete(worker, done, None if outcome.result is None else [outcome.result])
    elif outcome.committed:  # an atomic job or a step committed its completion (with its writes)
        store.count_settled([claimed.id])
    # else an atomic job or a workflow step, settled: it committed its completion (with its
    # writes, and the release of the steps that follow), or rolled back
    return False


def _queues(queue: str | Iterable[str] | None) -> list[str]:
    if isinstance(queue, str):
        return [queue]
    if queue is not None:
        return list(queue)
    from jobs.models import Job, Status

    return sorted(set(Job.objects.filter(status=Status.QUEUED).values_list("queue", flat=True)))


def _holds(payload: Any, wanted: Mapping[str, Any]) -> bool:
    return isinstance(payload, dict) and all(
        key in payload and payload[key] == value for key, value in wanted.items()
    )


def _where(payload: Mapping[str, Any] | None, queue: str | None) -> str:
    parts = ([f" with payload items {dict(payload)!r}"] if payload else []) + (
        [f" in queue {queue!r}"] if queue else []
    )
    return "".join(parts)


def _listing(name: str, most: int = 10) -> str:
    """The queued jobs of this type, for the failure message."""
    from jobs.models import Job, Status

    rows = list(Job.objects.filter(status=Status.QUEUED, type=name).order_by("id")[: most + 1])
    if not rows:
        return f"No {name} job is queued."
    lines = [f"  #{job.pk} queue={job.queue!r} payload={job.payload!r}" for job in rows[:most]]
    more = ["  …"] if len(rows) > most else []
    return "\n".join([f"Queued {name} jobs:", *lines, *more])


class JobsTestMixin:
    """For ``django.test.TestCase``: the helpers above as assertions and methods."""

    def assertJobEnqueued(  # noqa: N802 - named as TestCase's assertions are
        self,
        job_type: str | JobFunction | Any,
        *,
        payload: Mapping[str, Any] | None = None,
        queue: str | None = None,
        count: int | None = None,
    ) -> list[Job]:
        return assert_enqueued(job_type, payload=payload, queue=queue, count=count)

    def assertJobNotEnqueued(  # noqa: N802
        self,
        job_type: str | JobFunction | Any,
        *,
        payload: Mapping[str, Any] | None = None,
        queue: str | None = None,
    ) -> None:
        assert_not_enqueued(job_type, payload=payload, queue=queue)

    def run_job(self, job: Job | int) -> Job:
        return run_job(job)

    def perform_job(self, job_type: str | JobFunction | Any, payload: Mapping[str, Any] | None = None) -> Job:
        return perform(job_type, payload)

    def drain_jobs(self, queue: str | Iterable[str] | None = None, *, limit: int = DRAIN_LIMIT) -> Drained:
        return drain(queue, limit=limit)


__all__ = [
    "DRAIN_LIMIT",
    "WORKER",
    "Drained",
    "JobsTestMixin",
    "assert_enqueued",
    "assert_not_enqueued",
    "drain",
    "enqueued",
    "perform",
    "run_claimed",
    "run_job",
    "type_name",
]
