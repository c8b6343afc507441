"""The job-type registry: every type is declared once, with its queue, attempts, backoff,
timeout and default priority, and looked up by name when enqueued and when run.

Each installed app's ``tasks`` module is imported at start-up (``JobsConfig.ready``), the
way ``admin.py`` is, so an app adds job types without touching the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

from jobs.errors import UnknownJobType

if TYPE_CHECKING:
    from jobs.context import JobContext
    from jobs.models import Job

# Stored as small integers so the claim index sorts them; lower runs first.
PRIORITIES: Mapping[str, int] = {"critical": 0, "high": 1, "normal": 2, "low": 3}
PRIORITY_NAMES: Mapping[int, str] = {value: name for name, value in PRIORITIES.items()}

DEFAULT_BACKOFF = (30, 120, 480)
DEFAULT_BACKOFF_CAP = 1800


def priority_value(name: str) -> int:
    try:
        return PRIORITIES[name]
    except KeyError:
        raise ValueError(f"Unknown priority {name!r}; use one of {', '.join(PRIORITIES)}.") from None


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


@dataclass(frozen=True)
class JobFunction:
    """What ``@job`` returns: the plain function, plus ``enqueue`` and ``using``."""

    job_type: JobType
    options: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, ctx: JobContext, **payload: Any) -> Any:
        return self.job_type.func(ctx, **payload)

    @property
    def name(self) -> str:
        return self.job_type.name

    def using(
        self,
        *,
        priority: str | None = None,
        run_at: datetime | None = None,
        dedupe_key: str | None = None,
    ) -> JobFunction:
        """A copy that enqueues with these options (never another queue)."""
        given = {"priority": priority, "run_at": run_at, "dedupe_key": dedupe_key}
        merged = {**self.options, **{key: value for key, value in given.items() if value is not None}}
        return replace(self, options=merged)

    def enqueue(self, **payload: Any) -> Job:
        from jobs.store import enqueue

        return enqueue(self.job_type.name, payload, **self.options)


_registry: dict[str, JobType] = {}


def job(
    name: str,
    *,
    queue: str = "default",
    attempts: int = 3,
    backoff: tuple[float, ...] = DEFAULT_BACKOFF,
    backoff_cap: float = DEFAULT_BACKOFF_CAP,
    timeout: float | None = None,
    priority: str = "normal",
) -> Callable[[Callable[..., Any]], JobFunction]:
    """Declare a job type. The name is stored in rows: never rename one, add a new one."""
    if attempts < 1:
        raise ImproperlyConfigured(f"Job type {name!r}: attempts must be at least 1.")
    if not backoff or any(step < 0 for step in backoff):
        raise ImproperlyConfigured(f"Job type {name!r}: backoff must be non-negative seconds.")
    priority_value(priority)

    def register(func: Callable[..., Any]) -> JobFunction:
        if name in _registry and _registry[name].func is not func:
            raise ImproperlyConfigured(f"Job type {name!r} is declared twice.")
        job_type = JobType(
            name=name,
            func=func,
            queue=queue,
            attempts=attempts,
            backoff=tuple(backoff),
            backoff_cap=backoff_cap,
            timeout=timeout,
            priority=priority,
        )
        _registry[name] = job_type
        return JobFunction(job_type)

    return register


def get(name: str) -> JobType:
    try:
        return _registry[name]
    except KeyError:
        raise UnknownJobType(f"Unknown job type {name!r}; is it declared in a tasks module?") from None


def all_types() -> list[JobType]:
    return sorted(_registry.values(), key=lambda job_type: job_type.name)


def queues() -> list[str]:
    return sorted({job_type.queue for job_type in _registry.values()})
