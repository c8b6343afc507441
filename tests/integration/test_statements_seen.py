"""Every statement of the engine goes through Django's cursor wrapper: the connection's
execute wrappers, ``CaptureQueriesContext`` and ``assertNumQueries`` see an enqueue, a
claim, an acknowledgement and a result read, PostgreSQL's prepared statements included."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.tasks import default_task_backend
from django.test.utils import CaptureQueriesContext

import jobs
from jobs import store
from tests.support.database import on_mariadb
from tests.tasks_backend import tasks

pytestmark = pytest.mark.django_db


class Seen:
    """An execute wrapper that records every statement it lets through."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        self.statements.append(sql)
        return execute(sql, params, many, context)


def _prepared(fragment: str) -> int:
    """How many of this session's prepared statements contain ``fragment`` (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", [f"%{fragment}%"]
        )
        return cursor.fetchone()[0]


def test_enqueue__goes_through_the_execute_wrappers():
    seen = Seen()
    with connection.execute_wrapper(seen):
        job = jobs.enqueue("test.noop", {"n": 1})
    inserts = [sql for sql in seen.statements if "INSERT INTO" in sql.upper() and "jobs_job" in sql]
    assert len(inserts) == 1, seen.statements
    assert job.pk is not None


def test_enqueue__is_one_query_to_assert_num_queries(django_assert_num_queries):
    with django_assert_num_queries(1) as captured:
        jobs.enqueue("test.noop", {"n": 2})
    assert "jobs_job" in captured.captured_queries[0]["sql"]


@pytest.mark.skipif(on_mariadb(), reason="PostgreSQL's prepared statements")
def test_enqueue__is_prepared_and_seen_on_postgresql(django_assert_num_queries):
    with django_assert_num_queries(1):
        jobs.enqueue("test.noop", {"n": 3})
    assert _prepared("INSERT INTO jobs_job") == 1


def test_claim_and_acknowledgement__are_captured():
    jobs.enqueue("test.noop", {"n": 1})
    with CaptureQueriesContext(connection) as captured:
        [claimed] = store.claim("w1", ["default"], 5)
        assert store.complete("w1", [(claimed.id, claimed.attempt)]) == [claimed.id]
    statements = [query["sql"] for query in captured.captured_queries]
    assert any("SKIP LOCKED" in sql for sql in statements), statements
    assert any("status = 'succeeded'" in sql for sql in statements), statements


def test_result_read__goes_through_the_execute_wrappers():
    enqueued = tasks.add.enqueue(2, 3)
    seen = Seen()
    with connection.execute_wrapper(seen):
        result = default_task_backend.get_result(enqueued.id)
    assert result.id == enqueued.id
    assert any("jobs_job" in sql for sql in seen.statements), seen.statements


@pytest.mark.skipif(on_mariadb(), reason="PostgreSQL reads a result in one prepared statement")
def test_result_read__is_one_prepared_query_on_postgresql(django_assert_num_queries):
    enqueued = tasks.add.enqueue(2, 3)
    with django_assert_num_queries(1):
        default_task_backend.get_result(enqueued.id)
    assert _prepared("FROM jobs_job AS j") == 1
