"""MariaDB: the failed lists' indexes are led by ``failed`` (migration 0026), which is 1 only
while a job has failed, so that a job that succeeds moves none of their entries; the admin's
failed lists still read their rows through them."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from jobs import store
from jobs.bulk import Matching
from jobs.drivers import driver
from jobs.models import Job, Status
from tests.support.database import on_mariadb

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


def _keys(plan: object) -> list[str]:
    """The indexes a JSON plan reads, wherever it nests them."""
    if isinstance(plan, dict):
        own = [plan["key"]] if isinstance(plan.get("key"), str) else []
        return own + [key for value in plan.values() for key in _keys(value)]
    if isinstance(plan, list):
        return [key for value in plan for key in _keys(value)]
    return []


def _plan(rows) -> str:
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE jobs_job")
        cursor.fetchall()
        cursor.execute("EXPLAIN FORMAT=JSON " + sql, params)
        return cursor.fetchone()[0]


def test_the_failed_lists_read_their_indexes_in_order():
    """With most rows succeeded, the failed list, a queue's failed list and the bulk page's
    selection read the failed lists' indexes newest first (no sort)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,"
            " created_at, progress_message, error, message, earlier_attempts, due_later)"
            " SELECT 'test.noop', IF(seq % 3 = 0, 'mail', 'default'), 0,"
            " CASE WHEN seq % 100 = 0 THEN 'cancelled' WHEN seq % 20 = 0 THEN 'failed' ELSE 'succeeded' END,"
            " '{}', NOW(6), 1, 3, NOW(6), '', '', '', 0, 0 FROM seq_1_to_5000"
        )
    failed = Job.objects.filter(driver().failed())
    reads = {
        "failed list": (failed.filter(dismissed_at__isnull=True).order_by("-id")[:100], "jobs_failed_list"),
        "mail's failed list": (failed.filter(queue="mail").order_by("-id")[:100], "jobs_failed_queue"),
        "bulk selection": (Matching(queue="mail").jobs().order_by("-id")[:100], "jobs_failed_queue"),
    }
    for name, (rows, index) in reads.items():
        text = _plan(rows)
        assert _keys(json.loads(text)) == [index], (name, text)
        assert "filesort" not in text, (name, text)
        assert rows.count() > 0, name
