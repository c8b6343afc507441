"""A PostgreSQL-backed background-job engine.

from jobs import job, JobContext

@job("repository.ingest", queue="ingestion", attempts=3, timeout=300)
def ingest_repository(ctx: JobContext, *, repository_id: int) -> None: ...

ingest_repository.enqueue(repository_id=7)
jobs.enqueue("repository.ingest", {"repository_id": 7}, priority="high")
"""

from typing import Any

from jobs.context import JobContext
from jobs.errors import JobError, PermanentError, RetryableError
from jobs.registry import job

__all__ = ["JobContext", "JobError", "PermanentError", "RetryableError", "enqueue", "enqueue_many", "job"]


def enqueue(*args: Any, **kwargs: Any):
    """See ``jobs.store.enqueue``; imported lazily so the package loads before the models."""
    from jobs.store import enqueue as store_enqueue

    return store_enqueue(*args, **kwargs)


def enqueue_many(*args: Any, **kwargs: Any) -> int:
    """See ``jobs.store.enqueue_many``."""
    from jobs.store import enqueue_many as store_enqueue_many

    return store_enqueue_many(*args, **kwargs)
