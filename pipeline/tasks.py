"""The pipeline's job types and timer step: declarations only, each calling a service."""

from django.conf import settings

from jobs import JobContext, job, periodic
from pipeline import process, sweeper


# A timeout, because heartbeats would keep a hung try "running" for ever.
@job(
    "email.process",
    queue="mail",
    attempts=3,
    backoff=(30, 120, 600),
    timeout=settings.PIPELINE_PROCESS_TIMEOUT,
    dedupe="email:{email_id}",
)
def process_email(ctx: JobContext, *, email_id: int) -> None:
    process.process_email(email_id, job_id=ctx.job_id, progress=ctx.progress)


@job("email.sweep", queue="mail", attempts=1, timeout=settings.PIPELINE_SWEEP_TIMEOUT, dedupe="sweep")
def sweep_emails_now(ctx: JobContext) -> None:
    """Queued when model calls are switched on, so waiting emails need not wait for the timer."""
    sweeper.sweep()


@periodic("sweep", every=300)
def sweep_emails() -> str:
    return str(sweeper.sweep())
