"""The job-type registry: every type is declared once, with its queue, attempts, backoff,
timeout, default priority, dedupe key and whether it runs atomically, and looked up by name
when enqueued and when run.

Types are declared with ``@job`` (``jobs.declare``) in each installed app's ``tasks``
module, imported at start-up (``JobsConfig.ready``) the way ``admin.py`` is, so an app adds
job types without touching the engine. ``django.tasks`` tasks are not declared here: a
worker finds one by its module path (``lookup``, ``jobs.task_types``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from jobs.errors import InvalidJobOption, UnknownJobType
from jobs.keys import KeyTemplate
from jobs.models import Priority

DEFAULT_BACKOFF = (30, 120, 480)
DEFAULT_BACKOFF_CAP = 1800


@dataclass(frozen=True)
class JobType:
    name: str
    func: Callable[..., Any]
    queue: str = "default"
    attempts: int = 3
    backoff: tuple[float, ...] = DEFAULT_BACKOFF
    backoff_cap: float = DEFAULT_BACKOFF_CAP
    timeout: float | None = None
    priority: str = "normal"
    dedupe: KeyTemplate | None = None
    # The handler and the job's completion in one database transaction (jobs.worker.child).
    atomic: bool = False
    # The handler returns its result as JSON text, to be stored on the row (a django.tasks
    # task: ``jobs.task_types``); a job handler's return value is ignored.
    keeps_result: bool = False

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ImproperlyConfigured(f"Job type {self.name!r}: attempts must be at least 1.")
        if not self.backoff or any(step < 0 for step in self.backoff):
            raise ImproperlyConfigured(f"Job type {self.name!r}: backoff must be non-negative seconds.")
        Priority.named(self.priority)

    def delay_after(self, attempt: int) -> float:
        """Seconds to wait after try number ``attempt`` (1-based) failed.

        Past the declared schedule the last step keeps growing by the schedule's own
        ratio (30, 120, 480 → 1920), always capped at ``backoff_cap``.
        """
        steps = self.backoff
        if attempt <= len(steps):
            delay = steps[attempt - 1]
        else:
            ratio = steps[-1] / steps[-2] if len(steps) > 1 and steps[-2] else 2.0
            delay = steps[-1] * ratio ** (attempt - len(steps))
        return float(min(delay, self.backoff_cap))

    def dedupe_key(self, payload: dict[str, Any], given: str | None = None) -> str | None:
        """The key an enqueue of ``payload`` stores: derived from the payload when the type
        owns its key, else the caller's (or none)."""
        if self.dedupe is None:
            return given
        if given is not None:
            raise InvalidJobOption(
                f"Job type {self.name!r} derives its dedupe key from the payload "
                f"({self.dedupe.template!r}); do not pass one."
            )
        return self.dedupe.render(payload)

    def key_template(self) -> KeyTemplate:
        """The declared key template, for lookups by key; refused for a type without one."""
        if self.dedupe is None:
            raise ValueError(
                f"Job type {self.name!r} declares no dedupe key: declare one with @job(dedupe=...)."
            )
        return self.dedupe


_registry: dict[str, JobType] = {}


def register(job_type: JobType) -> None:
    """Add a declared type; a second declaration of a name by another function fails."""
    existing = _registry.get(job_type.name)
    if existing is not None and existing.func is not job_type.func:
        raise ImproperlyConfigured(f"Job type {job_type.name!r} is declared twice.")
    _registry[job_type.name] = job_type


def remove(name: str) -> None:
    """Forget a type (a timer removed by a test that declared it)."""
    _registry.pop(name, None)


def get(name: str) -> JobType:
    try:
        return _registry[name]
    except KeyError:
        raise UnknownJobType(f"Unknown job type {name!r}; is it declared in a tasks module?") from None


def declared(name: str) -> bool:
    return name in _registry


def lookup(name: str) -> JobType:
    """The type of a job row, as a worker finds it: a declared type, or else a
    ``django.tasks`` task, named by its module path, enqueued through ``jobs.backends``.

    Raises UnknownJobType when it is neither (a path that no longer imports, say).
    """
    try:
        return _registry[name]
    except KeyError:
        from jobs import task_types  # imports django.tasks only where tasks are run

        return task_types.resolve(name)


def all_types() -> list[JobType]:
    return sorted(_registry.values(), key=lambda job_type: job_type.name)


def queues() -> list[str]:
    """Every queue a worker serves by default: the declared types' and the ``QUEUES`` of
    each ``jobs.backends.JobsBackend`` in ``TASKS``."""
    from jobs import task_types

    return sorted({job_type.queue for job_type in _registry.values()} | task_types.queues())
