"""Failed tries: the backoff schedule on the row, the audit trail, permanent errors, and
the operator's cancel and retry."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import store, testing
from jobs.errors import InvalidTransition
from jobs.models import Job, JobAttempt, Status
from tests.support.job_states import claim_one, make_due

pytestmark = pytest.mark.django_db(transaction=True)


def test_fail__requeues_with_the_exact_backoff_and_keeps_the_error():
    job = store.enqueue("test.fail", {})
    for attempt, delay in [(1, 30), (2, 120)]:
        before = timezone.now()
        drained = testing.drain("default")
        after = timezone.now()
        assert [retried.pk for retried in drained.retried] == [job.pk] and drained.ran == 1
        job.refresh_from_db()
        assert job.status == Status.QUEUED
        assert before + timedelta(seconds=delay) <= job.run_at <= after + timedelta(seconds=delay)
        assert job.error == "RuntimeError: boom"
        assert job.attempts == attempt
        assert testing.drain("default").ran == 0  # not due before its backoff
        make_due(job.pk)

    assert [failed.pk for failed in testing.drain("default").failed] == [job.pk]
    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == (Status.FAILED, 3, "RuntimeError: boom")
    assert job.finished_at is not None

    tries = list(JobAttempt.objects.filter(job=job))
    assert [(t.attempt, t.outcome) for t in tries] == [(1, "queued"), (2, "queued"), (3, "failed")]
    for attempt in tries:
        assert (attempt.type, attempt.worker, attempt.error_class, attempt.error) == (
            "test.fail",
            testing.WORKER,
            "RuntimeError",
            "boom",
        )
        assert 'raise RuntimeError("boom")' in attempt.traceback
        assert attempt.failed_at is not None and attempt.started_at is not None


def test_fail__permanent_error_fails_at_once():
    job = testing.run_job(store.enqueue("test.fail", {"permanent": True}))
    assert (job.status, job.attempts) == (Status.FAILED, 1)
    assert job.error == "jobs.errors.PermanentError: This input can never work."
    [attempt] = JobAttempt.objects.filter(job=job)
    assert (attempt.error_class, attempt.outcome) == ("jobs.errors.PermanentError", "failed")


def test_fail__payload_that_does_not_fit_the_handler_fails_at_once():
    job = testing.run_job(store.enqueue("test.fail", {"unexpected": 1}))
    assert (job.status, job.attempts) == (Status.FAILED, 1)
    assert job.error.startswith("TypeError: ")


def test_fail__retried_job_runs_again_and_succeeds():
    job = store.enqueue("test.flaky", {"fail_times": 1})
    assert testing.run_job(job).status == Status.QUEUED
    make_due(job.pk)
    assert [done.pk for done in testing.drain("default").succeeded] == [job.pk]
    job.refresh_from_db()
    assert (job.status, job.attempts, job.error, job.progress) == (Status.SUCCEEDED, 2, "", 100)


# --- cancel and retry -----------------------------------------------------------------------


def _job_in(status: str) -> Job:
    job = store.enqueue("test.fail", {"permanent": True})
    if status == Status.QUEUED:
        return job
    if status == Status.CANCELLED:
        return store.cancel(job)
    if status == Status.FAILED:
        return testing.run_job(job)
    claimed = claim_one("w1", "test.fail")
    if status == Status.SUCCEEDED:
        store.complete("w1", [(claimed.id, claimed.attempt)])
    job.refresh_from_db()
    assert job.status == status
    return job


def test_cancel__a_queued_job():
    job = store.cancel(_job_in(Status.QUEUED).pk)
    job.refresh_from_db()
    assert (job.status, job.message) == (Status.CANCELLED, "Cancelled.")
    assert job.finished_at is not None
    assert store.claim("w1", ["default"], 1) == []


@pytest.mark.parametrize("status", [Status.RUNNING, Status.SUCCEEDED, Status.FAILED, Status.CANCELLED])
def test_cancel__refuses_anything_but_a_queued_job(status):
    job = _job_in(status)
    with pytest.raises(
        InvalidTransition, match=rf"Only a queued job can be cancelled; job #{job.pk} is {status}\."
    ):
        store.cancel(job)
    assert Job.objects.get(pk=job.pk).status == status


def test_retry__a_failed_job_gets_a_full_new_budget():
    job = _job_in(Status.FAILED)
    store.retry(job)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == (Status.QUEUED, 0, "")
    assert job.message == "Requeued by an administrator."
    assert job.locked_by is None and job.finished_at is None
    assert claim_one("w2", "test.fail").attempt == 1
    # The audit trail of the earlier tries stays.
    assert JobAttempt.objects.filter(job=job).count() == 1


def test_retry__the_audit_log_keeps_counting_tries_across_it():
    """Three tries, a Retry, one more try: the audit log says 1, 2, 3, 4, not 1, 2, 3, 1,
    while the job's own count (the budget, and the fence of every result) starts again."""
    job = store.enqueue("test.fail", {})
    for _ in range(3):
        testing.run_job(job)
    store.retry(job)
    job = testing.run_job(job)

    assert (job.status, job.attempts, job.earlier_attempts) == (Status.QUEUED, 1, 3)
    tries = JobAttempt.objects.filter(job=job).order_by("id")
    assert [(a.attempt, a.outcome) for a in tries] == [
        (1, Status.QUEUED),
        (2, Status.QUEUED),
        (3, Status.FAILED),
        (4, Status.QUEUED),
    ]


@pytest.mark.parametrize("status", [Status.QUEUED, Status.RUNNING, Status.SUCCEEDED, Status.CANCELLED])
def test_retry__refuses_anything_but_a_failed_job(status):
    job = _job_in(status)
    with pytest.raises(
        InvalidTransition, match=rf"Only a failed job can be retried; job #{job.pk} is {status}\."
    ):
        store.retry(job.pk)
    assert Job.objects.get(pk=job.pk).status == status


def test_retry__refuses_when_the_dedupe_key_is_taken_again():
    job = testing.run_job(store.enqueue("test.fail", {"permanent": True}, dedupe_key="email-1"))
    newer = store.enqueue("test.fail", {}, dedupe_key="email-1")
    with pytest.raises(InvalidTransition, match="dedupe key 'email-1' is already queued or running"):
        store.retry(job)
    assert Job.objects.get(pk=job.pk).status == Status.FAILED
    assert Job.objects.get(pk=newer.pk).status == Status.QUEUED
