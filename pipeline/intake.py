"""Intake: turn raw bytes into a stored email with one ``email.process`` job.

Used by ``manage.py import_mail`` and by any other producer.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import DataError, IntegrityError, transaction

import jobs
from pipeline import blobs, job_types, parsing, storable
from pipeline.errors import EmailTooLarge, UnreadableEmail
from pipeline.models import EmailMessage


@dataclass(frozen=True)
class Received:
    email: EmailMessage
    created: bool  # False: these exact bytes were already stored


def receive(raw: bytes, source: str = "") -> Received:
    """Store ``raw`` and queue its processing.

    Raises UnreadableEmail for empty input or an email that cannot be stored, and
    EmailTooLarge (one of those) above ``PIPELINE_MAX_EMAIL_BYTES``. The headers are read
    and made storable first; then the blob is written (content-addressed, so a re-import
    writes nothing); then one short transaction creates the row and enqueues the job, so
    neither exists without the other; it locks only the new rows. A blob left behind when
    the database goes away mid-way is harmless: nothing lists blobs, and the next import of
    the same bytes finds it under the same name and stores its row.
    """
    if len(raw) > settings.PIPELINE_MAX_EMAIL_BYTES:
        raise EmailTooLarge(too_large_message(len(raw)))
    if not raw or not raw.strip():
        raise UnreadableEmail("The input is empty.")
    sha = blobs.digest(raw)
    existing = EmailMessage.objects.filter(sha256=sha).first()
    if existing is not None:
        return Received(existing, created=False)
    summary = parsing.summary(raw)  # the only parse at intake; processing reads these columns
    name = blobs.write(raw, sha)
    try:
        with transaction.atomic():
            email = EmailMessage.objects.create(
                blob_name=name,
                size=len(raw),
                sha256=sha,
                message_id=summary.message_id[:998],
                sender=summary.sender[:998],
                subject=summary.subject,
                source=storable.text(source)[:500],
            )
            enqueue_processing(email.pk)
    except IntegrityError:
        # The same bytes arrived through another producer at the same moment.
        existing = EmailMessage.objects.filter(sha256=sha).first()
        if existing is None:
            raise
        return Received(existing, created=False)
    except (DataError, UnicodeError) as exc:
        # A value the database refuses. The same bytes would be refused again, so no other
        # producer can be storing them: the blob is removed with nothing pointing at it.
        blobs.delete(name)
        raise UnreadableEmail(f"The email cannot be stored: {storable.text(str(exc))}") from None
    return Received(email, created=True)


def too_large_message(size: int) -> str:
    limit = settings.PIPELINE_MAX_EMAIL_BYTES
    return f"{size:,} bytes, over the limit of {limit:,} (PIPELINE_MAX_EMAIL_BYTES)."


def enqueue_processing(email_id: int) -> jobs.Job:
    """Queue ``email.process`` for one email; an active job for it is reused, not doubled."""
    return jobs.enqueue(job_types.PROCESS_EMAIL, {"email_id": email_id})


def reprocess(email: EmailMessage) -> jobs.Job:
    """An operator's Reprocess: the email starts again from the top, its review flag
    cleared, with one ``email.process`` job (the queued one, if there is one)."""
    EmailMessage.objects.filter(pk=email.pk).update(needs_review=False)
    email.needs_review = False
    return enqueue_processing(email.pk)
