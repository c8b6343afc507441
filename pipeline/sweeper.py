"""The email sweeper (000_…, word for word).

Every five minutes, and at once when model calls are switched on, it re-adds jobs for
stored emails that have no pipeline run and, with model calls on, for those whose run is
open with no job on the queue: at once when the email was never classified, after 30
minutes when it was. It does so at most three times per run. Jobs are deduplicated by the
email's id, so a re-added job cannot create a duplicate, and an email waiting in the queue
is never counted as stalled. A run swept three times that is still stalled is taken off
the queue: the email is marked for review and the run is failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Now
from django.utils import timezone

import jobs
from pipeline import job_types, switch
from pipeline.intake import enqueue_processing
from pipeline.models import EmailMessage, PipelineRun, RunOutcome

STALE_AFTER = timedelta(minutes=30)
MAX_SWEEPS = 3
BATCH = 1000
REVIEW_REASON = f"Swept {MAX_SWEEPS} times and still stalled: taken off the queue for review."


@dataclass
class SweepResult:
    without_run: int = 0
    never_classified: int = 0
    classified: int = 0
    marked_for_review: int = 0

    def __str__(self) -> str:
        return (
            f"{self.without_run} without a run, {self.never_classified} never classified, "
            f"{self.classified} classified re-added; {self.marked_for_review} marked for review"
        )


def _active_job(email_ref: str) -> Exists:
    """An ``email.process`` job of this email is queued (waiting, or backing off) or running."""
    return jobs.has_active_job(job_types.PROCESS_EMAIL, email_id=OuterRef(email_ref))


def sweep(now: datetime | None = None) -> SweepResult:
    """Run the sweep once. Safe to run twice at once: each row is handled in its own short
    transaction under a row lock taken with SKIP LOCKED, and re-checked once locked."""
    now = now or timezone.now()
    result = SweepResult()
    without_run = EmailMessage.objects.filter(~Exists(PipelineRun.objects.filter(email=OuterRef("pk"))))
    for email_id in without_run.filter(~_active_job("pk")).values_list("pk", flat=True)[:BATCH]:
        if _readd_without_run(email_id):
            result.without_run += 1
    if not switch.model_calls_enabled():
        return result
    stalled = (
        PipelineRun.objects.filter(closed_at__isnull=True)
        .filter(Q(classified=False) | Q(updated_at__lte=now - STALE_AFTER))
        .filter(~_active_job("email_id"))
    )
    for run_id in stalled.order_by("id").values_list("pk", flat=True)[:BATCH]:
        outcome = _readd_stalled(run_id, now)
        if outcome == "review":
            result.marked_for_review += 1
        elif outcome == "never_classified":
            result.never_classified += 1
        elif outcome == "classified":
            result.classified += 1
    return result


def _readd_without_run(email_id: int) -> bool:
    with transaction.atomic():
        # Locks the email row so a second sweeper skips it; held for two inserts.
        email = EmailMessage.objects.select_for_update(skip_locked=True).filter(pk=email_id).first()
        if email is None or email.runs.exists() or _has_active_job(email_id):
            return False
        try:
            with transaction.atomic():
                PipelineRun.objects.create(email=email, sweep_count=1)
        except IntegrityError:
            return False  # a job opened its run a moment ago
        enqueue_processing(email_id)
    return True


def _readd_stalled(run_id: int, now: datetime) -> str:
    with transaction.atomic():
        # Locks the run row; a concurrent sweeper skips it, and we re-check once locked.
        run = (
            PipelineRun.objects.select_for_update(skip_locked=True)
            .filter(pk=run_id, closed_at__isnull=True)
            .first()
        )
        if run is None or _has_active_job(run.email_id):
            return ""
        if run.classified and run.updated_at > now - STALE_AFTER:
            return ""
        if run.sweep_count >= MAX_SWEEPS:
            _take_off_queue(run)
            return "review"
        PipelineRun.objects.filter(pk=run.pk).update(sweep_count=run.sweep_count + 1)
        enqueue_processing(run.email_id)
        return "classified" if run.classified else "never_classified"


def _has_active_job(email_id: int) -> bool:
    return jobs.active_job(job_types.PROCESS_EMAIL, email_id=email_id) is not None


def _take_off_queue(run: PipelineRun) -> None:
    jobs.cancel_if_queued(job_types.PROCESS_EMAIL, email_id=run.email_id)
    PipelineRun.objects.filter(pk=run.pk).update(
        outcome=RunOutcome.FAILED, closed_at=Now(), updated_at=Now(), last_error=REVIEW_REASON
    )
    EmailMessage.objects.filter(pk=run.email_id).update(needs_review=True)
