"""Which transitions queue a job for later (``Job.due_later``: out of the claims' range until
a worker promotes it) and which queue it for now. The flag is internal: such a job reads
queued everywhere, and a claim checks run_at whatever the flag says, so a wrong flag would
cost time (a claim reading past waiting jobs, or a due job waiting for a promotion), never
an early run. The drivers' side is in test_driver_conformance.py ("jobs due later")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import store
from jobs.models import Job, Status, Worker
from tests.support.job_states import claim_one

pytestmark = pytest.mark.django_db(transaction=True)


def _due_later(job_id: int) -> bool:
    return Job.objects.get(pk=job_id).due_later


def test_enqueue__for_later_waits_for_a_promotion_and_for_now_does_not():
    later = timezone.now() + timedelta(minutes=5)
    assert _due_later(store.enqueue("test.noop", {}, run_at=later).pk)
    assert _due_later(
        store.enqueue_task("test.noop", {}, queue="default", priority=0, max_attempts=1, run_at=later).pk
    )
    assert not _due_later(store.enqueue("test.noop", {}).pk)
    assert not _due_later(store.enqueue("test.noop", {}, run_at=timezone.now() - timedelta(seconds=1)).pk)
    store.enqueue_many("test.noop", [{}, {}], run_at=later)
    store.enqueue_many("test.noop", [{}])
    assert sorted(Job.objects.filter(payload={}).values_list("due_later", flat=True)) == [
        False,
        False,
        False,
        True,
        True,
        True,
        True,
    ]


def test_fail_reschedule_and_reap__queue_the_job_for_later_and_it_reads_queued():
    failed = store.enqueue("test.flaky", {"fail_times": 1}).pk
    claimed = claim_one("w1", "test.flaky")
    store.fail("w1", claimed.id, claimed.attempt, store.Failure("ConnectionError", "try 1"))

    postponed = store.enqueue("test.noop", {"n": 2}).pk
    claimed = claim_one("w1")
    store.reschedule("w1", claimed.id, claimed.attempt, timezone.now() + timedelta(minutes=1), "later")

    lost = store.enqueue("test.noop", {"n": 3}).pk
    claim_one("w2")
    Worker.objects.create(name="w2", host="h", pid=1, last_seen=timezone.now() - timedelta(hours=1))
    assert store.reap() == store.ReapResult(requeued=1)

    rows = Job.objects.filter(pk__in=[failed, postponed, lost])
    assert {(row.status, row.due_later) for row in rows} == {(Status.QUEUED, True)}
    assert store.claim("w3", ["default"], 10) == []


def test_release_and_retry__queue_the_job_for_now():
    released = store.enqueue("test.noop", {}).pk
    claimed = claim_one("w1")
    store.release("w1", [(claimed.id, claimed.attempt)])
    assert not _due_later(released)
    assert [job.id for job in store.claim("w1", ["default"], 1)] == [released]

    failed = store.enqueue("test.noop", {"n": 2}).pk
    Job.objects.filter(pk=failed).update(
        status=Status.FAILED, due_later=True, run_at=timezone.now() + timedelta(hours=1)
    )
    store.retry(failed)
    assert not _due_later(failed)
    assert [job.id for job in store.claim("w1", ["default"], 1)] == [failed]


def test_reschedule__to_a_moment_already_past_queues_it_for_now():
    job = store.enqueue("test.noop", {}).pk
    claimed = claim_one("w1")
    store.reschedule("w1", claimed.id, claimed.attempt, timezone.now() - timedelta(seconds=1), "now")
    assert not _due_later(job)
    assert [c.id for c in store.claim("w1", ["default"], 1)] == [job]
