"""Pipeline runs and the audit log: open a run, record progress, close it, record an error."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from pipeline import storable
from pipeline.models import EmailMessage, ErrorLogEntry, PipelineRun, RunOutcome, Status


def open_run(email: EmailMessage) -> PipelineRun:
    """The email's open run, or a new one; the partial unique index keeps it to one."""
    for _ in range(3):
        run = PipelineRun.objects.filter(email=email, closed_at__isnull=True).first()
        if run is not None:
            touch(run)
            return run
        try:
            with transaction.atomic():
                return PipelineRun.objects.create(email=email)
        except IntegrityError:
            continue  # another process opened it a moment ago: use that one
    raise IntegrityError(f"Could not open a run for email #{email.pk}.")


def touch(run: PipelineRun, **fields: object) -> None:
    """Record that the run made progress (the sweeper's 30-minute rule counts from here)."""
    PipelineRun.objects.filter(pk=run.pk).update(updated_at=Now(), **fields)
    for name, value in fields.items():
        setattr(run, name, value)


def close(run: PipelineRun, outcome: RunOutcome, last_error: str = "", **more: object) -> None:
    fields: dict[str, object] = {"outcome": outcome, "closed_at": Now(), "updated_at": Now(), **more}
    if last_error:
        fields["last_error"] = last_error
    PipelineRun.objects.filter(pk=run.pk).update(**fields)
    run.outcome = outcome
    for name, value in more.items():
        setattr(run, name, value)


def set_status(email: EmailMessage, status: Status, **fields: object) -> None:
    EmailMessage.objects.filter(pk=email.pk).update(status=status, **fields)
    email.status = status
    for name, value in fields.items():
        setattr(email, name, value)


def record_error(
    email: EmailMessage | None, run: PipelineRun | None, job_id: int | None, exc: BaseException
) -> ErrorLogEntry:
    """Write one audit-log row: error class, email, run, job, time and text."""
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    return ErrorLogEntry.objects.create(
        error_class=name[:200], email=email, run=run, job_id=job_id, text=storable.text(str(exc) or name)
    )


def describe(exc: BaseException) -> str:
    """``Class: message`` of an error, as a run's ``last_error`` keeps it."""
    return storable.text(f"{type(exc).__name__}: {exc}")[:5000]


def fail(email: EmailMessage, run: PipelineRun, job_id: int | None, exc: BaseException) -> None:
    """A model error or an unexpected error: email failed, error logged, run left open
    (the engine retries the job; the sweeper picks the run up if the retries run out)."""
    set_status(email, Status.FAILED)
    touch(run, last_error=describe(exc))
    record_error(email, run, job_id, exc)


def postpone(email: EmailMessage, run: PipelineRun, job_id: int | None, exc: BaseException) -> None:
    """The model service asked us to wait (a rate limit): the email keeps its status and its
    run stays open; the engine runs the job again when the service allows, without using an
    attempt. Logged, so an operator sees why it waits."""
    touch(run, last_error=describe(exc))
    record_error(email, run, job_id, exc)


def fail_for_good(email: EmailMessage, run: PipelineRun, job_id: int | None, exc: BaseException) -> None:
    """An error another try cannot fix: email failed and marked for review, error logged,
    run closed as failed (so the sweeper leaves it; a reprocess opens a new one)."""
    with transaction.atomic():
        set_status(email, Status.FAILED, needs_review=True)
        close(run, RunOutcome.FAILED, last_error=describe(exc))
        record_error(email, run, job_id, exc)
