"""The pipeline's job types and timer steps: declarations only, each calling a service."""

from datetime import datetime

from django.conf import settings
from django.utils import timezone

import jobs
from jobs import JobContext, RetryLater, job, periodic
from pipeline import job_types

# The services are imported by each job when it runs, not here: a worker imports this
# module at start-up to know the job types, and the services import what the jobs need
# (the parsers, the model providers, the index's clients), which a worker that runs none of
# these jobs, or has not yet, need not load (docs/deploy.md).

# The email index's own work runs on a queue of its own, "index", so a re-index of every
# email never holds the mail queue's slots (and a plain runworker keeps a slot for mail).
INDEX_QUEUE = "index"


# A timeout, because heartbeats would keep a hung try "running" for ever.
@job(
    job_types.PROCESS_EMAIL,
    queue="mail",
    attempts=3,
    backoff=(30, 120, 600),
    timeout=settings.PIPELINE_PROCESS_TIMEOUT,
    dedupe="email:{email_id}",
)
def process_email(ctx: JobContext, *, email_id: int) -> None:
    from pipeline import process

    process.process_email(email_id, job_id=ctx.job_id, progress=ctx.progress)


@job(
    job_types.SWEEP_EMAILS, queue="mail", attempts=1, timeout=settings.PIPELINE_SWEEP_TIMEOUT, dedupe="sweep"
)
def sweep_emails_now(ctx: JobContext) -> None:
    """Queued when model calls are switched on, so waiting emails need not wait for the timer."""
    from pipeline import sweeper

    sweeper.sweep()


@periodic("sweep", every=300)
def sweep_emails() -> str:
    from pipeline import sweeper

    return str(sweeper.sweep())


@job(
    job_types.COMPLETE_INDEX,
    queue=INDEX_QUEUE,
    attempts=1,
    timeout=settings.PIPELINE_SWEEP_TIMEOUT,
    dedupe="catch-up",
)
def complete_partially_indexed(ctx: JobContext) -> None:
    """Write what is missing of partially indexed emails (a batch); a service that asked us
    to wait (429) is waited for."""
    from pipeline import indexing

    result = indexing.complete_partially_indexed(job_id=ctx.job_id)
    ctx.progress(100, str(result))
    if result.retry_after is not None:
        raise RetryLater(str(result), delay=result.retry_after)


@job(job_types.REBUILD_INDEX, queue=INDEX_QUEUE, attempts=3, timeout=6 * 3600, dedupe="rebuild")
def rebuild_index(ctx: JobContext, *, since: str) -> None:
    """Re-index all: the vectors of every indexed email, into the current model's collection."""
    from pipeline import indexing

    indexing.rebuild(datetime.fromisoformat(since), ctx.progress, job_id=ctx.job_id)


@job(job_types.FORGET_EMAIL, queue=INDEX_QUEUE, attempts=5, dedupe="email:{email_id}")
def forget_email(ctx: JobContext, *, email_id: int) -> None:
    """A deleted email's points, from every collection of the index."""
    from pipeline import vector_store

    vector_store.forget(email_id)


@periodic("sweep", every=300)
def catch_up_index() -> str:
    """Queue the catch-up while emails are partially indexed, and a rebuild when the
    embedding model changed; nothing is indexed here (the timer does not wait on Qdrant)."""
    from pipeline import indexing
    from pipeline.models import EmailMessage, Status

    queued = []
    if EmailMessage.objects.filter(status=Status.PARTIALLY_INDEXED).exists():
        jobs.enqueue(job_types.COMPLETE_INDEX)
        queued.append(job_types.COMPLETE_INDEX)
    if settings.VECTOR_INDEX and indexing.rebuild_due() and jobs.active_job(job_types.REBUILD_INDEX) is None:
        jobs.enqueue(job_types.REBUILD_INDEX, {"since": timezone.now().isoformat()})
        queued.append(f"{job_types.REBUILD_INDEX} (the embedding model changed)")
    return f"queued {', '.join(queued)}" if queued else "nothing to catch up"
