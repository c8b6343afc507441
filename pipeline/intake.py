"""Intake: turn raw bytes into a stored email with one ``email.process`` job.

Used by ``manage.py import_mail`` and by any other producer.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction

import jobs
from pipeline import blobs, parsing
from pipeline.errors import UnreadableEmail
from pipeline.models import EmailMessage

PROCESS_JOB = "email.process"


@dataclass(frozen=True)
class Received:
    email: EmailMessage
    created: bool  # False: these exact bytes were already stored


def receive(raw: bytes, source: str = "") -> Received:
    """Store ``raw`` and queue its processing.

    The blob is written first (content-addressed, so an orphan from a rolled-back
    transaction is harmless and a re-import writes nothing). Then one short transaction
    creates the row and enqueues the job, so neither exists without the other; it locks
    only the new rows.
    """
    if not raw or not raw.strip():
        raise UnreadableEmail("The input is empty.")
    sha = blobs.digest(raw)
    existing = EmailMessage.objects.filter(sha256=sha).first()
    if existing is not None:
        return Received(existing, created=False)
    name = blobs.write(raw, sha)
    summary = parsing.summary(raw)  # the only parse at intake; processing reads these columns
    try:
        with transaction.atomic():
            email = EmailMessage.objects.create(
                blob_name=name,
                size=len(raw),
                sha256=sha,
                message_id=summary.message_id[:998],
                sender=summary.sender[:998],
                subject=summary.subject,
                source=source[:500],
            )
            enqueue_processing(email.pk)
    except IntegrityError:
        # The same bytes arrived through another producer at the same moment.
        existing = EmailMessage.objects.filter(sha256=sha).first()
        if existing is None:
            raise
        return Received(existing, created=False)
    return Received(email, created=True)


def enqueue_processing(email_id: int):
    """Queue ``email.process`` for one email; an active job for it is reused, not doubled."""
    return jobs.enqueue(PROCESS_JOB, {"email_id": email_id})
