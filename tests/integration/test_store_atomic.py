"""Atomic jobs run in this process through ``jobs.testing`` (the child's code, no fork): the
handler's writes and the job's completion commit together, a failure rolls both back, a
try that the reaper took back commits nothing, and the handler's progress is written apart
from its transaction. Real workers, killed and timed out: tests/acceptance/test_atomic_jobs.py."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.transaction import TransactionManagementError

from jobs import store, testing
from jobs.errors import FencedOff
from jobs.models import Job, JobAttempt, Status
from tests.jobs_app.models import Execution
from tests.support.job_states import claim_one

pytestmark = pytest.mark.django_db(transaction=True)


def _rows(job_id: int) -> list[int]:
    """The tries whose Execution row is committed, in the order they were written."""
    return list(Execution.objects.filter(job_id=job_id).order_by("id").values_list("attempt", flat=True))


def test_atomic_job__commits_its_writes_and_its_completion_together():
    job = testing.run_job(store.enqueue("test.write_atomic", {}))

    assert (job.status, job.progress, job.attempts, job.locked_by) == (
        Status.SUCCEEDED,
        100,
        1,
        testing.WORKER,
    )
    assert job.finished_at is not None
    assert _rows(job.pk) == [1]


@pytest.mark.parametrize(
    ("type_name", "tries_with_a_row"),
    [("test.write_atomic", [2]), ("test.write", [2, 1])],
    ids=["atomic-rolls-the-late-try-back", "plain-commits-before-it-is-acknowledged"],
)
def test_a_try_taken_back_and_run_again__the_late_one_is_fenced_off_and_its_writes_stand_unless_atomic(
    type_name, tries_with_a_row
):
    """The reaper took try 1 back and try 2 ran it to the end; try 1, finishing late, is
    refused by the fence. The atomic job's late writes roll back with its completion. The
    plain job's were committed on their own, before the acknowledgement that the fence
    refuses (the window atomic jobs close), so they stand."""
    job = store.enqueue(type_name, {})
    first = claim_one("w1", type_name)
    assert store.recover_worker("w1").requeued == 1  # as the reaper does for a silent worker

    assert testing.run_job(job).attempts == 2
    late = testing.run_claimed(first, "w1")

    assert (late.status, late.attempts, late.locked_by) == (Status.SUCCEEDED, 2, testing.WORKER)
    assert _rows(job.pk) == tries_with_a_row


def test_atomic_job__a_failure_rolls_its_writes_back_and_the_try_is_recorded():
    job = testing.run_job(store.enqueue("test.write_atomic", {"fail": "boom"}))

    assert (job.status, job.error) == (Status.QUEUED, "RuntimeError: boom")  # retryable: queued again
    assert _rows(job.pk) == []
    assert list(JobAttempt.objects.filter(job=job).values_list("attempt", "error_class")) == [
        (1, "RuntimeError")
    ]


def test_atomic_job__a_payload_that_does_not_fit_fails_for_good():
    job = testing.run_job(store.enqueue("test.write_atomic", {"no_such_field": 1}))

    assert (job.status, job.attempts, job.max_attempts) == (Status.FAILED, 1, 10)
    assert job.error.startswith("TypeError: ")
    assert _rows(job.pk) == []


def test_atomic_job__its_progress_goes_to_the_reporter_not_into_its_transaction():
    """The handler's report is written apart from its transaction (by the supervisor in a
    worker, by ``jobs.testing`` once the handler returns): a failed try's report stays on
    the row when its writes roll back, and a successful try commits none with its writes
    (the report, written after, finds the try settled)."""
    failed = testing.run_job(store.enqueue("test.write_atomic", {"progress": True, "fail": "boom"}))
    done = testing.run_job(store.enqueue("test.write_atomic", {"progress": True}))

    assert (failed.status, failed.progress, failed.progress_message) == (Status.QUEUED, 50, "row written")
    assert _rows(failed.pk) == []
    assert (done.status, done.progress, done.progress_message) == (Status.SUCCEEDED, 100, "")
    assert _rows(done.pk) == [1]


def test_complete_in_transaction__needs_the_handlers_transaction():
    store.enqueue("test.write_atomic", {})
    claimed = claim_one("w1", "test.write_atomic")

    with pytest.raises(TransactionManagementError):
        store.complete_in_transaction("w1", claimed.id, claimed.attempt)
    with pytest.raises(FencedOff), transaction.atomic():
        store.complete_in_transaction("w1", claimed.id, claimed.attempt + 1)
    assert Job.objects.get(pk=claimed.id).status == Status.RUNNING
