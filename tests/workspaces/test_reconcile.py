"""The reconcile timer: a sync for each active connection not synced for 15 minutes, never two."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from jobs.models import Job, Status
from jobs.timers import run_timer, timers
from tests.support.concurrency import run_at_once
from workspaces.services.reconcile import enqueue_due_syncs
from workspaces.services.work_items import request_sync

from .factories import WorkConnectionFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _synced_connection_ids() -> list[int]:
    return sorted(
        Job.objects.filter(type="workmanagement.sync").values_list("payload__connection_id", flat=True)
    )


def test_reconcile__queues_stale_and_never_synced_active_connections_only():
    stale = WorkConnectionFactory(stale=True)
    never = WorkConnectionFactory()
    WorkConnectionFactory(fresh=True)
    WorkConnectionFactory(stale=True, inactive=True)

    assert enqueue_due_syncs() == 2

    assert _synced_connection_ids() == sorted([stale.pk, never.pk])
    job = Job.objects.get(payload__connection_id=stale.pk)
    assert (job.queue, job.dedupe_key, job.status) == ("default", f"connection:{stale.pk}", Status.QUEUED)


def test_reconcile__skips_a_connection_whose_sync_is_already_queued_or_running():
    queued = WorkConnectionFactory(stale=True)
    running = WorkConnectionFactory(stale=True)
    request_sync(queued)
    Job.objects.filter(pk=request_sync(running).pk).update(status=Status.RUNNING, locked_by="w1")

    assert enqueue_due_syncs() == 0
    assert Job.objects.filter(type="workmanagement.sync").count() == 2


def test_reconcile__queues_again_once_the_previous_sync_finished():
    conn = WorkConnectionFactory(stale=True)
    Job.objects.filter(pk=request_sync(conn).pk).update(status=Status.FAILED)
    assert enqueue_due_syncs() == 1
    assert Job.objects.filter(type="workmanagement.sync", status=Status.QUEUED).count() == 1


def test_reconcile_command__run_twice_queues_one_job_per_connection():
    conns = [WorkConnectionFactory(stale=True) for _ in range(3)]
    first, second = StringIO(), StringIO()

    call_command("reconcile", stdout=first)
    call_command("reconcile", "--force", stdout=second)  # the same slot again, as a slot of its own

    assert "3 syncs queued" in first.getvalue()
    assert "0 syncs queued" in second.getvalue()
    assert _synced_connection_ids() == sorted(c.pk for c in conns)


def test_reconcile__two_runs_at_once_queue_one_job_per_connection():
    conns = [WorkConnectionFactory(stale=True) for _ in range(20)]
    added = run_at_once(enqueue_due_syncs, enqueue_due_syncs)

    assert sum(added) == 20
    assert _synced_connection_ids() == sorted(c.pk for c in conns)


def test_reconcile_timer__is_a_15_minute_timer():
    (step,) = timers()["reconcile"]
    assert step.every == 900
    assert list(run_timer("reconcile").values()) == ["0 syncs queued"]
