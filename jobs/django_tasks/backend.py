"""The engine as a ``django.tasks`` backend: any ``@task`` runs on ``manage.py runworker``.

    TASKS = {
        "default": {
            "BACKEND": "jobs.backends.JobsBackend",
            "QUEUES": ["default", "mail"],
            "OPTIONS": {
                "attempts": 3,                  # tries per task (Django's API has no retries)
                "backoff": [30, 120, 480],      # seconds before the 2nd, 3rd, 4th... try
                "backoff_cap": 1800,            # the longest wait between tries
                "timeout": None,                # seconds a try may run before it is stopped
                "tasks": {                      # per task, by module path: any of the above,
                    "myapp.tasks.send_welcome": {"attempts": 5, "timeout": 60},
                    "myapp.tasks.call_crm": {   # and fleet-wide limits (docs/flow-control.md)
                        "concurrency": 2, "concurrency_key": "account:{account_id}",
                        "rate": "60/m",
                    },
                },
            },
        }
    }

A task is a job row like any other: its type is the task's module path (the "Background
jobs" page shows it, with Retry and Cancel), its queue the task's ``queue_name`` (so
``runworker --queue mail:1`` lanes apply), its payload ``{"args": [...], "kwargs": {...}}``.
Enqueue joins the caller's transaction, as the engine's ``enqueue`` does. Priorities share
one scale with the engine's named ones (``jobs.models.Priority``). Results:
``jobs.django_tasks.results``; how a worker finds and runs a task: ``jobs.django_tasks.types``
(the registry's resolver, registered when the backend is created) and
``jobs.django_tasks.runner``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.apps import apps
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.tasks import Task, TaskResult
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.exceptions import InvalidTask, InvalidTaskBackend, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued
from django.utils.json import normalize_json
from django.utils.module_loading import import_string

from jobs import registry
from jobs.django_tasks import types
from jobs.flow.limits import TypeLimits

# Django creates the backend when the first @task is declared, which may be before the app
# registry is ready: nothing here imports the models until a task is enqueued or run.

POLICY = ("attempts", "backoff", "backoff_cap", "timeout")
# Per task only: its flow limits, keyed by the task's keyword arguments (jobs.flow.limits).
LIMITS = ("concurrency", "concurrency_key", "rate", "rate_key")
# @job's own defaults (jobs.registry), for every task whose OPTIONS do not say otherwise.
DEFAULT_POLICY: dict[str, Any] = {name: getattr(registry.JobType, name) for name in POLICY}


class JobsBackend(BaseTaskBackend):
    supports_defer = True
    supports_async_task = True  # each worker child runs them on its own event loop
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        where = f"TASKS[{alias!r}]"
        if isinstance(params.get("QUEUES"), str):
            raise InvalidTaskBackend(f"{where}['QUEUES'] must be a list of queue names.")
        _check_queues(self.queues, where)
        options = dict(self.options)
        per_task = options.pop("tasks", {})
        self.policy = {**DEFAULT_POLICY, **_policy(options, f"{where}['OPTIONS']")}
        if not isinstance(per_task, Mapping):
            raise InvalidTaskBackend(f"{where}['OPTIONS']['tasks'] must map task module paths to options.")
        self.task_policies: dict[str, dict[str, Any]] = {}
        self.task_limits: dict[str, TypeLimits] = {}
        for path, given in per_task.items():
            at = f"{where}['OPTIONS']['tasks'][{path!r}]"
            if not isinstance(given, Mapping):
                raise InvalidTaskBackend(f"{at} must be a dict.")
            _policy(given, at, POLICY + LIMITS)  # an unknown option names both kinds
            policy = {name: value for name, value in given.items() if name not in LIMITS}
            self.task_policies[path] = {**self.policy, **_policy(policy, at)}
            limits = _limits(path, {name: value for name, value in given.items() if name in LIMITS}, at)
            if limits is not None:
                self.task_limits[path] = limits
        registry.add_resolver(types.RESOLVER)  # the registry finds our tasks from now on

    # --- enqueue --------------------------------------------------------------------------

    def validate_task(self, task: Task) -> None:
        super().validate_task(task)
        longest_path, longest_queue = _column_length("type"), _column_length("queue")
        if longest_path is not None and len(task.module_path) > longest_path:
            raise InvalidTask(
                f"The module path of task {task.module_path} is longer than {longest_path} characters."
            )
        if longest_queue is not None and len(task.queue_name) > longest_queue:
            raise InvalidTask(
                f"The queue name of task {task.module_path} is longer than {longest_queue} characters."
            )
        types.declare(task)

    def enqueue(self, task: Task, args: Iterable[Any], kwargs: Mapping[str, Any]) -> TaskResult:
        """Add the task in the caller's transaction: it exists, wakes a worker and sends
        ``task_enqueued`` once that commits (at once, outside a transaction)."""
        from jobs import store
        from jobs.django_tasks import results as task_results

        self.validate_task(task)
        _check_importable(task)
        try:
            payload = {"args": normalize_json(args), "kwargs": normalize_json(kwargs)}
        except (TypeError, ValueError) as exc:
            raise type(exc)(
                f"The arguments of task {task.module_path} must be JSON-serialisable: {exc}"
            ) from exc
        limits = self.task_limits.get(task.module_path)
        job = store.enqueue_task(
            task.module_path,
            payload,
            queue=task.queue_name,
            priority=-task.priority,  # stored lower-first: see jobs.models.Priority
            max_attempts=self.policy_of(task)["attempts"],
            run_at=task.run_after,
            limit_keys=limits.keys(task.module_path, dict(kwargs)) if limits else (None, None),
        )
        result = task_results.enqueued(task, job)
        transaction.on_commit(functools.partial(task_enqueued.send, type(self), task_result=result))
        return result

    # --- results --------------------------------------------------------------------------

    def get_result(self, result_id: str) -> TaskResult:
        """The task's result as stored now; TaskResultDoesNotExist once it is pruned."""
        from jobs.django_tasks import results as task_results

        try:
            job_id = int(result_id)
        except (TypeError, ValueError):
            raise TaskResultDoesNotExist(result_id) from None
        if not 0 < job_id < 2**63:  # a bigint primary key
            raise TaskResultDoesNotExist(result_id)
        return task_results.load(job_id)

    # --- the worker's view ----------------------------------------------------------------

    def policy_of(self, task: Task) -> dict[str, Any]:
        """Attempts, backoff, backoff cap and timeout of ``task``: its own entry in
        ``OPTIONS["tasks"]``, else the backend's."""
        return self.task_policies.get(task.module_path, self.policy)

    def job_type(self, task: Task) -> registry.JobType:
        """The engine's type for ``task``: how a worker retries, times and runs it."""
        from jobs.django_tasks.runner import TaskRunner

        return _job_type(
            task.module_path,
            self.policy_of(task),
            TaskRunner(task, self),
            self.task_limits.get(task.module_path),
        )

    def limited_queues(self) -> set[str]:
        """Its queues, when a task of it has flow limits: a task's queue is named where it
        is declared, not here."""
        return set(self.queues) if self.task_limits else set()

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        if apps.is_installed("jobs"):
            return []
        return [
            checks.Error(
                f"Task backend {self.alias!r} is jobs.backends.JobsBackend, but the jobs app is not installed.",
                hint="Add 'jobs' to INSTALLED_APPS.",
                id="jobs.E001",
            )
        ]


def _job_type(
    name: str, policy: Mapping[str, Any], runner: Callable[..., Any], limits: TypeLimits | None = None
) -> registry.JobType:
    from jobs.django_tasks import results as task_results

    return registry.JobType(
        limits=limits,
        name=name,
        func=runner,
        attempts=policy["attempts"],
        backoff=tuple(policy["backoff"]),
        backoff_cap=policy["backoff_cap"],
        timeout=policy["timeout"],
        keeps_result=True,
        read_ahead=task_results.prefetch,  # each try needs its row: a batch's in one read
        takes_upstream=_upstream_as_kwarg,
    )


def _upstream_as_kwarg(payload: dict[str, Any], keyword: str, results: Any) -> dict[str, Any]:
    """A task run as a workflow step gets its upstream results as a keyword argument."""
    return {**payload, "kwargs": {**payload.get("kwargs", {}), keyword: results}}


def _policy(given: Any, where: str, known: tuple[str, ...] = POLICY) -> dict[str, Any]:
    """Validate one set of options (the backend's, or one task's)."""
    if not isinstance(given, Mapping):
        raise InvalidTaskBackend(f"{where} must be a dict.")
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InvalidTaskBackend(f"{where}: unknown option {', '.join(map(repr, unknown))}; use {known}.")
    policy = dict(given)
    if "attempts" in policy and not (type(policy["attempts"]) is int and policy["attempts"] >= 1):
        raise InvalidTaskBackend(f"{where}['attempts'] must be a whole number, at least 1.")
    if "backoff" in policy:
        backoff = policy["backoff"]
        if isinstance(backoff, str | bytes) or not isinstance(backoff, Iterable):
            raise InvalidTaskBackend(f"{where}['backoff'] must be a list of seconds.")
        policy["backoff"] = tuple(backoff)
        if not policy["backoff"] or not all(_is_number(step) and step >= 0 for step in policy["backoff"]):
            raise InvalidTaskBackend(f"{where}['backoff'] must be a list of seconds, none negative.")
    if "backoff_cap" in policy and not (_is_number(policy["backoff_cap"]) and policy["backoff_cap"] >= 0):
        raise InvalidTaskBackend(f"{where}['backoff_cap'] must be seconds.")
    timeout = policy.get("timeout")
    if timeout is not None and not (_is_number(timeout) and timeout > 0):
        raise InvalidTaskBackend(f"{where}['timeout'] must be positive seconds, or None.")
    return policy


def _limits(path: str, given: Mapping[str, Any], where: str) -> TypeLimits | None:
    """One task's flow limits, refused as the backend's other options are."""
    try:
        return TypeLimits.declare(path, **given)
    except (ImproperlyConfigured, TypeError) as exc:
        raise InvalidTaskBackend(f"{where}: {exc}") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _column_length(name: str) -> int | None:
    """The length of the job row's column ``name`` (``jobs.models.Job``); None while the
    models cannot be read yet (a task declared before the app registry is ready: its
    enqueue checks again)."""
    if not apps.models_ready:
        return None
    from django.db.models import CharField

    from jobs.models import Job

    column = Job._meta.get_field(name)
    return column.max_length if isinstance(column, CharField) else None


def _check_queues(queues: set[str], where: str) -> None:
    """Queue names a worker's ``--queue NAME:SLOTS`` can name and the queue column holds;
    at least one, since workers serve the queues they know."""
    if not queues:
        raise InvalidTaskBackend(f"{where}['QUEUES'] must name at least one queue.")
    longest = _column_length("queue")
    for queue in queues:
        too_long = longest is not None and isinstance(queue, str) and len(queue) > longest
        if not isinstance(queue, str) or not queue or too_long or set(queue) & set(":, "):
            raise InvalidTaskBackend(
                f"{where}['QUEUES']: {queue!r} is not a queue name (1 to {longest or 'the column'}'s "
                "characters, without ':', ',' or spaces)."
            )


# Module path → the function it was found to lead back to, so each task is checked once.
_found: dict[str, Callable[..., Any]] = {}


def _check_importable(task: Task) -> None:
    """A worker finds a task by its module path: that path must lead back to this task,
    and must not be the name of a declared job type."""
    path = task.module_path
    if _found.get(path) is task.func:
        return
    try:
        found = None if task.func.__module__ == "__main__" else import_string(path)
    except ImportError:
        found = None
    if not isinstance(found, Task) or found.func is not task.func:
        raise InvalidTask(
            f"Task {path} cannot be found by its module path: define it with @task at the top "
            "level of an importable module."
        )
    if registry.declared(path):
        raise InvalidTask(f"Task {path} has the name of a declared job type; rename one of them.")
    _found[path] = task.func
