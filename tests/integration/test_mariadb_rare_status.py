"""MariaDB: the failed lists' and the rare statuses' indexes are led by ``rare_status``
(migration 0026), which holds the status only while it is failed or cancelled, so that a
job that succeeds moves none of their entries; the admin's and the metrics' reads of those
statuses still find their rows through them."""

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
        not on_mariadb(), reason="MariaDB's generated column that leads its rare statuses' indexes"
    ),
]


def _rare_status(job_id: int) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT rare_status FROM jobs_job WHERE id = %s", [job_id])
        return cursor.fetchone()[0]


def test_rare_status__holds_the_status_only_while_it_is_failed_or_cancelled():
    job = store.enqueue("test.noop", {})
    assert _rare_status(job.pk) is None
    claimed = store.claim_job("w1", job.pk)
    assert claimed is not None
    assert _rare_status(job.pk) is None  # running
    assert store.complete("w1", [(claimed.id, claimed.attempt)]) == [job.pk]
    assert _rare_status(job.pk) is None  # succeeded: its claim and acknowledgement moved none of them
    for status in (Status.FAILED, Status.CANCELLED):
        Job.objects.filter(pk=job.pk).update(status=status)
        assert _rare_status(job.pk) == status


def _index_read(rows) -> str:
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE jobs_job")
        cursor.fetchall()
        cursor.execute("EXPLAIN FORMAT=JSON " + sql, params)
        text = cursor.fetchone()[0]
    keys = _keys(json.loads(text))
    assert len(keys) == 1, text
    return keys[0]


def _keys(plan: object) -> list[str]:
    """The indexes a JSON plan reads, wherever it nests them."""
    if isinstance(plan, dict):
        own = [plan["key"]] if isinstance(plan.get("key"), str) else []
        return own + [key for value in plan.values() for key in _keys(value)]
    if isinstance(plan, list):
        return [key for value in plan for key in _keys(value)]
    return []


def test_the_failed_lists_read_the_indexes_led_by_rare_status():
    """With most rows succeeded, the failed list, a queue's failed list, the bulk page's
    selection and the cancelled jobs are read from an index led by ``rare_status``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,"
            " created_at, progress_message, error, message, earlier_attempts, due_later)"
            " SELECT 'test.noop', IF(seq % 3 = 0, 'mail', 'default'), 0,"
            " CASE WHEN seq % 100 = 0 THEN 'cancelled' WHEN seq % 20 = 0 THEN 'failed' ELSE 'succeeded' END,"
            " '{}', NOW(6), 1, 3, NOW(6), '', '', '', 0, 0 FROM seq_1_to_5000"
        )
    failed = Job.objects.filter(driver().of_status(Status.FAILED))
    reads = {
        "failed list": failed.filter(dismissed_at__isnull=True).order_by("-id")[:100],
        "mail's failed list": failed.filter(queue="mail").order_by("-id")[:100],
        "bulk selection": Matching(queue="mail").jobs()[:100],
        "cancelled": Job.objects.filter(driver().of_status(Status.CANCELLED)).order_by("-id")[:100],
    }
    rare_indexes = {"jobs_rare_status", "jobs_failed_list", "jobs_failed_queue"}
    for name, rows in reads.items():
        assert _index_read(rows) in rare_indexes, name
        assert rows.count() > 0, name
