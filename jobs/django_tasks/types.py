"""``django.tasks`` tasks as the engine's job types: the registry's resolver for them.

A task is never declared in the registry: its row's type is its module path
(``myapp.tasks.send_welcome``), and a worker finds it by importing that path. The task's
backend (``JobsBackend``) gives its attempts, backoff and timeout; the job type's handler
runs it (``jobs.django_tasks.runner``). A path that no longer imports, or that names
something other than a task of such a backend, is an ``UnknownJobType``: the job fails for
good with that error, and the process that looked it up carries on.

``RESOLVER`` is what the backend registers with ``jobs.registry.add_resolver`` when it is
created, so that ``registry.lookup`` and ``registry.queues`` find tasks without the
registry importing this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.tasks import Task, task_backends
from django.utils.module_loading import import_string

from jobs.errors import UnknownJobType

if TYPE_CHECKING:
    from jobs.registry import JobType

# Module path → job type, per process. Emptied when TASKS changes (tests override it).
_resolved: dict[str, JobType] = {}
# The module paths of the tasks of a JobsBackend this process has seen declared (Django
# validates each task as ``@task`` creates it): the admin's type filter lists them.
_declared: set[str] = set()


def declare(task: Task) -> None:
    _declared.add(task.module_path)


def declared() -> list[str]:
    return sorted(_declared)


def import_task(path: str) -> Task:
    """The task a module path names; UnknownJobType, saying why, when there is none (the
    path is also not a declared job type's name, or it would not be asked)."""
    unknown = f"Unknown job type {path!r}: no job type is declared under that name, and"
    if "." not in path or path.startswith("__main__."):
        raise UnknownJobType(f"{unknown} it is not the module path of a django.tasks task.")
    try:
        found = import_string(path)
    except Exception as exc:  # noqa: BLE001 - whatever importing the task's module raises
        raise UnknownJobType(
            f"{unknown} no django.tasks task can be imported from it ({type(exc).__name__}: {exc}); "
            "was it moved or renamed?"
        ) from exc
    if not isinstance(found, Task):
        raise UnknownJobType(f"{unknown} it names a {type(found).__name__}, not a django.tasks task.")
    return found


def resolve(path: str) -> JobType:
    """The job type of the task at ``path`` (cached per process)."""
    job_type = _resolved.get(path)
    if job_type is None:
        from jobs.django_tasks.backend import JobsBackend

        task = import_task(path)
        backend = task.get_backend()
        if not isinstance(backend, JobsBackend):
            raise UnknownJobType(
                f"Unknown job type {path!r}: the task uses the task backend {task.backend!r} "
                f"({type(backend).__name__}), not jobs.backends.JobsBackend."
            )
        job_type = _resolved[path] = backend.job_type(task)
    return job_type


def queues() -> set[str]:
    """The queues of every ``JobsBackend`` in ``TASKS``, which workers serve by default."""
    from jobs.django_tasks.backend import JobsBackend

    names: set[str] = set()
    for backend in task_backends.all():
        if isinstance(backend, JobsBackend):
            names |= backend.queues
    return names


def limited_queues() -> set[str]:
    """The queues of every ``JobsBackend`` whose OPTIONS give a task flow limits."""
    from jobs.django_tasks.backend import JobsBackend

    names: set[str] = set()
    for backend in task_backends.all():
        if isinstance(backend, JobsBackend):
            names |= backend.limited_queues()
    return names


class TaskResolver:
    """The registry's view of tasks (``jobs.registry.Resolver``)."""

    def resolve(self, name: str) -> JobType:
        return resolve(name)

    def queues(self) -> set[str]:
        return queues()

    def names(self) -> list[str]:
        return declared()

    def limited_queues(self) -> set[str]:
        return limited_queues()


RESOLVER = TaskResolver()


@receiver(setting_changed)
def _forget_resolved(*, setting: str, **kwargs: Any) -> None:
    if setting == "TASKS":
        _resolved.clear()
