"""The email index, both halves: the full-text index in the database (``pipeline.search``)
and the vectors in Qdrant (``pipeline.semantic``), written by the pipeline, completed by the
catch-up, rebuilt for a new embedding model, and forgotten when an email is deleted.

An email whose index could only be written in part (Qdrant or the embedding service could
not be reached, timed out or failed; the database refused the full text) is
``partially_indexed`` (seed 003): what was written stays, its labels are applied, the run
records what is missing, the error is in the error log and the job succeeds. Each sweep
queues ``index.complete``, which writes the missing parts of at most ``INDEX_CATCH_UP_BATCH``
such emails, oldest first, and stops at the first that still cannot be written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, transaction

from pipeline import runs, search, semantic, storable
from pipeline.errors import IndexingError, IndexRefused, VectorIndexUnavailable
from pipeline.models import Attachment, EmailMessage, IndexRecord, ParsedEmail, Status, VectorRecord

logger = logging.getLogger("pipeline.indexing")
Progress = Callable[[float, str], None]

FULL_TEXT = "full text"
VECTORS = "vectors"
# The statuses of emails that belong in the index (processed, not copies, not failed).
INDEXED_STATUSES = (Status.INDEXED, Status.LABELLED, Status.PARTIALLY_INDEXED)


def joined_text(body: str, attachments: Iterable[tuple[str, str]]) -> str:
    """The body and every converted attachment (name, text), as one text."""
    parts = [body, *(f"[{name}]\n{text}" for name, text in attachments if text)]
    return "\n\n".join(part for part in parts if part)


def indexed_text(email: EmailMessage, text: str) -> str:
    """What the full-text index holds of an email: subject, sender, then its text."""
    return f"{email.subject}\n{email.sender}\n{text}"


def meaning_text(email: EmailMessage, text: str) -> str:
    """What is embedded of an email: its subject and text (a sender's name says who wrote,
    not what about, and would make every email of one sender alike)."""
    return f"{email.subject}\n{text}"


def stored_text(email: EmailMessage) -> str:
    """The email's text as its job built it, from the artifacts it saved."""
    parsed = ParsedEmail.objects.filter(email=email).only("body_text").first()
    attachments = Attachment.objects.filter(email=email, converted=True).order_by("position")
    pairs = (
        (a.filename or a.content_type, a.text) for a in attachments.only("filename", "content_type", "text")
    )
    return joined_text(parsed.body_text if parsed else "", pairs)


@dataclass
class Indexed:
    missing: list[str] = field(default_factory=list)
    errors: list[IndexingError] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing

    def describe(self) -> str:
        return "; ".join(storable.text(str(exc)) for exc in self.errors)[:5000]


def index_email(
    email: EmailMessage, text: str, labels: list[str], *, full_text: bool = True, vectors: bool = True
) -> Indexed:
    """Write the asked-for parts of the email's index (those switched on). What could not be
    written is returned, not raised; ``IndexRefused`` (another try cannot help) is raised."""
    found = Indexed()
    if full_text and settings.SEARCH_INDEX:
        try:
            with transaction.atomic():
                search.index(email.pk, indexed_text(email, text))
        except IndexingError as exc:
            found.missing.append(FULL_TEXT)
            found.errors.append(exc)
    if vectors and settings.VECTOR_INDEX:
        try:
            semantic.write_vectors(email, meaning_text(email, text), labels)
        except VectorIndexUnavailable as exc:
            found.missing.append(VECTORS)
            found.errors.append(exc)
            # Its record went with the failed write: "no record" is "vectors missing".
            _forget_record(email)
    return found


def _forget_record(email: EmailMessage) -> None:
    try:
        VectorRecord.objects.filter(email=email).delete()
    except DatabaseError:
        logger.exception("Could not clear the vector record of email #%s.", email.pk)


# --- the catch-up ---------------------------------------------------------------------------------


@dataclass
class CatchUp:
    completed: int = 0
    still_partial: int = 0
    refused: int = 0
    stopped: str = ""  # why the run stopped early (the service is still unreachable)
    retry_after: float | None = None

    def __str__(self) -> str:
        text = f"{self.completed} partially indexed email(s) completed"
        if self.refused:
            text += f", {self.refused} refused for good"
        if self.stopped:
            text += f"; stopped: {self.stopped}"
        return text


def complete_partially_indexed(limit: int | None = None, job_id: int | None = None) -> CatchUp:
    """Write what is missing of the oldest partially indexed emails, at most ``limit``
    (``INDEX_CATCH_UP_BATCH``); stop at the first the index still cannot take."""
    result = CatchUp()
    waiting = EmailMessage.objects.filter(status=Status.PARTIALLY_INDEXED).order_by("id")
    current = semantic.collection()
    for email in waiting[: limit or settings.INDEX_CATCH_UP_BATCH]:
        need_text = not IndexRecord.objects.filter(email=email).exists()
        need_vectors = not VectorRecord.objects.filter(email=email, collection=current).exists()
        try:
            indexed = index_email(
                email, stored_text(email), list(email.labels or []), full_text=need_text, vectors=need_vectors
            )
        except IndexRefused as exc:
            _refused(email, job_id, exc)
            result.refused += 1
            result.stopped = str(exc)
            break
        if not indexed.complete:
            runs.record_error(email, None, job_id, indexed.errors[0])
            result.still_partial += 1
            result.stopped = indexed.describe()
            result.retry_after = getattr(indexed.errors[0], "retry_after", None)
            break
        # Only if nothing (a reprocess) moved it on meanwhile.
        EmailMessage.objects.filter(pk=email.pk, status=Status.PARTIALLY_INDEXED).update(
            status=Status.LABELLED
        )
        result.completed += 1
    return result


def _refused(email: EmailMessage, job_id: int | None, exc: IndexRefused) -> None:
    with transaction.atomic():
        runs.set_status(email, Status.FAILED, needs_review=True)
        runs.record_error(email, None, job_id, exc)


def rebuild_due() -> bool:
    """Whether emails are indexed under another model than the current one (the model was
    changed): their vectors must be written again, into the current model's collection."""
    return VectorRecord.objects.exclude(collection=semantic.collection()).exists()


# --- Re-index all ---------------------------------------------------------------------------------


def rebuild(since: datetime, progress: Progress, job_id: int | None = None) -> int:
    """Write the vectors of every indexed email whose vectors are not in the current
    collection or older than ``since``, oldest email first; returns how many. Stops with
    VectorIndexUnavailable (the job's retry goes on where it stopped: what was written is
    newer than ``since``). An email the service refuses fails for good, and the rest go on."""
    current = semantic.collection()
    stale = (
        EmailMessage.objects.filter(status__in=INDEXED_STATUSES)
        .exclude(vector_record__collection=current, vector_record__indexed_at__gte=since)
        .order_by("id")
    )
    total = stale.count()
    done = 0
    progress(0, f"0 of {total:,} emails")
    for email in stale.iterator(chunk_size=100):
        try:
            semantic.write_vectors(email, meaning_text(email, stored_text(email)), list(email.labels or []))
        except IndexRefused as exc:
            _refused(email, job_id, exc)
        done += 1
        progress(100 * done / max(total, 1), f"{done:,} of {total:,} emails")
    return done
