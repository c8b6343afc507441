"""PostgreSQL's hot-path statements (``execute_prepared``) run on one cursor kept per
connection: it must follow the connection when Django replaces it, and the query log when a
test starts or stops capturing."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import jobs
from jobs import store
from tests.support.database import on_mariadb

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(on_mariadb(), reason="PostgreSQL's prepared statements"),
]


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_a_statement_after_the_connection_was_closed__runs_on_the_new_one():
    first = jobs.enqueue("test.noop", {"n": 1})
    old_session = _backend_pid()
    connection.close()
    second = jobs.enqueue("test.noop", {"n": 2})  # the kept cursor's connection is gone
    assert _backend_pid() != old_session
    claimed = store.claim("w1", ["default"], 5)
    assert sorted(job.id for job in claimed) == sorted([first.id, second.id])


def test_a_capture_begun_after_the_first_statement__sees_the_next_ones():
    jobs.enqueue("test.noop", {"n": 1})  # the cursor is made, not logging
    with CaptureQueriesContext(connection) as captured:
        jobs.enqueue("test.noop", {"n": 2})
        store.claim("w1", ["default"], 5)
    statements = [query["sql"] for query in captured.captured_queries]
    assert len(statements) == 2, statements
    assert "INSERT INTO jobs_job" in statements[0]
    assert "SKIP LOCKED" in statements[1]
    logged = len(connection.queries_log)
    jobs.enqueue("test.noop", {"n": 3})  # after the capture: not logged
    assert len(connection.queries_log) == logged
