"""Declaring a job type: ``@job`` and the function it returns.

@job("repository.ingest", queue="ingestion", attempts=3, dedupe="repository:{repository_id}")
def ingest_repository(ctx: JobContext, *, repository_id: int) -> None: ...

ingest_repository.enqueue(repository_id=7)
ingest_repository.using(priority="high").enqueue(repository_id=7)
jobs.start(jobs.chain(ingest_repository.step(repository_id=7), ...))   # a workflow's step
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from jobs import registry, store, validation
from jobs.context import JobContext
from jobs.flow.limits import TypeLimits
from jobs.keys import KeyTemplate
from jobs.models import Job
from jobs.registry import JobType

if TYPE_CHECKING:
    from jobs.workflow.flow import Step


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
        """A copy that enqueues with these options (never another queue). A refused option
        raises ``InvalidJobOption`` here, where it is written; enqueue checks again (a
        run_at's bounds move with the clock)."""
        if priority is not None:
            validation.priority(priority)
        validation.run_at(run_at)
        if validation.dedupe_key(dedupe_key) is not None:
            self.job_type.dedupe_key({}, dedupe_key)  # refused for a type that owns its key
        given = {"priority": priority, "run_at": run_at, "dedupe_key": dedupe_key}
        merged = {**self.options, **{key: value for key, value in given.items() if value is not None}}
        return replace(self, options=merged)

    def enqueue(self, **payload: Any) -> Job:
        return store.enqueue(self.job_type.name, payload, **self.options)

    def step(self, **payload: Any) -> Step:
        """A workflow step of this type (``jobs.step``), with the priority and dedupe key
        of ``using``."""
        from jobs.workflow.flow import step

        options = {key: self.options[key] for key in ("priority", "dedupe_key") if key in self.options}
        return step(self.job_type.name, payload, **options)


def _not_declared_yet(ctx: JobContext, **payload: Any) -> None:
    raise NotImplementedError


def job(
    name: str,
    *,
    # The registry's defaults (JobType's fields), the one place they are written.
    queue: str = JobType.queue,
    attempts: int = JobType.attempts,
    backoff: tuple[float, ...] = JobType.backoff,
    backoff_cap: float = JobType.backoff_cap,
    timeout: float | None = JobType.timeout,
    priority: str = JobType.priority,
    dedupe: str | None = None,
    atomic: bool = False,
    concurrency: int | None = None,
    concurrency_key: str | None = None,
    rate: str | None = None,
    rate_key: str | None = None,
) -> Callable[[Callable[..., Any]], JobFunction]:
    """Declare a job type. The name is stored in rows: never rename one, add a new one.

    ``dedupe`` is the type's key template, e.g. ``"email:{email_id}"``: at most one job per
    key is queued or running, and enqueue derives the key from the payload.

    ``atomic=True`` runs the handler inside one database transaction on the worker's
    connection and writes the job's completion in that same transaction: its database
    writes are applied exactly once, never twice, even when a worker dies between the
    handler's end and the acknowledgement. It holds that transaction (and its row locks)
    for the whole handler; see the README's "Exactly-once database effects".

    Flow control, across every worker of the fleet (``docs/flow-control.md``):
    ``concurrency=N`` runs at most N jobs of the type at once, or of each key when
    ``concurrency_key`` names one (a template over payload fields, as ``dedupe``);
    ``rate="60/m"`` starts at most 60 in any minute (also ``/s``, ``/h``), of the type or of
    each ``rate_key``. A job over a limit stays queued, using no attempt.
    """
    # Built here, so a bad declaration fails where it is written, before decorating.
    declared = JobType(
        name=name,
        func=_not_declared_yet,
        queue=queue,
        attempts=attempts,
        backoff=tuple(backoff),
        backoff_cap=backoff_cap,
        timeout=timeout,
        priority=priority,
        dedupe=KeyTemplate(dedupe) if dedupe is not None else None,
        atomic=atomic,
        limits=TypeLimits.declare(
            name, concurrency=concurrency, concurrency_key=concurrency_key, rate=rate, rate_key=rate_key
        ),
    )

    def register(func: Callable[..., Any]) -> JobFunction:
        job_type = replace(declared, func=func)
        registry.register(job_type)
        return JobFunction(job_type)

    return register
