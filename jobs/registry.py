"""The job-type registry: every type is declared once, with its queue, attempts, backoff,
timeout, default priority, dedupe key and whether it runs atomically, and looked up by name
when enqueued and when run.

Types are declared with ``@job`` (``jobs.declare``) in each installed app's ``tasks``
module, imported at start-up (``JobsConfig.ready``) the way ``admin.py`` is, so an app adds
job types without touching the engine. Types that are not declared here come from the
resolvers an adapter adds (``add_resolver``): the ``django.tasks`` adapter
(``jobs.django_tasks``) adds one that finds a task by its module path. The registry never
imports an adapter.

The defaults of every job type (queue, attempts, backoff and its cap, timeout, priority)
are the ``JobType`` fields' below, and nowhere else. This module imports no model, so an
adapter may register with it before the app registry is ready.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from jobs.errors import InvalidJobOption, UnknownJobType
from jobs.flow.limits import TypeLimits
from jobs.keys import KeyTemplate

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
    # task: ``jobs.django_tasks``); a job handler's return value is ignored.
    keeps_result: bool = False
    # Called in a worker's child with a batch's jobs of this type (``JobFields``: what the
    # claim brought, ``try_fields`` included) before they run, to read in one go what each
    # try needs (a task's row) and the claim did not bring; a failure is only logged. A
    # worker's claims bring ``try_fields`` for the jobs of such types (``store.claim``).
    read_ahead: Callable[[list[Any]], None] | None = None
    # How a workflow step of this type gets its upstream results under a keyword of the
    # step's choosing (``jobs.step(..., results_as=...)``): by default a payload field; an
    # adapter whose payload holds the call's arguments puts them among those.
    takes_upstream: Callable[[dict[str, Any], str, Any], dict[str, Any]] | None = None
    # Fleet-wide concurrency and rate limits (``jobs.flow.limits``); None: unlimited.
    limits: TypeLimits | None = None

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ImproperlyConfigured(f"Job type {self.name!r}: attempts must be at least 1.")
        if not self.backoff or any(step < 0 for step in self.backoff):
            raise ImproperlyConfigured(f"Job type {self.name!r}: backoff must be non-negative seconds.")
        from jobs.models import Priority  # not at the top: see the module's docstring

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

    def with_upstream(self, payload: dict[str, Any], keyword: str, results: Any) -> dict[str, Any]:
        """``payload`` with a step's upstream results added under ``keyword``."""
        if self.takes_upstream is not None:
            return self.takes_upstream(payload, keyword, results)
        return {**payload, keyword: results}

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


class Resolver(Protocol):
    """Finds job types that no ``@job`` declares (an adapter's: a ``django.tasks`` task)."""

    def resolve(self, name: str) -> JobType:
        """The type named ``name``; ``UnknownJobType``, saying why, when it is not one."""
        ...

    def queues(self) -> set[str]:
        """The queues of its types, which workers serve by default."""
        ...

    def names(self) -> list[str]:
        """The names of its types this process knows of (the admin's type filter)."""
        ...

    def limited_queues(self) -> set[str]:
        """The queues its types with flow limits may be enqueued on."""
        ...


_resolvers: list[Resolver] = []


def add_resolver(resolver: Resolver) -> None:
    """Let ``lookup`` and ``queues`` ask ``resolver`` too (once, however often added)."""
    if resolver not in _resolvers:
        _resolvers.append(resolver)


def lookup(name: str) -> JobType:
    """The type of a job row, as a worker finds it: a declared type, or else the first
    resolver's that knows it (say a ``django.tasks`` task, named by its module path).

    Raises UnknownJobType when none does, with the first resolver's reason (a path that no
    longer imports, say).
    """
    try:
        return _registry[name]
    except KeyError:
        pass
    refused: UnknownJobType | None = None
    for resolver in _resolvers:
        try:
            return resolver.resolve(name)
        except UnknownJobType as exc:
            refused = refused or exc
    if refused is not None:
        raise refused
    return get(name)  # raises, naming the declarations


def lookup_or_none(name: str) -> JobType | None:
    """``lookup``, or None for a name nothing knows (any longer)."""
    try:
        return lookup(name)
    except UnknownJobType:
        return None


def all_types() -> list[JobType]:
    return sorted(_registry.values(), key=lambda job_type: job_type.name)


def names() -> list[str]:
    """The declared types' names, then those the resolvers know of (each list sorted)."""
    resolved = {name for resolver in _resolvers for name in resolver.names()} - set(_registry)
    return sorted(_registry) + sorted(resolved)


def limits_of(name: str) -> TypeLimits | None:
    """The flow limits of the type named ``name`` (a declared type's or a resolver's);
    None for an unlimited type, or one no longer known (its jobs are not held back)."""
    found = lookup_or_none(name)
    return found.limits if found is not None else None


def limited_queues() -> set[str]:
    """Queues that hold types with flow limits: the declared types', and every queue of a
    resolver with such types (a task's queue is chosen when it is enqueued)."""
    found = {job_type.queue for job_type in _registry.values() if job_type.limits is not None}
    for resolver in _resolvers:
        found |= resolver.limited_queues()
    return found


def queues() -> list[str]:
    """Every queue a worker serves by default: the declared types' and the resolvers'
    (the ``QUEUES`` of each ``jobs.backends.JobsBackend`` in ``TASKS``)."""
    found = {job_type.queue for job_type in _registry.values()}
    for resolver in _resolvers:
        found |= resolver.queues()
    return sorted(found)
