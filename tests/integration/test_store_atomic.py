"""Atomic jobs run in this process as a child would run them (same code, no fork): the
handler's writes and the job's completion commit together, a failure rolls both back, and
a try that the reaper took back commits nothing."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.transaction import TransactionManagementError

from jobs import store
from jobs.errors import FencedOff
from jobs.models import Job, JobAttempt, Status
from jobs.worker import child
from jobs.worker.outcome import SUCCEEDED, Outcome
from tests.jobs_app.models import Execution
from tests.support.job_states import claim_one, make_due

pytestmark = pytest.mark.django_db(transaction=True)


def _run(claimed: store.ClaimedJob, worker: str, report=None) -> Outcome:
    return child.run(
        claimed.id,
        claimed.type,
        claimed.payload,
        claimed.attempt,
        claimed.max_attempts,
        worker,
        report or (lambda percent, message: None),
    )


def _rows(job_id: int) -> list[int]:
    """The tries whose Execution row is committed."""
    return list(Execution.objects.filter(job_id=job_id).order_by("id").values_list("attempt", flat=True))


def test_atomic_job__commits_its_writes_and_its_completion_together():
    job = store.enqueue("test.write_atomic", {})
    claimed = claim_one("w1", "test.write_atomic")

    assert _run(claimed, "w1") == Outcome.settled(committed=True)

    job.refresh_from_db()
    assert (job.status, job.progress, job.attempts, job.locked_by) == (Status.SUCCEEDED, 100, 1, "w1")
    assert job.finished_at is not None
    assert _rows(job.pk) == [1]
    # Already written: the supervisor's acknowledgement would find nothing left to do.
    assert store.complete("w1", [(claimed.id, claimed.attempt)]) == []


def test_plain_job__commits_its_writes_before_the_job_is_acknowledged():
    """The window atomic jobs close: the row is there while the job is still running."""
    job = store.enqueue("test.write", {})
    claimed = claim_one("w1", "test.write")

    assert _run(claimed, "w1") is SUCCEEDED

    assert _rows(job.pk) == [1]
    assert Job.objects.get(pk=job.pk).status == Status.RUNNING  # until the supervisor acknowledges


def test_atomic_job__a_failure_rolls_its_writes_back_and_the_try_is_recorded():
    job = store.enqueue("test.write_atomic", {"fail": "boom"})
    claimed = claim_one("w1", "test.write_atomic")

    failure = _run(claimed, "w1").failure

    assert isinstance(failure, store.Failure)
    assert (failure.error_class, failure.message, failure.retryable) == ("RuntimeError", "boom", True)
    assert _rows(job.pk) == []
    assert store.fail("w1", claimed.id, claimed.attempt, failure) == Status.QUEUED
    job.refresh_from_db()
    assert (job.status, job.error) == (Status.QUEUED, "RuntimeError: boom")
    assert list(JobAttempt.objects.filter(job=job).values_list("attempt", "error_class")) == [
        (1, "RuntimeError")
    ]


def test_atomic_job__a_payload_that_does_not_fit_fails_for_good():
    store.enqueue("test.write_atomic", {"no_such_field": 1})
    claimed = claim_one("w1", "test.write_atomic")

    failure = _run(claimed, "w1").failure

    assert isinstance(failure, store.Failure)
    assert (failure.error_class, failure.retryable) == ("TypeError", False)


def test_atomic_job__a_try_taken_back_and_run_again_commits_once():
    """The reaper took try 1 back and try 2 ran it to the end; try 1, finishing late, is
    refused by the fence and its writes are rolled back."""
    job = store.enqueue("test.write_atomic", {})
    first = claim_one("w1", "test.write_atomic")
    assert store.recover_worker("w1").requeued == 1  # as the reaper does for a silent worker
    make_due(job.pk)  # the try's backoff has passed
    second = claim_one("w2", "test.write_atomic")
    assert second.attempt == 2

    assert _run(second, "w2") == Outcome.settled(committed=True)
    assert _run(first, "w1") == Outcome.settled(committed=False)

    job.refresh_from_db()
    assert (job.status, job.attempts, job.locked_by) == (Status.SUCCEEDED, 2, "w2")
    assert _rows(job.pk) == [2]


def test_atomic_job__its_progress_goes_to_the_reporter_not_into_its_transaction():
    job = store.enqueue("test.write_atomic", {"progress": True})
    claimed = claim_one("w1", "test.write_atomic")
    reported: list[tuple[int, str]] = []

    assert _run(claimed, "w1", report=lambda percent, message: reported.append((percent, message))) == (
        Outcome.settled(committed=True)
    )
    assert reported == [(50, "row written")]
    job.refresh_from_db()
    assert job.progress_message != "row written"  # the supervisor writes it, not the handler


def test_complete_in_transaction__needs_the_handlers_transaction():
    store.enqueue("test.write_atomic", {})
    claimed = claim_one("w1", "test.write_atomic")

    with pytest.raises(TransactionManagementError):
        store.complete_in_transaction("w1", claimed.id, claimed.attempt)
    with pytest.raises(FencedOff), transaction.atomic():
        store.complete_in_transaction("w1", claimed.id, claimed.attempt + 1)
    assert Job.objects.get(pk=claimed.id).status == Status.RUNNING
