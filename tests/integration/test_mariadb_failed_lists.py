"""MariaDB (migration 0026): the failed lists' indexes are led by ``failed``, 1 only while a
job has failed, so that a job that succeeds moves none of their entries, and one index led
by the status is left, ``jobs_running`` (status, id, locked_by). The admin's lists, the
reaper and the failed lists still read their rows through an index, in order."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from jobs import store
from jobs.bulk import Matching
from jobs.drivers import driver
from jobs.models import Job, Status
from tests.support.database import on_mariadb, plan_tables

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not on_mariadb(), reason="MariaDB's generated column that leads its failed lists' indexes"
    ),
]


def _failed(job_id: int) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT failed FROM jobs_job WHERE id = %s", [job_id])
        return cursor.fetchone()[0]


def test_failed__is_set_only_while_the_job_has_failed():
    job = store.enqueue("test.noop", {})
    assert _failed(job.pk) is None
    claimed = store.claim_job("w1", job.pk)
    assert claimed is not None
    assert _failed(job.pk) is None  # running
    assert store.complete("w1", [(claimed.id, claimed.attempt)]) == [job.pk]
    assert _failed(job.pk) is None  # succeeded: its claim and acknowledgement moved no entry
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED)
    assert _failed(job.pk) == 1
    Job.objects.filter(pk=job.pk).update(status=Status.CANCELLED)
    assert _failed(job.pk) is None


def _plan(rows) -> str:
    with transaction.atomic():  # (a locking read's SQL is only written inside one)
        sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE jobs_job")
        cursor.fetchall()
        cursor.execute("EXPLAIN FORMAT=JSON " + sql, params)
        return cursor.fetchone()[0]


def test_the_lists_read_their_indexes_in_order():
    """With most rows succeeded, the failed list, a queue's failed list and the bulk page's
    selection read the failed lists' indexes newest first, and a list of any other status
    and the reaper's locking read ``jobs_running``, in id order (no sort)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,"
            " created_at, progress_message, error, message, earlier_attempts, due_later, heartbeat_at)"
            " SELECT 'test.noop', IF(seq % 3 = 0, 'mail', 'default'), 0,"
            " CASE WHEN seq % 100 = 0 THEN 'cancelled' WHEN seq % 50 = 1 THEN 'running'"
            " WHEN seq % 20 = 0 THEN 'failed' ELSE 'succeeded' END,"
            " '{}', NOW(6), 1, 3, NOW(6), '', '', '', 0, 0, NOW(6) FROM seq_1_to_5000"
        )
    failed = Job.objects.filter(driver().failed())
    silent = Job.objects.filter(status=Status.RUNNING, heartbeat_at__lt=timezone.now() + timedelta(hours=1))
    reads = {
        "failed list": (failed.filter(dismissed_at__isnull=True).order_by("-id")[:100], FAILED_LED),
        "mail's failed list": (failed.filter(queue="mail").order_by("-id")[:100], {"jobs_failed_queue"}),
        "bulk selection": (Matching(queue="mail").jobs().order_by("-id")[:100], {"jobs_failed_queue"}),
        "cancelled": (Job.objects.filter(status=Status.CANCELLED).order_by("-id")[:100], {"jobs_running"}),
        "reaper": (silent.select_for_update(skip_locked=True).order_by("id")[:10], {"jobs_running"}),
    }
    for name, (rows, indexes) in reads.items():
        text = _plan(rows)
        (index,) = [table["key"] for table in plan_tables(json.loads(text))]
        assert index in indexes, (name, text)
        assert "filesort" not in text, (name, text)


#: The indexes led by ``failed``.
FAILED_LED = {"jobs_rare_status", "jobs_failed_list", "jobs_failed_queue"}
