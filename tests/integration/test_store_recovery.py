"""Recovery on real PostgreSQL: fencing of late results, the reaper, a worker's own
leftovers at start-up, the worker registry, releasing at shutdown, and pruning."""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from jobs import store, workers
from jobs.errors import InvalidTransition
from jobs.models import Job, JobAttempt, Status, Worker
from tests.support.job_states import claim_one, make_due, make_silent

pytestmark = pytest.mark.django_db(transaction=True)

BOOM = store.Failure("RuntimeError", "boom", "Traceback ...")


def _reclaimed_by_another_worker(job: Job) -> tuple[store.ClaimedJob, store.ClaimedJob]:
    """w1 claims, goes silent, the reaper takes the job back, w2 claims it (after its backoff)."""
    stale = claim_one("w1")
    make_silent(job.pk, 3600)
    assert store.reap() == store.ReapResult(requeued=1)
    make_due(job.pk)
    fresh = claim_one("w2")
    assert (fresh.id, fresh.attempt) == (job.pk, 2)
    return stale, fresh


# --- fencing --------------------------------------------------------------------------------


def test_complete__late_result_of_a_reaped_job_is_dropped(caplog):
    job = store.enqueue("test.noop", {})
    stale, fresh = _reclaimed_by_another_worker(job)

    with caplog.at_level(logging.WARNING, logger="jobs.store"):
        assert store.complete("w1", [(stale.id, stale.attempt)]) == []
    assert "Dropped late results" in caplog.text
    job.refresh_from_db()
    assert (job.status, job.locked_by, job.attempts) == (Status.RUNNING, "w2", 2)

    assert store.complete("w2", [(fresh.id, fresh.attempt)]) == [job.pk]
    # Applying the same result again changes nothing.
    assert store.complete("w2", [(fresh.id, fresh.attempt)]) == []
    job.refresh_from_db()
    assert job.status == Status.SUCCEEDED


def test_fail__late_failure_of_a_reaped_job_is_dropped():
    job = store.enqueue("test.noop", {})
    stale, _ = _reclaimed_by_another_worker(job)
    attempts_before = JobAttempt.objects.count()

    assert store.fail("w1", stale.id, stale.attempt, BOOM) is None
    job.refresh_from_db()
    assert (job.status, job.locked_by, job.error) == (Status.RUNNING, "w2", "")
    assert JobAttempt.objects.count() == attempts_before


def test_complete__stale_attempt_of_the_same_worker_is_dropped():
    job = store.enqueue("test.noop", {})
    first = claim_one("w1")
    make_silent(job.pk, 3600)
    store.reap()
    make_due(job.pk)
    second = claim_one("w1")
    assert store.complete("w1", [(first.id, first.attempt)]) == []
    assert store.set_progress("w1", first.id, first.attempt, 50, "late") is False
    assert store.release("w1", [(first.id, first.attempt)]) == 0
    job.refresh_from_db()
    assert (job.status, job.attempts, job.progress) == (Status.RUNNING, 2, None)
    assert store.complete("w1", [(second.id, second.attempt)]) == [job.pk]


def test_complete__batch_applies_only_the_fenced_rows():
    jobs = [store.enqueue("test.noop", {"n": n}) for n in range(3)]
    claimed = store.claim("w1", ["default"], 3)
    make_silent(jobs[1].pk, 3600)
    store.reap()
    applied = store.complete("w1", [(c.id, c.attempt) for c in claimed])
    assert sorted(applied) == [jobs[0].pk, jobs[2].pk]
    assert Job.objects.get(pk=jobs[1].pk).status == Status.QUEUED


@pytest.mark.postgres_only("prepared statements' parameter types")
def test_complete__prepared_with_its_ids_and_attempts_typed_as_the_statement_reads_them():
    """The acknowledgement looks up each row's attempt by the row's place in the id array:
    sent as psycopg adapts a list of small numbers (smallint[]), that array was cast to
    bigint[] again for every row. Its parameters are prepared as the arrays it reads."""
    jobs = [store.enqueue("test.noop", {"n": n}) for n in range(3)]
    claimed = store.claim("w1", ["default"], 3)
    assert sorted(store.complete("w1", [(c.id, c.attempt) for c in claimed])) == [job.pk for job in jobs]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT parameter_types::text[] FROM pg_prepared_statements "
            "WHERE statement LIKE %s AND statement NOT LIKE %s AND statement NOT LIKE %s",
            ["%SET status = 'succeeded'%", "%result = %", "%pg_prepared_statements%"],
        )
        prepared = [types for (types,) in cursor.fetchall()]  # this session's (a test's before too)
    assert prepared and all(types == ["bigint[]", "integer[]", "text"] for types in prepared), prepared


# --- the reaper -----------------------------------------------------------------------------


@override_settings(JOBS_REAP_AFTER=300, JOBS_WORKER_LEASE=60)
def test_reap__requeues_silent_jobs_and_leaves_live_ones():
    silent = store.enqueue("test.noop", {"n": "silent"})
    live = store.enqueue("test.noop", {"n": "live"})
    store.claim("w1", ["default"], 2)
    make_silent(silent.pk, 301)
    make_silent(live.pk, 299)

    assert store.reap() == store.ReapResult(requeued=1, failed=0)
    silent.refresh_from_db()
    live.refresh_from_db()
    assert (silent.status, silent.message, silent.locked_by) == (
        Status.QUEUED,
        "Requeued after a worker restart.",
        None,
    )
    assert silent.attempts == 1  # the lost try counts
    assert live.status == Status.RUNNING
    [lost] = JobAttempt.objects.filter(job=silent)
    assert (lost.error_class, lost.worker, lost.outcome) == ("WorkerLost", "w1", "queued")


def test_reap__a_dead_workers_job_waits_out_its_types_backoff_before_it_returns():
    """A job that kills its worker would otherwise go straight to the next worker, and the
    next, through the whole fleet."""
    job = store.enqueue("test.fail", {})  # backoff 30 s, 120 s, 480 s
    claim_one("w1", "test.fail")
    make_silent(job.pk, 3600)

    before = timezone.now()
    assert store.reap() == store.ReapResult(requeued=1)
    after = timezone.now()

    job.refresh_from_db()
    assert job.status == Status.QUEUED
    assert before + timedelta(seconds=30) <= job.run_at <= after + timedelta(seconds=30)
    assert store.claim("w2", ["default"], 1) == []  # not before its backoff
    make_due(job.pk)
    claim_one("w2", "test.fail")
    make_silent(job.pk, 3600)
    before = timezone.now()
    store.reap()
    job.refresh_from_db()
    assert job.run_at >= before + timedelta(seconds=120)  # the second step of the schedule


@override_settings(JOBS_WORKER_LEASE=60)
def test_register_worker__a_restarted_workers_leftover_job_waits_out_its_backoff():
    workers.register("w1", "host", 100, ["default:1"])
    job = store.enqueue("test.fail", {})
    claim_one("w1", "test.fail")
    Worker.objects.filter(name="w1").update(last_seen=timezone.now() - timedelta(hours=1))

    before = timezone.now()
    workers.register("w1", "host", 101, ["default:1"])

    job.refresh_from_db()
    assert (job.status, job.attempts) == (Status.QUEUED, 1)
    assert job.run_at >= before + timedelta(seconds=30)


def test_reap__fails_a_silent_job_whose_budget_is_spent():
    job = store.enqueue("test.fail", {})  # 3 attempts
    for _ in range(3):
        make_due(job.pk)  # its backoff has passed
        claim_one("w1", "test.fail")
        make_silent(job.pk, 3600)
        store.reap()
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Status.FAILED, 3)
    assert job.message == job.error == "Worker died and the retry budget is exhausted."
    assert job.finished_at is not None
    assert list(JobAttempt.objects.filter(job=job).values_list("outcome", flat=True)) == [
        "queued",
        "queued",
        "failed",
    ]


@override_settings(JOBS_REAP_AFTER=300, JOBS_WORKER_LEASE=60)
def test_reap__takes_back_jobs_of_a_worker_past_its_lease():
    workers.register("dead", "host-a", 1, ["default:2"])
    workers.register("alive", "host-b", 2, ["default:2"])
    dead_job = store.enqueue("test.noop", {"n": 1})
    alive_job = store.enqueue("test.noop", {"n": 2})
    claim_one("dead")
    claim_one("alive")
    Worker.objects.filter(name="dead").update(last_seen=timezone.now() - timedelta(seconds=61))

    assert store.reap() == store.ReapResult(requeued=1)
    assert Job.objects.get(pk=dead_job.pk).status == Status.QUEUED
    assert Job.objects.get(pk=alive_job.pk).status == Status.RUNNING


def test_heartbeat__keeps_a_workers_jobs_and_row_alive():
    workers.register("w1", "host", 1, ["default:1"])
    job = store.enqueue("test.noop", {})
    claim_one("w1")
    make_silent(job.pk, 3600)
    Worker.objects.filter(name="w1").update(last_seen=timezone.now() - timedelta(hours=1))
    assert store.heartbeat("w1") == 1
    assert store.reap() == store.ReapResult()
    assert Job.objects.get(pk=job.pk).status == Status.RUNNING
    assert Worker.objects.get(name="w1").last_seen > timezone.now() - timedelta(seconds=5)


# --- the worker registry --------------------------------------------------------------------


@override_settings(JOBS_WORKER_LEASE=60)
def test_register_worker__requeues_its_own_leftover_running_jobs():
    workers.register("w1", "host", 100, ["default:1"])
    workers.register("w2", "host", 200, ["default:1"])
    own = store.enqueue("test.noop", {"n": "own"})
    others = store.enqueue("test.noop", {"n": "others"})
    claim_one("w1")
    claim_one("w2")
    # w1 died (its lease ran out) and restarts under its name with a new pid: the job it
    # had cannot be running any more.
    Worker.objects.filter(name="w1").update(last_seen=timezone.now() - timedelta(hours=1))
    assert workers.register("w1", "host", 101, ["default:1"]) == store.ReapResult(requeued=1)
    own.refresh_from_db()
    assert (own.status, own.message, own.locked_by) == (
        Status.QUEUED,
        "Requeued after a worker restart.",
        None,
    )
    assert Job.objects.get(pk=others.pk).status == Status.RUNNING  # a live worker's job
    assert Worker.objects.get(name="w1").pid == 101


def test_register_worker__refuses_a_name_a_live_worker_uses():
    workers.register("w1", "host-a", 100, ["default:1"])
    with pytest.raises(
        InvalidTransition, match=r"A live worker already runs under the name 'w1' \(pid 100 on host-a\)"
    ):
        workers.register("w1", "host-b", 200, ["default:1"])
    assert Worker.objects.get(name="w1").host == "host-a"


@override_settings(JOBS_WORKER_LEASE=60)
def test_register_worker__takes_over_the_name_of_a_stopped_or_dead_worker():
    workers.register("w1", "host-a", 100, ["default:1"])
    workers.unregister("w1")
    workers.register("w1", "host-b", 200, ["default:1"])
    Worker.objects.filter(name="w1").update(last_seen=timezone.now() - timedelta(seconds=61))
    workers.register("w1", "host-c", 300, ["default:1"])
    worker = Worker.objects.get(name="w1")
    assert (worker.host, worker.pid, worker.stopped_at) == ("host-c", 300, None)


# --- release at shutdown --------------------------------------------------------------------


def test_release__requeues_at_once_without_using_an_attempt():
    job = store.enqueue("test.noop", {})
    claimed = claim_one("w1")
    assert store.release("w1", [(claimed.id, claimed.attempt)], store.REQUEUED_AT_SHUTDOWN) == 1
    job.refresh_from_db()
    assert (job.status, job.attempts, job.locked_by) == (Status.QUEUED, 0, None)
    assert job.message == "Stopped at worker shutdown and requeued."
    assert not JobAttempt.objects.exists()
    assert claim_one("w2").attempt == 1


# --- prune ----------------------------------------------------------------------------------


def test_prune__deletes_only_old_finished_jobs_in_batches():
    old = timezone.now() - timedelta(days=30)
    recent = timezone.now() - timedelta(days=1)
    finished = []
    for status, count in ((Status.SUCCEEDED, 5), (Status.CANCELLED, 4)):
        for _ in range(count):
            finished.append(store.enqueue("test.noop", {}).pk)
            Job.objects.filter(pk=finished[-1]).update(status=status, finished_at=old)
    dismissed = store.enqueue("test.noop", {})
    claimed = claim_one("w1")
    store.fail("w1", claimed.id, claimed.attempt, store.Failure("E", "x", retryable=False))
    store.dismiss(dismissed.pk)
    Job.objects.filter(pk=dismissed.pk).update(finished_at=old, dismissed_at=old)
    kept_recent = store.enqueue("test.noop", {})
    Job.objects.filter(pk=kept_recent.pk).update(status=Status.SUCCEEDED, finished_at=recent)
    kept_queued = store.enqueue("test.noop", {})
    Job.objects.filter(pk=kept_queued.pk).update(created_at=old, run_at=old)

    with CaptureQueriesContext(connection) as queries:
        assert store.prune(timedelta(days=14), batch_size=4) == 10
    statements = [q["sql"] for q in queries]
    table = connection.ops.quote_name("jobs_job")
    deletes = [i for i, text in enumerate(statements) if text.startswith(f"DELETE FROM {table}")]
    # One short transaction per batch of at most four ids: 4 + 4 + 2.
    assert [len(re.search(r"IN \((.*)\)", statements[i]).group(1).split(",")) for i in deletes] == [4, 4, 2]
    assert all(statements[i - 1] == "BEGIN" and statements[i + 1] == "COMMIT" for i in deletes)
    assert set(Job.objects.values_list("pk", flat=True)) == {kept_recent.pk, kept_queued.pk}
    assert not JobAttempt.objects.exists()


def test_prune__keeps_failed_jobs_until_they_are_dismissed_then_for_the_retention():
    """ "After three failed tries it stays failed, in the queue's failed list": however old,
    until an operator retries or dismisses it."""
    years_ago = timezone.now() - timedelta(days=1000)
    failed = store.enqueue("test.fail", {})
    Job.objects.filter(pk=failed.pk).update(status=Status.FAILED, attempts=3, finished_at=years_ago)

    assert store.prune(timedelta(days=14)) == 0
    store.dismiss(failed.pk)
    assert store.prune(timedelta(days=14)) == 0  # dismissed just now: kept for the retention
    Job.objects.filter(pk=failed.pk).update(dismissed_at=timezone.now() - timedelta(days=15))
    assert store.prune(timedelta(days=14)) == 1


def test_dismiss__takes_a_failed_job_off_the_failed_list_and_retry_puts_it_back():
    job = store.enqueue("test.fail", {})
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, attempts=3, error="RuntimeError: boom")

    dismissed = store.dismiss(job.pk)

    job.refresh_from_db()
    assert dismissed.pk == job.pk
    assert (job.status, job.error, job.message) == (Status.FAILED, "RuntimeError: boom", store.DISMISSED)
    assert job.dismissed_at is not None
    assert not Job.objects.filter(status=Status.FAILED, dismissed_at=None).exists()
    with pytest.raises(InvalidTransition, match="already dismissed"):
        store.dismiss(job.pk)
    store.retry(job.pk)
    job.refresh_from_db()
    assert (job.status, job.dismissed_at) == (Status.QUEUED, None)


@pytest.mark.parametrize("status", [Status.QUEUED, Status.RUNNING, Status.SUCCEEDED, Status.CANCELLED])
def test_dismiss__refuses_anything_but_a_failed_job(status):
    job = store.enqueue("test.noop", {})
    Job.objects.filter(pk=job.pk).update(status=status)
    with pytest.raises(InvalidTransition, match="Only a failed job can be dismissed"):
        store.dismiss(job.pk)
    assert Job.objects.get(pk=job.pk).dismissed_at is None


@override_settings(JOBS_KEEP_FINISHED_DAYS=14, JOBS_PRUNE_BATCH=5000)
def test_prune__uses_the_retention_setting_and_drops_stopped_workers():
    job = store.enqueue("test.noop", {})
    Job.objects.filter(pk=job.pk).update(
        status=Status.SUCCEEDED, finished_at=timezone.now() - timedelta(days=15)
    )
    workers.register("gone", "host", 1, [])
    workers.unregister("gone")
    Worker.objects.filter(name="gone").update(stopped_at=timezone.now() - timedelta(days=15))
    workers.register("here", "host", 2, [])
    assert store.prune() == 1
    assert list(Worker.objects.values_list("name", flat=True)) == ["here"]
