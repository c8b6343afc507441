"""MariaDB: the counts of due jobs (the depth samples a worker takes once a minute, the
metrics, flow control's page) read the queued jobs through the indexes that hold only them
(``Driver.due``: the claim indexes, and ``jobs_due_later`` for the jobs due later whose time
has come), so a million jobs due later cost them nothing; led by the status, each queue's
count read every queued row."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Count, Min
from django.utils import timezone

from jobs import rollup, store
from jobs.drivers import driver
from jobs.models import Job, QueueDepth
from tests.support.database import on_mariadb, plan_tables

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not on_mariadb(), reason="MariaDB's claim indexes, led by generated columns"),
]

QUEUED_INDEXES = {
    "jobs_claim",
    "jobs_claim_any",
    "jobs_claim_keyed",
    "jobs_claim_keyed_any",
    "jobs_due_later",
}


#: Jobs due later in the table: many, as where the counts matter. A test before this one
#: may leave entries in the claim indexes that purge has not removed yet (Django empties
#: the tables with DELETE), which the optimiser counts in its estimates; beside a small
#: table it may then prefer reading the whole table.
DUE_LATER = 50_000


def _due_later(count: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO jobs_job (type, queue, priority, status, payload, run_at, attempts, max_attempts,"
            " created_at, progress_message, error, message, earlier_attempts, due_later)"
            f" SELECT 'test.noop', 'default', -50, 'queued', '{{}}', NOW(6) + INTERVAL 1 DAY, 0, 3, NOW(6),"
            f" '', '', '', 0, 1 FROM seq_1_to_{int(count)}"
        )
        cursor.execute("ANALYZE TABLE jobs_job")
        cursor.fetchall()


def _keys(node: Any) -> set[str]:
    """Every index a plan's table reads (an index merge reads several)."""
    if isinstance(node, dict):
        found = {node["key"]} if isinstance(node.get("key"), str) else set()
        return found.union(*(_keys(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_keys(value) for value in node))
    return set()


def _plan(rows) -> dict[str, Any]:
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN FORMAT=JSON " + sql, params)
        (table,) = plan_tables(json.loads(cursor.fetchone()[0]))
    return table


def test_the_due_counts_read_the_claim_indexes_not_the_jobs_due_later():
    _due_later(DUE_LATER)
    plain = [store.enqueue("test.noop", {}).pk for _ in range(3)]
    keyed = store.enqueue("test.flow_key", {"account": "a"}).pk
    unpromoted = store.enqueue("test.noop", {}, run_at=timezone.now() + timedelta(hours=1)).pk
    Job.objects.filter(pk=unpromoted).update(run_at=timezone.now())  # its time came; not promoted yet
    now = timezone.now()
    due = Job.objects.filter(driver().due(now))
    reads = {
        "depth sample": due.filter(queue="default")[: rollup.DEPTH_CAP],
        "metrics": due.values("queue").annotate(count=Count("id"), oldest=Min("run_at")).order_by(),
    }
    for name, rows in reads.items():
        table = _plan(rows)
        assert table["access_type"] != "ALL", (name, table)
        assert _keys(table) and _keys(table) <= QUEUED_INDEXES, (name, table)
        # The due jobs' entries (and leftovers a test before may have left), not those due later.
        assert table["rows"] < DUE_LATER // 2, (name, table)
    assert sorted(due.values_list("pk", flat=True)) == sorted([*plain, keyed, unpromoted])

    assert rollup.sample_depth(now)
    # Three plain, one keyed, the one not promoted yet; none of those due later.
    assert QueueDepth.objects.get(queue="default").due == 5
