"""What one ``email.process`` job does, as a plain function callable without the engine.

Load the email, read its raw bytes, record its origin first (a copy finishes there),
parse, convert attachments, classify when model calls are on, index, apply the labels.
The email is parsed once, after the origin: its Message-ID, sender and subject were read
at intake and are taken from its row, never parsed or written again here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError, transaction

from jobs import PermanentError, RetryLater
from pipeline import blobs, classify, indexing, origins, parsing, runs, storable, switch
from pipeline.errors import EmailMissing
from pipeline.models import (
    Attachment,
    Classification,
    EmailMessage,
    ParsedEmail,
    PipelineRun,
    RunOutcome,
    Status,
)

Progress = Callable[[float, str], None]
logger = logging.getLogger("pipeline.process")

DUPLICATE = "duplicate"
WAITING = "waiting for model calls"


def _quiet(percent: float, message: str = "") -> None:
    pass


def process_email(email_id: int, *, job_id: int | None = None, progress: Progress = _quiet) -> str:
    """Run the pipeline for one email; returns the outcome.

    Raises EmailMissing (permanent) for a missing row, UnprocessableEmail (permanent) for
    an email the parser cannot take (the email is failed and marked for review, its run
    closed), ModelCallError (retryable) for a failed model call (a rate limit is a
    RetryLater: the email keeps its status and waits), and re-raises anything
    unexpected after logging it, so the engine retries with backoff. An index that cannot be
    reached is not raised: the email is partially indexed. An index that refuses the email
    for good (IndexRefused: the embedding service's 4xx) fails it for good, as above.
    """
    email = EmailMessage.objects.filter(pk=email_id).first()
    if email is None:
        raise EmailMissing(f"Email #{email_id} does not exist.")
    run = runs.open_run(email)
    try:
        return _run(email, run, job_id, progress)
    except Exception as exc:
        try:
            if isinstance(exc, PermanentError):
                runs.fail_for_good(email, run, job_id, exc)
            elif isinstance(exc, RetryLater):
                runs.postpone(email, run, job_id, exc)
            else:
                runs.fail(email, run, job_id, exc)
        except DatabaseError:  # the database itself is down: the engine's retry will tell
            logger.exception("Could not record the failure of email #%s.", email_id)
        raise


def _run(email: EmailMessage, run: PipelineRun, job_id: int | None, progress: Progress) -> str:
    # Few, short transactions (each commit costs an fsync): origin, parsed artifacts, and
    # the result. None is open during the model call, which may take seconds.
    if email.status == Status.FAILED:
        runs.set_status(email, Status.RECEIVED)  # a retry starts again from the top
    progress(5, "Reading the raw email")
    raw = blobs.read(email.blob_name)

    progress(15, "Recording the origin")
    origin_id = origins.record(email, email.message_id or parsing.content_key(raw))
    if origin_id != email.pk:
        with transaction.atomic():
            runs.set_status(email, Status.DUPLICATE, origin_id=origin_id)
            runs.close(run, RunOutcome.DUPLICATE)
        progress(100, f"Duplicate of email #{origin_id}")
        return DUPLICATE

    progress(25, "Parsing and converting attachments")
    parsed = parsing.parse(raw)
    del raw  # a 20 MB email should not stay in memory for the model call
    _save_parsed(email, run, parsed)

    if not switch.model_calls_enabled():
        progress(100, "Model calls are off: waiting for the sweeper")
        return WAITING  # the run stays open and never classified: the sweeper re-adds it

    progress(55, "Classifying")
    text = document_text(parsed)
    result = classify.classify(email.subject, text)

    # Three short commits, so each business status is real: a run that fails after this
    # point stays "classified", which the sweeper's 30-minute rule depends on.
    with transaction.atomic():
        Classification.objects.filter(email=email).delete()
        Classification.objects.create(
            email=email,
            labels=result.labels,
            model=result.model[:200],
            raw_response=storable.text(result.raw_response),  # a model's answer is input too
        )
        runs.set_status(email, Status.CLASSIFIED)
        runs.touch(run, classified=True)

    progress(75, "Indexing")
    indexed = indexing.index_email(email, text, result.labels)
    outcome = RunOutcome.LABELLED
    if indexed.complete:
        runs.set_status(email, Status.INDEXED)
    else:
        # Seed 003: the index could be written only in part. What was written stays, the
        # labels are applied, the run says what is missing, and the job does not fail.
        for exc in indexed.errors:
            runs.record_error(email, run, job_id, exc)
        runs.set_status(email, Status.PARTIALLY_INDEXED)
        run.last_error = indexed.describe()
        runs.touch(run, index_missing=", ".join(indexed.missing))
        outcome = RunOutcome.PARTIALLY_INDEXED

    progress(90, "Applying labels")
    final = Status.LABELLED if outcome == RunOutcome.LABELLED else Status.PARTIALLY_INDEXED
    with transaction.atomic():
        runs.set_status(email, final, labels=result.labels, needs_review=False)
        runs.close(run, outcome, last_error=run.last_error)
    progress(100, f"Labelled {', '.join(result.labels)}")
    return str(outcome)


def document_text(parsed: parsing.Parsed) -> str:
    """The body and every converted attachment, as one text for the model and the index."""
    return indexing.joined_text(
        parsed.body_text,
        ((part.filename or part.content_type, part.text or "") for part in parsed.attachments),
    )


def _save_parsed(email: EmailMessage, run: PipelineRun, parsed: parsing.Parsed) -> None:
    # One transaction for the email's artifacts, so a retry replaces them whole.
    with transaction.atomic():
        runs.touch(run)
        ParsedEmail.objects.filter(email=email).delete()
        ParsedEmail.objects.create(
            email=email,
            headers=[list(item) for item in parsed.headers],
            body_text=parsed.body_text,
            defects=parsed.defects,
        )
        Attachment.objects.filter(email=email).delete()
        Attachment.objects.bulk_create(
            Attachment(
                email=email,
                position=part.position,
                filename=part.filename,
                content_type=part.content_type,
                size=part.size,
                converted=part.text is not None,
                text=part.text or "",
                note=part.note,
            )
            for part in parsed.attachments
        )
        runs.set_status(email, Status.PARSED)
