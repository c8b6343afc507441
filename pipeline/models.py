"""The email pipeline's tables: emails, their origins, runs, artifacts and the audit log.

Business status of an email (separate from the status of its ``email.process`` jobs, 003_…):

    received ──► parsed ──► classified ──► indexed ──────────► labelled
        │           │            │     └─► partially_indexed  (index unreachable; final,
        │           │            │                             labels are still applied)
        │           │            └── (search index switched off) ──► labelled
        │           └── (model calls off: the run stays open, "never classified";
        │                the sweeper re-adds the job when they are switched on)
        └─► duplicate   a copy of an email already recorded: linked to its origin, finished.

    any status ──► failed     a model error or an unexpected error; the job is retried
                              (an email the parser cannot take fails for good at once:
                              marked for review, its run closed, the reason in the log)
    failed ──► received       a retry or a reprocess starts again from the top

``needs_review`` is a flag, not a status: the sweeper sets it when a run was swept three
times and is still stalled (that run is then closed as failed).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Now

# The full-text column, whose type depends on the database (pipeline.search holds all that does).
from pipeline.search import PortableSearchVectorField


class Status(models.TextChoices):
    RECEIVED = "received"
    PARSED = "parsed"
    CLASSIFIED = "classified"
    INDEXED = "indexed"
    PARTIALLY_INDEXED = "partially_indexed"
    LABELLED = "labelled"
    DUPLICATE = "duplicate"
    FAILED = "failed"


class EmailMessage(models.Model):
    blob_name = models.CharField(max_length=300, help_text="Where the raw bytes live in blob storage.")
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(
        max_length=64, unique=True, help_text="Of the raw bytes; a re-import is found by it."
    )
    message_id = models.CharField(max_length=998, blank=True, default="")
    sender = models.CharField(max_length=998, blank=True, default="")
    subject = models.TextField(blank=True, default="")
    source = models.CharField(
        max_length=500, blank=True, default="", help_text="Where it came from (file, mailbox)."
    )
    received_at = models.DateTimeField(db_default=Now())
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RECEIVED)
    needs_review = models.BooleanField(default=False)
    origin = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="copies",
        help_text="The first recorded email this one is a copy of.",
    )
    labels = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            # The admin's status filter and the sweeper's look for stalled emails.
            models.Index(fields=["status", "id"], name="pipeline_email_status"),
            # The review filter: few rows are flagged.
            models.Index(fields=["id"], condition=models.Q(needs_review=True), name="pipeline_email_review"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.subject[:60] or '(no subject)'}"


class Origin(models.Model):
    """The first email recorded under an origin key; the unique key settles races."""

    key = models.CharField(max_length=300, unique=True, help_text="Normalised Message-ID, or a content hash.")
    email = models.OneToOneField(EmailMessage, on_delete=models.CASCADE, related_name="origin_record")
    recorded_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return self.key


class RunOutcome(models.TextChoices):
    OPEN = "open"
    LABELLED = "labelled"
    PARTIALLY_INDEXED = "partially_indexed"
    DUPLICATE = "duplicate"
    FAILED = "failed"


class PipelineRun(models.Model):
    """One pass of an email through the pipeline; at most one open run per email."""

    email = models.ForeignKey(EmailMessage, on_delete=models.CASCADE, related_name="runs")
    opened_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(
        db_default=Now(), help_text="Last step done; the 30-minute rule counts from it."
    )
    closed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=20, choices=RunOutcome.choices, default=RunOutcome.OPEN)
    sweep_count = models.PositiveSmallIntegerField(default=0, help_text="Times the sweeper re-added its job.")
    classified = models.BooleanField(
        default=False, help_text="Whether the email was ever classified in this run."
    )
    last_error = models.TextField(blank=True, default="")
    index_missing = models.CharField(
        max_length=40,
        blank=True,
        default="",
        help_text="The parts of the index this run could not write (full text, vectors).",
    )

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["email"], condition=models.Q(closed_at__isnull=True), name="pipeline_one_open_run"
            ),
        ]
        indexes = [
            # The sweeper: open runs only.
            models.Index(
                fields=["updated_at"], condition=models.Q(closed_at__isnull=True), name="pipeline_run_open"
            ),
        ]

    def __str__(self) -> str:
        return f"run #{self.pk} of email #{self.email_id} ({self.outcome})"

    @property
    def is_open(self) -> bool:
        return self.closed_at is None


class ParsedEmail(models.Model):
    """Artifact: the parsed headers, the text body and the parser's defects."""

    email = models.OneToOneField(EmailMessage, on_delete=models.CASCADE, related_name="parsed")
    headers = models.JSONField(default=list)
    body_text = models.TextField(blank=True, default="")
    defects = models.JSONField(default=list, blank=True)
    parsed_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return f"parsed email #{self.email_id}"


class Attachment(models.Model):
    """Artifact: one attachment, with its text when it could be converted."""

    email = models.ForeignKey(EmailMessage, on_delete=models.CASCADE, related_name="attachments")
    position = models.PositiveSmallIntegerField()
    filename = models.CharField(max_length=500, blank=True, default="")
    content_type = models.CharField(max_length=200)
    size = models.PositiveBigIntegerField()
    converted = models.BooleanField(default=False)
    text = models.TextField(blank=True, default="")
    note = models.CharField(max_length=500, blank=True, default="", help_text="Why it was not converted.")

    class Meta:
        ordering = ["email_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["email", "position"], name="pipeline_attachment_position")
        ]

    def __str__(self) -> str:
        return self.filename or self.content_type


class Classification(models.Model):
    """Artifact: the labels a model gave, which model, and its raw answer."""

    email = models.OneToOneField(EmailMessage, on_delete=models.CASCADE, related_name="classification")
    labels = models.JSONField(default=list)
    model = models.CharField(max_length=200)
    raw_response = models.TextField(blank=True, default="")
    classified_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return ", ".join(self.labels)


class IndexRecord(models.Model):
    """Artifact: what was put in the search index. On PostgreSQL ``vector`` is a tsvector
    under a GIN index (migration 0002); on MariaDB ``text`` has a FULLTEXT index (migration
    0004); elsewhere (the embedded SQLite demo) search is a plain-text match on ``text``."""

    email = models.OneToOneField(EmailMessage, on_delete=models.CASCADE, related_name="index_record")
    text = models.TextField(blank=True, default="")
    vector = PortableSearchVectorField(null=True, blank=True, editable=False)
    indexed_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return f"index record of email #{self.email_id}"


class VectorRecord(models.Model):
    """Artifact: the email's chunks are points in the vector index, in this collection (one
    per embedding model and dimension), embedded by this model. No record: its vectors are
    missing (never written, or the last write failed), or it is a copy (never embedded)."""

    email = models.OneToOneField(EmailMessage, on_delete=models.CASCADE, related_name="vector_record")
    collection = models.CharField(max_length=255)
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    chunks = models.PositiveIntegerField()
    indexed_at = models.DateTimeField()

    class Meta:
        verbose_name = "email index"
        verbose_name_plural = "email index"
        indexes = [
            # The index page's counts per collection, and the rebuild's walk by email.
            models.Index(fields=["collection", "indexed_at"], name="pipeline_vector_collection"),
        ]

    def __str__(self) -> str:
        return f"{self.chunks} chunks of email #{self.email_id} in {self.collection}"


class ErrorLogEntry(models.Model):
    """One entry of the audit log: an error a run met, with its class, email, run, job and
    text. A row, not an exception: the exceptions live in ``pipeline.errors``."""

    error_class = models.CharField(max_length=200)
    email = models.ForeignKey(EmailMessage, null=True, on_delete=models.CASCADE, related_name="errors")
    run = models.ForeignKey(
        PipelineRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="errors"
    )
    job_id = models.BigIntegerField(
        null=True, blank=True, help_text="The engine's job (kept if the job is pruned)."
    )
    occurred_at = models.DateTimeField(db_default=Now())
    text = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-id"]
        verbose_name = "error log entry"
        verbose_name_plural = "error log entries"

    def __str__(self) -> str:
        return f"{self.error_class} on email #{self.email_id}"


class ModelCallSwitch(models.Model):
    """The stored model-calls switch (one row), with who changed it and when."""

    enabled = models.BooleanField(default=True)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "model-calls switch"
        verbose_name_plural = "model-calls switch"

    def __str__(self) -> str:
        return f"Model calls {'on' if self.enabled else 'off'}"
