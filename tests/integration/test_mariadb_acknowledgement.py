"""MariaDB: the acknowledgement of jobs its worker claimed takes their times (due, started)
from what the claim kept and the statement's moment, without reading the rows back; when
the fence drops some, or the claim's times were not kept, it reads back the ones that
applied."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.drivers import mariadb
from jobs.drivers.mariadb import APPLIED_DONE, MariaDBDriver
from jobs.models import Job
from tests.support.database import on_mariadb

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not on_mariadb(), reason="MariaDB's acknowledgement without UPDATE … RETURNING"),
]

READ_BACK = APPLIED_DONE.split("FROM")[0].strip()


def _queued(count: int) -> list[int]:
    Job.objects.bulk_create(Job(type="test.noop", queue="default", payload={}) for _ in range(count))
    return list(Job.objects.order_by("id").values_list("id", flat=True))


def _read_back(statements: CaptureQueriesContext) -> bool:
    return any(READ_BACK in query["sql"] for query in statements.captured_queries)


def test_every_job_applied__no_read_back():
    drv = MariaDBDriver()
    ids = _queued(3)
    assert [job.id for job in drv.claim("w1", ["default"], 3)] == ids
    with CaptureQueriesContext(connection) as statements:
        done = drv.complete_many("w1", [(job_id, 1) for job_id in ids], None)
    assert [job.id for job in done] == ids
    assert not _read_back(statements)


def test_a_fenced_job_or_a_claim_not_kept__the_applied_ones_read_back():
    drv = MariaDBDriver()
    ids = _queued(3)
    drv.claim("w1", ["default"], 3)
    with CaptureQueriesContext(connection) as statements:
        done = drv.complete_many("w1", [(ids[0], 1), (ids[1], 2)], None)  # the second's attempt is stale
    assert [job.id for job in done] == [ids[0]]
    assert _read_back(statements)

    another = MariaDBDriver()  # (a worker that did not claim them keeps nothing of them)
    with CaptureQueriesContext(connection) as statements:
        done = another.complete_many("w1", [(ids[2], 1)], None)
    assert [job.id for job in done] == [ids[2]]
    assert done[0].waited is not None and done[0].ran is not None
    assert _read_back(statements)


def test_the_claims_kept_are_bounded(monkeypatch):
    """A worker keeps the times of its newest ``CLAIMED_KEPT`` claimed jobs: a job claimed
    before those is read back."""
    monkeypatch.setattr(mariadb, "CLAIMED_KEPT", 2)
    drv = MariaDBDriver()
    ids = _queued(3)
    for _ in ids:
        drv.claim("w1", ["default"], 1)
    with CaptureQueriesContext(connection) as statements:
        drv.complete_many("w1", [(ids[1], 1), (ids[2], 1)], None)
    assert not _read_back(statements)
    with CaptureQueriesContext(connection) as statements:
        assert [job.id for job in drv.complete_many("w1", [(ids[0], 1)], None)] == [ids[0]]
    assert _read_back(statements)
