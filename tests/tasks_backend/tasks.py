"""Tasks written against ``django.tasks`` only, run by real workers in the contract tests.

Each one that records a run creates an ``Execution`` row (its result id, its attempt, the
process), so a test reads the order and the count of runs from the database. With a
``signal_log`` keyword, the signal receivers below append what they saw to that file, in
whichever process sends the signal.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from django.dispatch import receiver
from django.tasks import TaskContext, task
from django.tasks.signals import task_enqueued, task_finished, task_started

from jobs import PermanentError, RetryLater
from tests.jobs_app.models import Execution


class ComplexError(Exception):
    """An exception whose constructor takes more than a message, and that cannot be pickled
    by default: the worker must record it without sending the object itself."""

    def __init__(self, code: int, detail: dict[str, Any]) -> None:
        super().__init__(f"code {code}")
        self.code, self.detail = code, detail
        self.unpicklable = lambda: None


@task
def add(a: int, b: int) -> int:
    return a + b


@task
async def async_add(a: int, b: int) -> dict[str, Any]:
    await asyncio.sleep(0)
    count = await Execution.objects.acount()  # the async ORM, on the child's event loop
    return {"sum": a + b, "executions_seen": count}


@task(takes_context=True)
def record(context: TaskContext, label: str = "", signal_log: str = "") -> dict[str, Any]:
    result = context.task_result
    Execution.objects.create(job_id=int(result.id), attempt=context.attempt, pid=os.getpid())
    return {"label": label, "attempt": context.attempt, "status": result.status, "workers": result.worker_ids}


@task(takes_context=True)
def record_times(context: TaskContext) -> dict[str, Any]:
    """The times its ``TaskResult`` gives it, for comparison with ``get_result``'s."""
    result = context.task_result
    return {"enqueued_at": result.enqueued_at.isoformat(), "started_at": result.started_at.isoformat()}


@task(takes_context=True, priority=-10)
def record_low(context: TaskContext, label: str = "") -> str:
    Execution.objects.create(job_id=int(context.task_result.id), attempt=context.attempt, pid=os.getpid())
    return label


@task(takes_context=True, queue_name="reports")
def report(context: TaskContext) -> int:
    Execution.objects.create(job_id=int(context.task_result.id), attempt=context.attempt, pid=os.getpid())
    return os.getpid()


@task(queue_name="mail")
def mail_add(a: int, b: int) -> int:
    return a + b


@task
def hold(started: str, gate: str, longest: float = 60.0) -> str:
    """Says it started (a file), then runs until the gate file appears."""
    Path(started).touch()
    deadline = time.monotonic() + longest
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return "released"


@task(takes_context=True)
def flaky(context: TaskContext, fail_times: int, signal_log: str = "") -> int:
    if context.attempt <= fail_times:
        raise ConnectionError(f"transient failure on try {context.attempt}")
    return context.attempt


@task
def always_fails(signal_log: str = "") -> None:
    raise ComplexError(7, {"why": ["nested", {"deep": True}]})


@task
def refuses() -> None:
    """The one piece of the engine a task may use: an error that is not worth retrying."""
    raise PermanentError("This input can never work.")


@task
def postpones() -> None:
    """Asks to run again later (not a failure; its attempt is given back)."""
    raise RetryLater(delay=3600, reason="Not before the rate limit resets.")


@task
def complex_value() -> Any:
    return {"list": [1, 2.5, "three", None, True], "tuple": (4, 5), "nested": {"é": {"x": []}}}


@task
def unstorable_value() -> Any:
    return {"when": time}  # a module: no JSON for that


@task
def sleepy(seconds: float) -> None:
    time.sleep(seconds)


@task
def trips_on_a_type(a: int) -> None:
    """Raises a TypeError of its own, with arguments that fit its signature."""
    raise TypeError(f"cannot add {a!r} to a str")


@task
def nothing() -> None:
    """Returns None: acknowledged like a job, nothing stored."""


@task
def wait_for_file(path: str, longest: float = 60.0) -> str:
    deadline = time.monotonic() + longest
    while not Path(path).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return "released"


def _log_signal(name: str, task_result: Any) -> None:
    path = task_result.kwargs.get("signal_log")
    if path:
        with open(path, "a") as out:
            out.write(f"{name} {task_result.id} {task_result.status} {task_result.attempts} {os.getpid()}\n")


@receiver(task_enqueued)
def _enqueued(sender: type, task_result: Any, **kwargs: Any) -> None:
    _log_signal("enqueued", task_result)


@receiver(task_started)
def _started(sender: type, task_result: Any, **kwargs: Any) -> None:
    _log_signal("started", task_result)


@receiver(task_finished)
def _finished(sender: type, task_result: Any, **kwargs: Any) -> None:
    _log_signal("finished", task_result)


@task
def chatty_task(word: str) -> str:
    """Logs one line through the standard logging module, as any task would."""
    import logging

    logging.getLogger("tests.chatty_task").warning("task says %s", word)
    return word
