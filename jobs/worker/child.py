"""The child process: runs jobs one at a time for its supervisor, so a crash fails one job.

It waits for a batch (one job for slow types, a few for very short ones), runs the jobs in
order, reports each failure (and each django.tasks task's result) at once and the end of the
batch, and waits again. What the two processes tell each other is in
``jobs.worker.messages``; a handler's progress goes into the child's slot in shared memory,
for the supervisor to write (``jobs.worker.progress``). What a handler logs during its try
is captured (``jobs.try_log``): it comes with the try's outcome, and the running try's
lines so far go into a shared buffer beside the progress. With OpenTelemetry configured,
each try runs in a span whose parent is the enqueuing span (``jobs.tracing``).

An atomic job (``@job(atomic=True)``) runs inside one transaction on this process's
connection, and its completion is the transaction's last statement, fenced by worker and
attempt: the handler's writes and the job's success commit together, or neither does. A
failure rolls both back; so does a kill, since a transaction that was never committed dies
with its connection. The child tells the supervisor at once that the job is settled, so it
is not acknowledged again. Its progress, like every job's, is written by the supervisor on
its own session: written here it would sit in the uncommitted transaction, invisible until
the end, and hold the job row's lock against the supervisor's heartbeats.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import select
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

import django
from django.db import transaction

from jobs import registry, retries, tracing, try_log
from jobs.conf import jobs_settings
from jobs.context import JobContext
from jobs.errors import FencedOff, InvalidPayload, PermanentError, RetryLater, UnknownJobType
from jobs.worker import messages
from jobs.worker.messages import CURRENT, STARTED, FromChild, JobEnded, JobFields, SharedState, Stop
from jobs.worker.outcome import SUCCEEDED, Kind, Outcome
from jobs.worker.progress import ProgressSlot

if TYPE_CHECKING:
    from jobs.store import Failure

logger = logging.getLogger("jobs.worker")

#: Seconds after a batch's connection check within which the next batch skips its own.
RECHECK_AFTER = 1.0


def main(
    conn: Connection, state: SharedState, progress: ProgressSlot, worker: str, supervisor_pid: int
) -> None:
    """Entry point of a child process."""
    # The supervisor owns shutdown: a Ctrl-C or SIGTERM sent to the whole process group
    # must not break the job this child is running.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _exit_with(supervisor_pid)
    django.setup()

    global _capture
    _capture = try_log.install(
        jobs_settings.TRY_LOG_LEVEL, jobs_settings.TRY_LOG_LINES, jobs_settings.TRY_LOG_BYTES, progress.log
    )
    tracer = tracing.child_tracer()  # None unless OpenTelemetry is installed and configured
    _connect()

    try:
        _serve(conn, state, progress, worker, tracer)
    finally:
        tracing.flush()  # a child ends without atexit: its last spans go out now


def _serve(
    conn: Connection,
    state: SharedState,
    progress: ProgressSlot,
    worker: str,
    tracer: tracing.ChildTracer | None,
) -> None:
    from django.db import close_old_connections

    checked_at = -RECHECK_AFTER  # when the connections were last looked at
    while True:
        try:
            message = messages.receive_in_child(conn)
        except (EOFError, OSError):
            return  # the supervisor is gone
        if isinstance(message, Stop):
            return
        # As a web request starts: a connection past DB_CONN_MAX_AGE (say, one the child
        # opened as it started, long before this batch) is closed, not used stale. Not
        # again for a batch that follows the last one's check closely (the check after a
        # batch already asks for the next health check, CONN_HEALTH_CHECKS): cold, the
        # check costs a wake-up some 60 µs.
        if time.monotonic() - checked_at >= RECHECK_AFTER:
            close_old_connections()
        _read_ahead(message.jobs)
        traced = _traced(tracer, message.jobs)
        for index, (job_id, type_name, payload_text, attempt, max_attempts, _, step, _, _) in enumerate(
            message.jobs
        ):
            state[STARTED] = time.monotonic()
            state[CURRENT] = index
            reporter = functools.partial(progress.put, job_id, attempt)
            if traced is not None:
                with traced.span(index):
                    outcome = run(
                        job_id, type_name, payload_text, attempt, max_attempts, worker, reporter, step
                    )
                    traced.ended(index, outcome)
            else:
                outcome = run(job_id, type_name, payload_text, attempt, max_attempts, worker, reporter, step)
            if outcome is SUCCEEDED:
                continue  # the end of the batch acknowledges it
            if outcome.kind in (Kind.FAILED, Kind.POSTPONED):
                close_old_connections()  # a failed try may have left the connection broken
            if not _send(conn, JobEnded(index, outcome)):
                return
        close_old_connections()
        checked_at = time.monotonic()
        if not _send(conn, messages.BATCH_DONE):
            return


def _connect() -> None:
    """Open this child's database connection while it waits for its first batch: nearly
    every job uses it, and that batch's first try would otherwise wait for it (the
    connection and its session's set-up: 4–6 ms on a quiet machine, 15–20 ms on a busy
    one). Not where connections are not kept (``CONN_MAX_AGE`` 0: each batch would close
    it unused). A database out of reach now is left for the first try that needs it."""
    from django.db import connection

    if connection.settings_dict.get("CONN_MAX_AGE") == 0:
        return
    try:
        connection.ensure_connection()
    except Exception:  # noqa: BLE001 - the tries report the database's errors, not the child
        logger.debug("The child could not connect to the database yet.", exc_info=True)


def _traced(tracer: tracing.ChildTracer | None, jobs: Sequence[JobFields]) -> tracing.TracedBatch | None:
    """The batch's spans, when tracing is on; a failure to read their trace contexts costs
    the batch its spans, never its tries."""
    if tracer is None:
        return None
    try:
        return tracer.batch(jobs)
    except Exception:  # noqa: BLE001 - tracing must never fail a job
        logger.warning(
            "Could not read the trace contexts of jobs %s.", [job[0] for job in jobs], exc_info=True
        )
        return None


def _read_ahead(jobs: Sequence[JobFields]) -> None:
    """Let the types of the batch's jobs read what their tries need in one go (a
    django.tasks task's row: ``JobType.read_ahead``), one call per hook with all its jobs
    (and what their claim brought of it), rather than one statement per try. If it fails,
    each try reads its own, and a failure there is that try's."""
    batches: dict[Callable[[list[JobFields]], None], list[JobFields]] = {}
    for job in jobs:
        try:
            hook = registry.lookup(job[1]).read_ahead
        except UnknownJobType:
            continue  # its try fails, saying why
        if hook is not None:
            batches.setdefault(hook, []).append(job)
    for hook, its_jobs in batches.items():
        try:
            hook(its_jobs)
        except Exception:  # noqa: BLE001 - never the child's end: each try reads alone
            logger.warning(
                "Could not read ahead for jobs %s of their batch.",
                [job[0] for job in its_jobs],
                exc_info=True,
            )


def _exit_with(supervisor_pid: int) -> None:
    """Exit at once when the supervisor dies (even by SIGKILL): a job must not run on,
    unsupervised, while the reaper hands it to another worker. A pidfd becomes readable
    when that process exits; a daemon thread waits on it at no cost."""
    try:
        pidfd = os.pidfd_open(supervisor_pid)
    except (AttributeError, OSError):
        return  # no pidfd here: the closed pipe still stops the child after its job

    def watch() -> None:
        select.select([pidfd], [], [])
        os._exit(70)

    threading.Thread(target=watch, name="supervisor-watch", daemon=True).start()


def _send(conn: Connection, message: FromChild) -> bool:
    try:
        messages.send(conn, message)
    except OSError:
        return False
    return True


# The capture of the tries' logs, once ``main`` installed it (a child process); None where
# ``run`` is called in another process (``jobs.testing``), whose tries keep no log.
_capture: try_log.Capture | None = None


def run(
    job_id: int,
    type_name: str,
    payload_text: str,
    attempt: int,
    max_attempts: int,
    worker: str,
    report: Callable[[int, str], None],
    step: int | None = None,
) -> Outcome:
    """Run one job and say what it came to (``jobs.worker.outcome``): succeeded (with the
    JSON text of its result when its type keeps one, a django.tasks task's), failed,
    postponed by the ``RetryLater`` it raised (an atomic job's writes are rolled back
    first), or, for an atomic job or a workflow ``step``, settled in its own transaction.
    ``report`` takes the handler's progress (``jobs.worker.progress``: the supervisor
    writes it to the row).
    What the handler logged comes with the outcome (``jobs.try_log``; None if nothing).
    """
    capture = _capture
    if capture is None:
        return _run(job_id, type_name, payload_text, attempt, max_attempts, worker, report, step)
    capture.start(job_id, attempt)
    try:
        outcome = _run(job_id, type_name, payload_text, attempt, max_attempts, worker, report, step)
    finally:
        log = capture.finish()
    return outcome if log is None else outcome._replace(log=log)


def _run(
    job_id: int,
    type_name: str,
    payload_text: str,
    attempt: int,
    max_attempts: int,
    worker: str,
    report: Callable[[int, str], None],
    step: int | None = None,
) -> Outcome:
    try:
        job_type = registry.lookup(type_name)
        payload = json.loads(payload_text)
        ctx = JobContext(
            job_id=job_id,
            type_name=type_name,
            attempt=attempt,
            max_attempts=max_attempts,
            worker=worker,
            report=report,
        )
        if step is not None:
            return _run_step(job_type, ctx, payload, step)
        if job_type.atomic:
            from jobs import store  # the store needs the models: only once Django is set up

            # Called in this frame, like the plain handler below, so that the retry rule
            # still tells a payload that does not fit the handler's keywords.
            with transaction.atomic():
                job_type.func(ctx, **payload)
                store.complete_in_transaction(worker, job_id, attempt)  # raises FencedOff
            return Outcome.settled(committed=True)
        returned = job_type.func(ctx, **payload)
        return Outcome.succeeded(returned) if job_type.keeps_result and returned is not None else SUCCEEDED
    except RetryLater as wait:
        return Outcome.postponed(wait.at, wait.reason)
    except FencedOff:
        return Outcome.settled(committed=False)
    except BaseException as exc:  # noqa: BLE001 - anything a handler raises is a failed try
        return Outcome.failed(_failure(exc, retryable=retries.retryable(exc)))


def _run_step(job_type: registry.JobType, ctx: JobContext, payload: dict[str, Any], step: int) -> Outcome:
    """Run a workflow step's job and complete it here, in one transaction with its step's
    success and the release of the steps that follow (``store.complete_in_transaction``):
    an atomic step's handler runs inside that transaction, so its writes commit with them;
    a plain step's completion is a short transaction after its handler returned. Either
    way, a crash before the commit leaves the step to run again, and nothing that follows
    it released."""
    from jobs import store
    from jobs.workflow import progress

    info = progress.step_info(step)
    if info is not None:
        ctx.workflow_id, ctx.step_id, ctx.step_name = info.workflow_id, info.id, info.name
        ctx.read_results = functools.partial(progress.upstream_results, step)
        if info.results_as:
            payload = job_type.with_upstream(payload, info.results_as, ctx.upstream_results)

    def complete(returned: Any) -> None:
        store.complete_in_transaction(
            ctx.worker,
            ctx.job_id,
            ctx.attempt,
            step=step,
            result=_step_result(job_type, returned),
            keep_result=job_type.keeps_result,
        )

    if job_type.atomic:
        with transaction.atomic():
            complete(job_type.func(ctx, **payload))
    else:
        returned = job_type.func(ctx, **payload)
        with transaction.atomic():
            complete(returned)
    return Outcome.settled(committed=True)


def _step_result(job_type: registry.JobType, returned: Any) -> str | None:
    """What a step returned, as the JSON text its successors read; a value that is not
    JSON fails the step for good (the same call would return the same value)."""
    if returned is None or job_type.keeps_result:
        return returned  # a task's result is JSON text already
    from jobs import validation

    try:
        return validation.result_text(returned)
    except InvalidPayload as exc:
        raise PermanentError(
            f"Step {job_type.name} returned a value its successors cannot read: {exc}"
        ) from exc


def _failure(exc: BaseException, *, retryable: bool) -> Failure:
    """The exception being handled, as the store records it."""
    from jobs.store import Failure  # the store needs the models: only once Django is set up

    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    # PostgreSQL's text columns refuse NUL: written as is, the supervisor could not record
    # the failure at all.
    message, trace = (text.replace("\x00", "\\x00") for text in (str(exc), traceback.format_exc()))
    return Failure(name, message, trace, retryable)
