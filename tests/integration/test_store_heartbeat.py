"""Heartbeats name the jobs a worker holds, so a job it has forgotten can be reaped."""

from __future__ import annotations

import pytest

from jobs import store, workers
from jobs.models import Job, Status
from tests.support.job_states import claim_one, make_silent

pytestmark = pytest.mark.django_db


def test_heartbeat__keeps_alive_only_the_jobs_the_worker_names():
    workers.register("w1", "host", 1, ["default:2"])
    held = store.enqueue("test.noop", {})
    forgotten = store.enqueue("test.noop", {})
    claim_one("w1")
    claim_one("w1")
    make_silent(held.pk, 3600)
    make_silent(forgotten.pk, 3600)

    # The worker lost track of ``forgotten`` (e.g. its acknowledgement was lost in a
    # database crash): it no longer names it, so it stays silent and comes back.
    assert store.heartbeat("w1", [held.pk]) == 1
    assert store.reap() == store.ReapResult(requeued=1)
    assert Job.objects.get(pk=held.pk).status == Status.RUNNING
    forgotten.refresh_from_db()
    assert forgotten.status == Status.QUEUED
    assert forgotten.message == store.REQUEUED_AFTER_RESTART
