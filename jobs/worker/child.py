"""The child process: runs jobs one at a time for its supervisor, so a crash fails one job.

It waits for a batch (one job for slow types, a few for very short ones), runs the jobs in
order, reports each failure at once and the end of the batch, and waits again. What the
two processes tell each other is in ``jobs.worker.messages``; a handler's progress goes
into the child's slot in shared memory, for the supervisor to write (``jobs.worker.progress``).
"""

from __future__ import annotations

import functools
import json
import os
import select
import signal
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

import django

from jobs import registry
from jobs.context import JobContext
from jobs.errors import PermanentError, UnknownJobType
from jobs.worker import messages
from jobs.worker.messages import CURRENT, STARTED, FromChild, JobFailed, SharedState, Stop
from jobs.worker.progress import ProgressSlot

if TYPE_CHECKING:
    from jobs.store import Failure


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
    from django.db import close_old_connections

    while True:
        try:
            message = messages.receive_in_child(conn)
        except (EOFError, OSError):
            return  # the supervisor is gone
        if isinstance(message, Stop):
            return
        for index, (job_id, type_name, payload_text, attempt, max_attempts) in enumerate(message.jobs):
            state[STARTED] = time.monotonic()
            state[CURRENT] = index
            report = functools.partial(progress.put, job_id, attempt)
            failure = run(job_id, type_name, payload_text, attempt, max_attempts, worker, report)
            if failure is not None:
                close_old_connections()
                if not _send(conn, JobFailed(index, failure)):
                    return
        close_old_connections()
        if not _send(conn, messages.BATCH_DONE):
            return


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


def run(
    job_id: int,
    type_name: str,
    payload_text: str,
    attempt: int,
    max_attempts: int,
    worker: str,
    report: Callable[[int, str], None],
) -> Failure | None:
    """Run one job; None on success, else what went wrong. ``report`` takes the handler's
    progress (``jobs.worker.progress``: the supervisor writes it to the row)."""
    try:
        job_type = registry.get(type_name)
        payload = json.loads(payload_text)
        ctx = JobContext(
            job_id=job_id,
            type_name=type_name,
            attempt=attempt,
            max_attempts=max_attempts,
            worker=worker,
            report=report,
        )
        job_type.func(ctx, **payload)
        return None
    except (PermanentError, UnknownJobType) as exc:
        return _failure(exc, retryable=False)
    except TypeError as exc:
        # Raised by the call itself (no deeper frame): the payload does not fit the
        # handler's keywords, and will not fit next time either.
        retryable = exc.__traceback__ is not None and exc.__traceback__.tb_next is not None
        return _failure(exc, retryable=retryable)
    except BaseException as exc:  # noqa: BLE001 - anything a handler raises is a failed try
        return _failure(exc, retryable=True)


def _failure(exc: BaseException, *, retryable: bool) -> Failure:
    """The exception being handled, as the store records it."""
    from jobs.store import Failure  # the store needs the models: only once Django is set up

    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    return Failure(name, str(exc), traceback.format_exc(), retryable)
