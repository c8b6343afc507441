"""Every sweeper rule of 000_…, with the clock moved (``now=``) rather than waited for."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import jobs_for
from jobs.models import Job
from jobs.models import Status as JobStatus
from jobs.timers import run_timer
from pipeline import intake, process, sweeper, switch
from pipeline.models import EmailMessage, PipelineRun, RunOutcome
from pipeline.tasks import sweep_emails_now
from tests.pipeline import corpus
from tests.support.concurrency import run_at_once

pytestmark = pytest.mark.django_db


def _active_jobs(email: EmailMessage):
    return jobs_for("email.process", email_id=email.pk).filter(status__in=["queued", "running"])


def _finish_jobs(email: EmailMessage, status: str = JobStatus.FAILED) -> None:
    """The job ran out of tries (or was lost): nothing of this email is on the queue."""
    _active_jobs(email).update(status=status, finished_at=timezone.now())


def _stalled_run(raw: bytes, *, classified: bool, minutes_ago: float = 0, sweeps: int = 0) -> PipelineRun:
    email = intake.receive(raw).email
    _finish_jobs(email)
    run = PipelineRun.objects.create(email=email, classified=classified, sweep_count=sweeps)
    PipelineRun.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(minutes=minutes_ago))
    run.refresh_from_db()
    return run


def test_sweep__readds_a_stored_email_with_no_run():
    email = intake.receive(corpus.plain()).email
    _finish_jobs(email, JobStatus.CANCELLED)
    result = sweeper.sweep()
    assert result.without_run == 1
    assert _active_jobs(email).count() == 1
    assert email.runs.get().sweep_count == 1


def test_sweep__an_email_waiting_in_the_queue_is_never_stalled():
    email = intake.receive(corpus.plain()).email  # its job is queued
    run = _stalled_run(corpus.latin1(), classified=False)
    jobs_for("email.process", email_id=run.email_id).update(status="queued", finished_at=None)
    assert str(sweeper.sweep(now=timezone.now() + timedelta(hours=2))).startswith("0 without a run, 0 never")
    assert not email.runs.exists()
    run.refresh_from_db()
    assert run.sweep_count == 0
    assert Job.objects.filter(type="email.process").count() == 2


def test_sweep__a_never_classified_run_is_readded_at_once():
    run = _stalled_run(corpus.plain(), classified=False)
    assert sweeper.sweep().never_classified == 1
    run.refresh_from_db()
    assert run.sweep_count == 1 and _active_jobs(run.email).count() == 1


def test_sweep__a_classified_run_waits_30_minutes():
    run = _stalled_run(corpus.plain(), classified=True, minutes_ago=10)
    now = timezone.now()
    assert sweeper.sweep(now=now).classified == 0
    assert sweeper.sweep(now=now + timedelta(minutes=19)).classified == 0
    assert not _active_jobs(run.email).exists()
    assert sweeper.sweep(now=now + timedelta(minutes=21)).classified == 1
    run.refresh_from_db()
    assert run.sweep_count == 1 and _active_jobs(run.email).count() == 1


def test_sweep__with_model_calls_off_only_emails_without_a_run_are_readded():
    switch.set_model_calls(False)
    run = _stalled_run(corpus.plain(), classified=False, minutes_ago=60)
    lost = intake.receive(corpus.latin1()).email
    _finish_jobs(lost)
    result = sweeper.sweep()
    assert (result.without_run, result.never_classified, result.classified) == (1, 0, 0)
    assert not _active_jobs(run.email).exists() and _active_jobs(lost).count() == 1


def test_sweep__three_sweeps_then_review_and_the_run_fails():
    run = _stalled_run(corpus.plain(), classified=True)
    now = timezone.now()
    for round_number in (1, 2, 3):
        now += timedelta(minutes=31)
        assert sweeper.sweep(now=now).classified == 1
        assert _active_jobs(run.email).count() == 1
        _finish_jobs(run.email)  # the re-added job stalls again
        run.refresh_from_db()
        assert run.sweep_count == round_number and run.is_open
    now += timedelta(minutes=31)
    assert sweeper.sweep(now=now).marked_for_review == 1
    run.refresh_from_db()
    assert run.outcome == RunOutcome.FAILED and run.closed_at is not None
    assert run.last_error == sweeper.REVIEW_REASON
    email = EmailMessage.objects.get(pk=run.email_id)
    assert email.needs_review
    assert not _active_jobs(email).exists()
    # A closed run is never swept again.
    assert str(sweeper.sweep(now=now + timedelta(hours=1))) == str(sweeper.SweepResult())


def test_sweep__a_readded_job_processes_the_email_to_the_end():
    switch.set_model_calls(False)
    email = intake.receive(corpus.plain()).email
    process.process_email(email.pk)  # waits for model calls: run open, never classified
    _finish_jobs(email, JobStatus.SUCCEEDED)
    switch.set_model_calls(True)
    sweep_job = Job.objects.get(type="email.sweep")
    assert sweep_job.status == JobStatus.QUEUED
    sweep_emails_now(None)  # what the queued sweep job runs
    job = _active_jobs(email).get()
    process.process_email(job.payload["email_id"])
    email.refresh_from_db()
    assert email.status == "labelled" and email.runs.get().sweep_count == 1


def test_sweep__is_a_step_of_manage_py_sweep():
    run = _stalled_run(corpus.plain(), classified=False)
    results = run_timer("sweep")
    assert results["pipeline.tasks.sweep_emails"].startswith("0 without a run, 1 never classified")
    assert _active_jobs(run.email).count() == 1


@pytest.mark.django_db(transaction=True)
def test_sweep__twice_at_once_adds_no_duplicate_jobs():
    runs = [
        _stalled_run(corpus.plain(f"Mail {n}", f"<s{n}@example.com>"), classified=False) for n in range(30)
    ]
    lost = [intake.receive(corpus.plain(f"Lost {n}", f"<l{n}@example.com>")).email for n in range(10)]
    for email in lost:
        _finish_jobs(email)
    results = run_at_once(sweeper.sweep, sweeper.sweep)
    assert sum(result.never_classified for result in results) == 30
    assert sum(result.without_run for result in results) == 10
    for run in runs:
        run.refresh_from_db()
        assert run.sweep_count == 1
        assert _active_jobs(run.email).count() == 1
    for email in lost:
        assert email.runs.count() == 1 and _active_jobs(email).count() == 1
