"""``jobs.testing``: what a project's tests use instead of a worker process. Enqueued jobs
are asserted by type, payload items, queue and count; ``run_job`` runs a job through the
worker's handler path and records its outcome as the supervisor does (``run_claimed``: a
try the test claimed, ending late); ``drain`` runs the due jobs of a queue in this process."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import TestCase
from django.utils import timezone

import jobs
from jobs import store, testing
from jobs.models import Job, JobAttempt, Status
from tests.jobs_app import tasks as test_jobs
from tests.jobs_app.models import Execution
from tests.tasks_backend import tasks as test_tasks

pytestmark = pytest.mark.django_db


# --- asserting what was enqueued ------------------------------------------------------------


def test_assert_enqueued__matches_type_payload_items_queue_and_count():
    jobs.enqueue("test.keyed", {"thing_id": 1, "note": "a"})
    jobs.enqueue("test.keyed", {"thing_id": 2, "note": "a"})
    jobs.enqueue("test.ai", {"seconds": 0})

    assert [job.payload["thing_id"] for job in testing.assert_enqueued("test.keyed", count=2)] == [1, 2]
    testing.assert_enqueued(test_jobs.keyed, payload={"thing_id": 2})  # the declaration names its type
    testing.assert_enqueued("test.keyed", payload={"note": "a"}, queue="default", count=2)
    testing.assert_enqueued("test.ai", queue="ai", count=1)
    testing.assert_not_enqueued("test.keyed", payload={"thing_id": 3})
    testing.assert_not_enqueued("test.ai", queue="default")


@pytest.mark.parametrize(
    "check, message",
    [
        (
            lambda: testing.assert_enqueued("test.keyed", payload={"thing_id": 3}),
            "Expected at least one queued test.keyed job with payload items {'thing_id': 3}, found 0.",
        ),
        (
            lambda: testing.assert_enqueued("test.keyed", count=1),
            "Expected exactly 1 queued test.keyed job, found 2.",
        ),
        (
            lambda: testing.assert_enqueued("test.keyed", queue="ai"),
            "Expected at least one queued test.keyed job in queue 'ai', found 0.",
        ),
        (
            lambda: testing.assert_not_enqueued("test.keyed", payload={"thing_id": 1}),
            "Expected no queued test.keyed job with payload items {'thing_id': 1}, found 1.",
        ),
    ],
)
def test_assert_enqueued__fails_naming_what_was_expected_and_what_is_queued(check, message):
    jobs.enqueue("test.keyed", {"thing_id": 1})
    jobs.enqueue("test.keyed", {"thing_id": 2})
    with pytest.raises(AssertionError) as raised:
        check()
    assert str(raised.value).startswith(message)
    assert "payload={'thing_id': 1}" in str(raised.value)  # the queued jobs are listed


def test_assert_enqueued__counts_only_queued_jobs():
    job = jobs.enqueue("test.noop", {})
    testing.run_job(job)
    testing.assert_not_enqueued("test.noop")


# --- running one job ------------------------------------------------------------------------


def test_run_job__runs_the_handler_and_completes_the_job_even_before_its_time():
    job = jobs.enqueue("test.record", {}, run_at=timezone.now() + timedelta(hours=1))

    done = testing.run_job(job)

    assert (done.status, done.attempts, done.progress, done.locked_by) == (
        Status.SUCCEEDED,
        1,
        100,
        testing.WORKER,
    )
    assert list(Execution.objects.filter(job_id=job.pk).values_list("attempt", flat=True)) == [1]


def test_run_job__a_failed_try_is_retried_by_the_types_backoff_with_its_error_recorded():
    job = jobs.enqueue("test.fail", {})
    before = timezone.now()

    done = testing.run_job(job)

    assert (done.status, done.attempts, done.error) == (Status.QUEUED, 1, "RuntimeError: boom")
    assert done.run_at >= before + timedelta(seconds=30)  # test.fail's first backoff
    [attempt] = JobAttempt.objects.filter(job=job)
    assert (attempt.error_class, attempt.outcome, attempt.worker) == (
        "RuntimeError",
        "queued",
        testing.WORKER,
    )
    assert 'raise RuntimeError("boom")' in attempt.traceback
    assert testing.run_job(done).attempts == 2  # run again at once, backoff or not


def test_run_job__a_permanent_error_fails_the_job_at_once():
    done = testing.run_job(jobs.enqueue("test.fail", {"permanent": True}))
    assert (done.status, done.attempts, done.error) == (
        Status.FAILED,
        1,
        "jobs.errors.PermanentError: This input can never work.",
    )


def test_run_job__retry_later_queues_the_job_for_its_time_without_using_an_attempt(tmp_path):
    job = jobs.enqueue("test.rate_limited", {"path": str(tmp_path / "log"), "waits": 1, "delay": 600})

    done = testing.run_job(job)

    assert (done.status, done.attempts, done.message) == (Status.QUEUED, 0, "Rate limited (1/1).")
    assert done.run_at > timezone.now() + timedelta(seconds=590)
    assert testing.run_job(done).status == Status.SUCCEEDED


def test_run_job__an_atomic_job_commits_its_writes_with_its_completion_or_rolls_both_back():
    good = testing.run_job(jobs.enqueue("test.write_atomic", {}))
    bad = testing.run_job(jobs.enqueue("test.write_atomic", {"fail": "boom"}))

    assert (good.status, bad.status, bad.error) == (Status.SUCCEEDED, Status.QUEUED, "RuntimeError: boom")
    assert list(Execution.objects.values_list("job_id", flat=True)) == [
        good.pk
    ]  # the failed try's row is gone


def test_run_job__writes_the_handlers_last_progress_report_apart_from_its_transaction():
    plain = testing.run_job(jobs.enqueue("test.write", {"progress": True, "fail": "boom"}))
    atomic = testing.run_job(jobs.enqueue("test.write_atomic", {"progress": True, "fail": "boom"}))

    assert [(job.status, job.progress, job.progress_message) for job in (plain, atomic)] == [
        (Status.QUEUED, 50, "row written")
    ] * 2
    # The atomic try's row rolled back with its failure; its report, written apart, stayed.
    assert list(Execution.objects.values_list("job_id", flat=True)) == [plain.pk]


def test_run_claimed__a_try_taken_back_and_finishing_late_is_refused_by_the_fence():
    job = jobs.enqueue("test.write_atomic", {})
    [first] = store.claim("lost", ["default"], 1)
    store.recover_worker("lost")
    testing.run_job(job)

    late = testing.run_claimed(first, "lost")

    assert (late.status, late.attempts, late.locked_by) == (Status.SUCCEEDED, 2, testing.WORKER)
    assert list(Execution.objects.values_list("attempt", flat=True)) == [2]


def test_run_job__refuses_a_job_that_is_not_queued():
    job = testing.run_job(jobs.enqueue("test.noop", {}))
    with pytest.raises(jobs.InvalidTransition, match=rf"Job #{job.pk} is not queued \(succeeded\)"):
        testing.run_job(job)


def test_perform__enqueues_and_runs_a_job_or_a_django_task():
    assert testing.perform("test.noop").status == Status.SUCCEEDED
    done = testing.perform(test_tasks.add, {"a": 2, "b": 3})
    assert (done.status, done.result) == (Status.SUCCEEDED, 5)
    assert test_tasks.add.get_result(str(done.pk)).return_value == 5


# --- draining a queue -----------------------------------------------------------------------


def test_drain__runs_the_due_jobs_of_a_queue_and_leaves_the_rest():
    for _ in range(3):
        jobs.enqueue("test.record", {})
    jobs.enqueue("test.fail", {})
    later = jobs.enqueue("test.noop", {}, run_at=timezone.now() + timedelta(hours=1))
    other = jobs.enqueue("test.ai", {})

    drained = testing.drain("default")

    assert (len(drained.succeeded), len(drained.retried), len(drained.failed), drained.ran) == (3, 1, 0, 4)
    assert Execution.objects.count() == 3
    assert {job.status for job in Job.objects.filter(pk__in=[later.pk, other.pk])} == {Status.QUEUED}
    assert testing.drain().succeeded == [Job.objects.get(pk=other.pk)]  # every queue; the retry is not due


def test_drain__stops_at_its_limit_and_leaves_the_next_job_queued():
    for _ in range(3):
        jobs.enqueue("test.noop", {})
    with pytest.raises(AssertionError, match="drain ran 2 jobs and more are due"):
        testing.drain("default", limit=2)
    left = Job.objects.get(status=Status.QUEUED)
    assert left.attempts == 0


# --- the pytest fixture and the TestCase mixin ----------------------------------------------


def test_fixture__hands_the_helpers_to_a_test(jobs_tester):
    jobs.enqueue("test.keyed", {"thing_id": 9})
    assert jobs_tester.payloads("test.keyed") == [{"thing_id": 9}]
    assert jobs_tester.drain().succeeded[0].payload == {"thing_id": 9}
    jobs_tester.assert_not_enqueued("test.keyed")


class MixinTests(testing.JobsTestMixin, TestCase):
    def test_mixin__asserts_runs_and_drains(self):
        job = test_jobs.keyed.enqueue(thing_id=4)
        self.assertJobEnqueued(test_jobs.keyed, payload={"thing_id": 4}, count=1)
        self.assertEqual(self.run_job(job).status, Status.SUCCEEDED)
        self.assertJobNotEnqueued("test.keyed")
        test_jobs.keyed.enqueue(thing_id=5)
        self.assertEqual(self.drain_jobs("default").ran, 1)
        self.assertEqual(self.perform_job("test.noop").status, Status.SUCCEEDED)
