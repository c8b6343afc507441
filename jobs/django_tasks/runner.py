"""Running one try of a ``django.tasks`` task in a worker's child process.

The runner is the handler of the task's job type (``jobs.django_tasks.types``): the child calls it
like any handler, with the job's context and payload (``args``, ``kwargs``), and gets back
the task's return value as JSON text, which travels to the supervisor and is stored with
the acknowledgement. A task returning None sends nothing: it is acknowledged like a job.

Around the call, as Django's own backends do: ``task_started`` before it, ``task_finished``
after it (from within the exception handler when it failed, so loggers see the error), both
with the ``TaskResult`` read from the row, which ``takes_context=True`` tasks also get as
``TaskContext``. A try that did not succeed says READY in its ``task_finished`` when
another try follows (a retry, or a ``RetryLater``), FAILED when none does, as the store
will decide (``jobs.retries``). A try the worker had to stop (a crash, a timeout) sends no
signal. A return value that is not JSON fails the task at once with the serializer's
``TypeError``, as Django's own backends record it.

Async task functions run on one event loop per child process, created on first use and
kept for the child's life; their ORM calls go through ``sync_to_async`` to Django's one
worker thread, whose connection is checked after each task as the child's own is.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import traceback
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.tasks import Task, TaskContext, TaskResult, TaskResultStatus
from django.tasks.base import TaskError
from django.tasks.signals import task_finished, task_started
from django.utils import timezone
from django.utils.json import normalize_json

from jobs import retries
from jobs.django_tasks import results as task_results
from jobs.errors import InvalidTaskArguments, permanent

if TYPE_CHECKING:
    from jobs.context import JobContext
    from jobs.django_tasks.backend import JobsBackend

_loop: asyncio.AbstractEventLoop | None = None


class TaskRunner:
    """Runs one task; ``(ctx, args=[...], kwargs={...})`` → its return value as JSON text."""

    def __init__(self, task: Task, backend: JobsBackend) -> None:
        self.task = task
        self.sender = type(backend)
        self.signature = inspect.signature(task.func)
        self.is_async = inspect.iscoroutinefunction(task.func)

    def __call__(self, ctx: JobContext, *, args: list[Any], kwargs: dict[str, Any]) -> str | None:
        result = task_results.of_try(ctx.job_id, self.task, ctx.worker, args, kwargs)
        task_started.send(sender=self.sender, task_result=result)
        try:
            if self.task.takes_context:
                args = [TaskContext(task_result=result), *args]
            value = self._call(args, kwargs)
            text = self._encode(value)
        except BaseException as exc:
            _finished(result, retries.follows(exc, ctx.attempt, ctx.max_attempts), _error_of(exc))
            task_finished.send(sender=self.sender, task_result=result)
            raise
        object.__setattr__(result, "_return_value", json.loads(text) if text is not None else None)
        _finished(result, False)
        task_finished.send(sender=self.sender, task_result=result)
        return text

    def _call(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if not self.is_async:
            return self._checked(self.task.func, args, kwargs)
        coroutine = self._checked(self.task.func, args, kwargs)  # its arguments are bound here
        loop = _event_loop()
        try:
            return loop.run_until_complete(coroutine)
        finally:
            loop.run_until_complete(sync_to_async(close_old_connections)())

    def _checked(self, func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """``func(*args, **kwargs)``; arguments that do not fit its signature raise
        ``InvalidTaskArguments``. They are checked only once the call raised a
        ``TypeError`` (binding them first would cost every try as much as a no-op task's
        signals): a ``TypeError`` of the task's own code, with fitting arguments, stays
        what it is."""
        try:
            return func(*args, **kwargs)
        except TypeError as exc:
            try:
                self.signature.bind(*args, **kwargs)
            except TypeError as unfit:
                raise InvalidTaskArguments(f"Task {self.task.module_path}: {unfit}.") from exc
            raise

    def _encode(self, value: Any) -> str | None:
        """The value as stored: JSON text, or None for None. A value that is not JSON
        raises the serializer's ``TypeError`` (its message; a note says which task), never
        retried: the same call returns the same value."""
        if value is None:
            return None
        try:
            normalized = normalize_json(value)
            if _has_nul(normalized):
                raise ValueError("PostgreSQL's JSON cannot hold a NUL character (\\u0000)")
            return json.dumps(normalized, allow_nan=False)
        except (TypeError, ValueError) as exc:
            note = f"Task {self.task.module_path} returned a {type(value).__name__}, which cannot be stored as JSON."
            if type(exc) is TypeError:
                exc.add_note(note)
                permanent(exc)
                raise
            error = TypeError(str(exc))  # an out-of-range float, a NUL: still a type JSON lacks
            error.add_note(note)
            raise permanent(error) from exc


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def _event_loop() -> asyncio.AbstractEventLoop:
    """This process's event loop for async tasks, kept between tasks."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    return _loop


def _error_of(exc: BaseException) -> TaskError:
    cls = type(exc)
    return TaskError(
        exception_class_path=f"{cls.__module__}.{cls.__qualname__}",
        traceback="".join(traceback.format_exception(exc)),
    )


def _finished(result: TaskResult, retrying: bool, error: TaskError | None = None) -> None:
    """Bring the result read before the try up to its end."""
    if error is not None:
        result.errors.append(error)
        status = TaskResultStatus.READY if retrying else TaskResultStatus.FAILED
    else:
        status = TaskResultStatus.SUCCESSFUL
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", None if retrying else timezone.now())
