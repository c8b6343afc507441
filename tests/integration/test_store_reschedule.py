"""``RetryLater``: a job that asks to run later goes back to the queue for that time without
using an attempt, its reason shown as its message; the write is fenced like a completion."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

import jobs
from jobs import store, testing
from jobs.models import Job, JobAttempt, Status
from tests.support.job_states import claim_one, make_due

pytestmark = pytest.mark.django_db(transaction=True)


def test_reschedule__queues_the_job_for_its_time_and_gives_its_attempt_back(tmp_path):
    job = store.enqueue("test.rate_limited", {"path": str(tmp_path / "log"), "waits": 1, "delay": 600})
    asked = timezone.now()

    job = testing.run_job(job)  # the handler raises RetryLater(delay=600), as in a worker

    assert (job.status, job.attempts, job.locked_by) == (Status.QUEUED, 0, None)
    assert asked + timedelta(seconds=600) <= job.run_at <= timezone.now() + timedelta(seconds=600)
    assert job.message == "Rate limited (1/1)."
    assert job.error == ""  # not a failure
    assert store.claim("w1", ["default"], 1) == []  # not before its time
    attempt = JobAttempt.objects.get(job=job)
    assert (attempt.outcome, attempt.error_class, attempt.error) == (
        "postponed",
        "jobs.RetryLater",
        "Rate limited (1/1).",
    )
    make_due(job.pk)
    assert claim_one("w1", "test.rate_limited").attempt == 1  # the same, first attempt


def test_reschedule__a_late_result_of_a_job_taken_back_is_dropped():
    job = store.enqueue("test.noop", {})
    claimed = claim_one("w1")
    store.recover_worker("w1")  # the reaper took it back
    assert not store.reschedule("w1", claimed.id, claimed.attempt, timezone.now(), "late")
    job.refresh_from_db()
    assert job.message == "Requeued after a worker restart."


def test_retry_later__takes_a_time_or_a_delay():
    at = timezone.now() + timedelta(minutes=5)
    assert jobs.RetryLater("wait", at=at).at == at
    assert jobs.RetryLater(delay=60).at > timezone.now() + timedelta(seconds=59)
    for wrong in [{}, {"at": at, "delay": 1}, {"at": at.replace(tzinfo=None)}]:
        with pytest.raises(ValueError):
            jobs.RetryLater("wait", **wrong)
    assert Job.objects.count() == 0


def test_reschedule__a_wait_of_a_century_is_capped_at_the_engine_setting(settings):
    settings.JOBS_MAX_RETRY_LATER_SECONDS = 3600
    job = store.enqueue("test.noop", {})
    claimed = claim_one("w1")
    century = jobs.RetryLater("Retry in 3e9 seconds.", delay=3e9)
    assert century.at > timezone.now() + timedelta(days=30_000)  # what the handler asked for

    before = timezone.now()
    assert store.reschedule("w1", claimed.id, claimed.attempt, century.at, century.reason)

    job.refresh_from_db()
    assert job.status == Status.QUEUED
    assert before + timedelta(seconds=3600) <= job.run_at <= timezone.now() + timedelta(seconds=3600)


def test_retry_later__a_delay_no_datetime_holds_is_still_a_wait():
    for delay in [1e300, float("inf"), 3e9]:
        assert jobs.RetryLater(delay=delay).at > timezone.now() + timedelta(days=365)
    for delay in [float("nan"), -5]:
        assert jobs.RetryLater(delay=delay).at <= timezone.now()
